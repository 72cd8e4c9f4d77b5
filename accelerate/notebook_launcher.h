// NotebookLauncher: accelerate's notebook_launcher(function, num_processes) — runs `fn` in
// `num_processes` processes forked from this one on this machine, each with the variables
// //tools:launch gives a rank (RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK,
// MASTER_ADDR 127.0.0.1, MASTER_PORT: a free port unless given), so an Accelerator created
// inside fn joins them.
//
// Contract:
//   - Returns OK when every rank's fn returned OK. A rank that fails (an error Status, a signal,
//     a crash) stops the others (SIGTERM, then SIGKILL after a grace period) and the result
//     names it with its error message — no rank is left waiting for a dead peer.
//   - num_processes 1 runs fn in this process (no fork), as accelerate does.
//   - fork() keeps only the calling thread: call it before this process has used LibTorch
//     (whose thread pools would not survive into the children), as accelerate requires for a
//     notebook that has not touched CUDA. Running inside a process that already has
//     RANK/WORLD_SIZE (under a launcher) is FailedPrecondition.
//
// Example:
//   RETURN_IF_ERROR(NotebookLauncher([] { return TrainingFunction(); }, 2));
#ifndef LOOM_ACCELERATE_NOTEBOOK_LAUNCHER_H_
#define LOOM_ACCELERATE_NOTEBOOK_LAUNCHER_H_

#include <functional>

#include "absl/status/status.h"

namespace loom::accelerate {

struct NotebookLauncherOptions {
  int master_port = 0;        // 0: a free port on 127.0.0.1
  double grace_period_s = 5;  // SIGTERM to SIGKILL when stopping the other ranks
};

absl::Status NotebookLauncher(const std::function<absl::Status()>& fn, int num_processes,
                              const NotebookLauncherOptions& options = {});

}  // namespace loom::accelerate

#endif  // LOOM_ACCELERATE_NOTEBOOK_LAUNCHER_H_
