#include "accelerate/notebook_launcher.h"

#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "base/fork_ranks.h"
#include "base/free_port.h"

namespace loom::accelerate {
namespace {

// The variables //tools:launch gives a rank on one node.
void SetRankEnvironment(int rank, int num_processes, int port) {
  const std::string r = std::to_string(rank), n = std::to_string(num_processes);
  ::setenv("RANK", r.c_str(), 1);
  ::setenv("LOCAL_RANK", r.c_str(), 1);
  ::setenv("WORLD_SIZE", n.c_str(), 1);
  ::setenv("LOCAL_WORLD_SIZE", n.c_str(), 1);
  ::setenv("GROUP_RANK", "0", 1);
  ::setenv("MASTER_ADDR", "127.0.0.1", 1);
  ::setenv("MASTER_PORT", std::to_string(port).c_str(), 1);
}

}  // namespace

absl::Status NotebookLauncher(const std::function<absl::Status()>& fn, int num_processes,
                              const NotebookLauncherOptions& options) {
  if (num_processes < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("NotebookLauncher: num_processes must be >= 1, got ", num_processes));
  }
  if (num_processes == 1) return fn();
  if (std::getenv("WORLD_SIZE") != nullptr || std::getenv("RANK") != nullptr) {
    return absl::FailedPreconditionError(
        "NotebookLauncher: this process already is a rank of a launched run (RANK / WORLD_SIZE "
        "are set); call the training function directly");
  }
  int port = options.master_port;
  if (port <= 0) {
    absl::StatusOr<int> free_port = base::PickFreePort();
    if (!free_port.ok()) return free_port.status();
    port = *free_port;
  }
  // Each rank in its own process group; the first failure stops the others.
  base::ForkRanksOptions fork_options;
  fork_options.label = "NotebookLauncher";
  fork_options.grace_period = absl::Seconds(options.grace_period_s);
  return base::ForkRanks(
      num_processes,
      [&](int rank) {
        SetRankEnvironment(rank, num_processes, port);
        return fn();
      },
      fork_options);
}

}  // namespace loom::accelerate
