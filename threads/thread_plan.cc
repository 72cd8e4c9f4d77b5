#include "threads/thread_plan.h"

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

}  // namespace

ThreadPlan DecideThreads(const ThreadInputs& in) {
  ThreadPlan plan;
  plan.blas_name = in.blas_name;
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
    plan.intra_op = in.matmuls_in_blas ? 1 : budget;
  }
  std::optional<std::string> blas_var;
  for (const std::string& name : in.blas_env_vars) {
    if (PositiveInt(in.env, name)) {
      blas_var = name;
      break;
    }
  }
  if (in.blas_name == "none") {
    plan.blas.reset();
  } else if (blas_var) {
    plan.blas.reset();  // the library read the user's variable when it loaded
    why.push_back(absl::StrCat(*blas_var, "=", in.env.at(*blas_var), " (yours)"));
  } else {
    plan.blas = plan.intra_op == 1 ? budget : 1;
  }
  why.push_back(in.matmuls_in_blas ? absl::StrCat("fp32 matmuls run in ", in.blas_name)
                                   : "matmuls run in oneDNN or on the GPU");
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
  std::string blas_part = blas_name == "none" ? "no BLAS thread control"
                          : blas.has_value()   ? absl::StrCat(blas_name, " ", *blas)
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
