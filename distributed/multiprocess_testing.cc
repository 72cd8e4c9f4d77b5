#include "distributed/multiprocess_testing.h"

#include <cstdio>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace loom::distributed::testing {

absl::StatusOr<ProcessGroup> JoinGroup(int rank, int world, int port, absl::Duration timeout) {
  absl::StatusOr<DistributedEnv> env =
      DistributedEnvFromMap({{"RANK", std::to_string(rank)},
                             {"WORLD_SIZE", std::to_string(world)},
                             {"MASTER_ADDR", "127.0.0.1"},
                             {"MASTER_PORT", std::to_string(port)}});
  if (!env.ok()) return env.status();
  ProcessGroupOptions options;
  options.timeout = timeout;
  return CreateProcessGroup(*env, options);
}

std::vector<int> RunRanks(int n, absl::Duration deadline, const std::function<int(int)>& fn) {
  std::vector<int> outcomes;
  base::ForkRanksOptions options;
  options.deadline = deadline;
  options.label = "RunRanks";
  options.outcomes = &outcomes;
  const absl::Status status = base::ForkRanks(
      n,
      [&](int rank) {
        const int code = fn(rank);
        if (code == 0) return absl::OkStatus();
        return absl::InternalError(absl::StrCat("returned ", code));
      },
      options);
  if (!status.ok()) std::fprintf(stderr, "%s\n", status.ToString().c_str());
  return outcomes;
}

}  // namespace loom::distributed::testing
