#include "threads/thread_plan.h"

#include <ATen/Context.h>
#include <ATen/Parallel.h>

#include <cstdlib>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace loom::threads {
namespace {

// A positive integer variable of `env`, or nullopt.
std::optional<int> PositiveInt(const std::map<std::string, std::string>& env,
                               const std::string& name) {
  auto it = env.find(name);
  int value = 0;
  if (it == env.end() || !absl::SimpleAtoi(it->second, &value) || value < 1) return std::nullopt;
  return value;
}

// The first of `in`'s BLAS variables the user set, or nullopt.
std::optional<std::string> UserBlasVariable(const ThreadInputs& in) {
  for (const std::string& name : in.blas_env_vars) {
    if (PositiveInt(in.env, name)) return name;
  }
  return std::nullopt;
}

// The intra-op count when the user did not set OMP_NUM_THREADS (`why` gets the reason when a
// user variable decided it).
int DefaultIntraOp(const ThreadInputs& in, int budget, std::vector<std::string>& why) {
  if (!in.matmuls_in_blas) return budget;
  if (!in.blas_on_intra_op_threads) return 1;  // the BLAS pool takes the cores
  // LibTorch's own MKL reads MKL_NUM_THREADS as its intra-op default, as Python torch does.
  if (std::optional<std::string> var = UserBlasVariable(in)) {
    why.push_back(absl::StrCat(*var, "=", in.env.at(*var), " (yours)"));
    return *PositiveInt(in.env, *var);
  }
  return budget;
}

std::string MatmulReason(const ThreadInputs& in) {
  if (!in.matmuls_in_blas) return "matmuls run in oneDNN or on the GPU";
  if (in.blas_on_intra_op_threads) {
    return absl::StrCat("fp32 matmuls run in ", in.blas_name, " on the intra-op threads");
  }
  return absl::StrCat("fp32 matmuls run in ", in.blas_name);
}

}  // namespace

ThreadPlan DecideThreads(const ThreadInputs& in) {
  ThreadPlan plan;
  plan.blas_name = in.blas_name;
  plan.blas_on_intra_op_threads = in.blas_on_intra_op_threads;
  plan.dataloader_workers = in.dataloader_workers;
  const int world = std::max(1, in.local_world_size);
  const std::optional<int> omp = PositiveInt(in.env, "OMP_NUM_THREADS");
  const bool omp_from_launcher = omp.has_value() && in.env.count(kThreadsFromLauncher) > 0;
  int budget = std::max(1, in.topology.physical_cores / world);
  std::vector<std::string> why = {in.topology.Describe(),
                                  absl::StrCat(world, world == 1 ? " process" : " processes",
                                               " per node")};
  if (omp_from_launcher) {
    budget = *omp;
    why.push_back(absl::StrCat("OMP_NUM_THREADS=", *omp, " from the launcher"));
  }
  if (in.dataloader_workers > 0) {
    budget = std::max(1, budget - in.dataloader_workers);
    why.push_back(absl::StrCat(in.dataloader_workers, " data-loader worker thread(s)"));
  }
  if (omp.has_value() && !omp_from_launcher) {
    plan.intra_op = *omp;
    why.push_back(absl::StrCat("OMP_NUM_THREADS=", *omp, " (yours)"));
  } else {
    plan.intra_op = DefaultIntraOp(in, budget, why);
  }
  const std::optional<std::string> blas_var = UserBlasVariable(in);
  if (in.blas_name == "none" || in.blas_on_intra_op_threads) {
    plan.blas.reset();  // nothing to set apart from the intra-op threads
  } else if (blas_var) {
    plan.blas.reset();  // the library read the user's variable when it loaded
    why.push_back(absl::StrCat(*blas_var, "=", in.env.at(*blas_var), " (yours)"));
  } else {
    plan.blas = plan.intra_op == 1 ? budget : 1;
  }
  why.push_back(MatmulReason(in));
  plan.reason = absl::StrJoin(why, ", ");
  plan.heap = DecideHeap(in.env);
  return plan;
}

ThreadPlan ManualThreadPlan(int intra_op, int blas) {
  ThreadPlan plan;
  plan.intra_op = intra_op;
  plan.blas = blas;
  plan.reason = "set by hand";
  plan.blas_name = FindBlas().name;
  plan.heap = DecideHeap(HeapEnvironment());
  return plan;
}

std::string ThreadPlan::Describe() const {
  std::string blas_part = blas_name == "none"        ? "no BLAS thread control"
                          : blas_on_intra_op_threads ? absl::StrCat(blas_name, " on intra-op")
                          : blas.has_value()         ? absl::StrCat(blas_name, " ", *blas)
                                             : absl::StrCat(blas_name, " as set by its variable");
  return absl::StrCat("threads: intra-op ", intra_op, ", ", blas_part, ", inter-op ", inter_op,
                      ", data-loader workers ", dataloader_workers, " (", reason, "); ",
                      heap.Describe());
}

ThreadInputs CurrentThreadInputs(bool matmuls_in_blas, int dataloader_workers) {
  ThreadInputs in;
  in.topology = DetectCpuTopology();
  const BlasLibrary blas = FindBlas();
  in.blas_name = blas.name;
  in.blas_env_vars = blas.env_vars;
  if (!blas.found() && at::hasMKL()) {
    // The torch wheel's LibTorch: MKL linked into libtorch_cpu with its symbols hidden, sized
    // by at::set_num_threads (ATen's ParallelOpenMP.cpp calls mkl_set_num_threads).
    in.blas_name = "LibTorch's MKL";
    in.blas_env_vars = {"MKL_NUM_THREADS"};
    in.blas_on_intra_op_threads = true;
  }
  in.matmuls_in_blas = matmuls_in_blas;
  in.dataloader_workers = dataloader_workers;
  std::vector<std::string> names = {"OMP_NUM_THREADS", kThreadsFromLauncher};
  names.insert(names.end(), blas.env_vars.begin(), blas.env_vars.end());
  names.insert(names.end(), HeapEnvironmentVariables().begin(), HeapEnvironmentVariables().end());
  for (const std::string& name : names) {
    if (const char* v = std::getenv(name.c_str())) in.env[name] = v;
  }
  if (const char* w = std::getenv("LOCAL_WORLD_SIZE")) {
    int n = 1;
    if (absl::SimpleAtoi(w, &n) && n > 0) in.local_world_size = n;
  }
  return in;
}

absl::Status ApplyThreadPlan(const ThreadPlan& plan) {
  try {
    if (at::get_num_threads() != plan.intra_op) at::set_num_threads(plan.intra_op);
    if (plan.blas) FindBlas().SetThreads(*plan.blas);
    if (at::get_num_interop_threads() != plan.inter_op) {
      try {
        at::set_num_interop_threads(plan.inter_op);
      } catch (const std::exception&) {
        // The inter-op pool already started (someone used it): it keeps its size.
      }
    }
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("setting the thread counts: ", e.what()));
  }
  return ApplyHeapPlan(plan.heap);
}

}  // namespace loom::threads
