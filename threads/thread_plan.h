// Thread defaults that do not fight each other, decided once per process from what the
// machine is, and logged in one line.
//
// LibTorch runs elementwise ops and oneDNN's bf16 matmuls on its OpenMP pool (intra-op
// threads) but fp32 matmuls in the BLAS library's own pool (OpenBLAS on Debian). Both pools
// spin-wait between jobs, so giving both all the cores makes them steal each other's cores
// (measured: 2x slower training on 2 cores); LibTorch itself picks its intra-op count from
// cpuinfo's core count, which can differ from the cores the kernel shows.
//
// Rules (DecideThreads, a pure function of ThreadInputs):
//   budget   = max(1, physical cores of the affinity mask / LOCAL_WORLD_SIZE) — the cores of one
//              rank; with OMP_NUM_THREADS set by loom's launcher (LOOM_THREADS_FROM_LAUNCHER),
//              that value (the launcher computed it the same way); minus the data-loader
//              workers (each is a thread that needs a core), at least 1.
//   intra-op = OMP_NUM_THREADS when the user set it; else 1 when the matmuls run in a BLAS with
//              a pool of its own (fp32 on CPU, Debian's OpenBLAS) and the budget when they run
//              in oneDNN, on a GPU, or in a BLAS on the intra-op threads (the torch wheel's MKL
//              inside libtorch_cpu; its MKL_NUM_THREADS counts as OMP_NUM_THREADS there, as in
//              Python torch's intraop_default_num_threads).
//   BLAS     = the library's own variable when the user set it (the library read it); else the
//              budget when intra-op is 1, and 1 otherwise — so one pool has the cores at a time;
//              not set apart when the BLAS runs on the intra-op threads.
//   inter-op = 1 (nothing in loom runs inter-op work).
//   heap     = freed blocks kept for reuse unless the user chose the allocator's settings
//              (threads/host_heap.h: DecideHeap).
// Every value a user variable decided is named in the log line; a launcher-set OMP_NUM_THREADS
// is not a user choice.
//
// Example:
//   ThreadPlan plan = DecideThreads(CurrentThreadInputs(/*matmuls_in_blas=*/true, workers));
//   RETURN_IF_ERROR(ApplyThreadPlan(plan));
//   LOG(INFO) << plan.Describe();
#ifndef LOOM_THREADS_THREAD_PLAN_H_
#define LOOM_THREADS_THREAD_PLAN_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "threads/blas_threads.h"
#include "threads/cpu_topology.h"
#include "threads/host_heap.h"

namespace loom::threads {

// Set by //tools:launch next to the OMP_NUM_THREADS it chose for a rank.
inline constexpr char kThreadsFromLauncher[] = "LOOM_THREADS_FROM_LAUNCHER";

struct ThreadInputs {
  CpuTopology topology;
  int local_world_size = 1;
  // The thread variables of the environment that are set (OMP_NUM_THREADS, the BLAS's own,
  // kThreadsFromLauncher) and the allocator's (HeapEnvironmentVariables()).
  std::map<std::string, std::string> env;
  std::string blas_name = "none";
  std::vector<std::string> blas_env_vars;
  bool matmuls_in_blas = true;  // fp32 training on the CPU
  // The BLAS runs on LibTorch's intra-op threads, with no pool of its own (the torch wheel's
  // MKL, linked into libtorch_cpu): fp32 matmuls then need the intra-op threads.
  bool blas_on_intra_op_threads = false;
  int dataloader_workers = 0;
};

struct ThreadPlan {
  int intra_op = 1;
  std::optional<int> blas;  // unset: left as the library set itself up (user variable, no BLAS)
  int inter_op = 1;
  int dataloader_workers = 0;
  std::string blas_name = "none";
  bool blas_on_intra_op_threads = false;
  std::string reason;  // where the numbers came from
  HeapPlan heap;

  // One line: "threads: intra-op 1, OpenBLAS 2, inter-op 1, data-loader workers 0 (2 CPUs on
  // 2 physical cores, 1 process per node; fp32 matmuls run in OpenBLAS); heap: freed blocks
  // kept for reuse (...)".
  std::string Describe() const;
};

ThreadPlan DecideThreads(const ThreadInputs& inputs);

// A plan with the thread counts given (benchmarks comparing settings; TrainerOptions::threads)
// and the heap decided from this process's environment as DecideThreads would.
ThreadPlan ManualThreadPlan(int intra_op, int blas);

// This process's inputs: DetectCpuTopology, LOCAL_WORLD_SIZE, the thread variables, FindBlas.
ThreadInputs CurrentThreadInputs(bool matmuls_in_blas, int dataloader_workers);

// Sets LibTorch's intra-op threads, the BLAS threads, (when still possible) the inter-op
// threads and the heap plan. Safe to call again with the same plan.
absl::Status ApplyThreadPlan(const ThreadPlan& plan);

}  // namespace loom::threads

#endif  // LOOM_THREADS_THREAD_PLAN_H_
