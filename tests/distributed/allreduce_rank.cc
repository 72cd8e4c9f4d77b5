// One rank of the //tools:launch end-to-end test: reads its DistributedEnv from the real
// environment the launcher set, creates the Gloo group, and checks exact collective results
// (rank r contributes r + 1). Prints "rank R/N sum S gathered G" and exits 0 on success.
// Usage: allreduce_rank [timeout_seconds]
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "absl/strings/str_join.h"
#include "distributed/collectives.h"
#include "distributed/distributed_env.h"
#include "distributed/process_group.h"
#include "logging/process_logging.h"

namespace {

int Fail(const char* what, const absl::Status& status) {
  std::fprintf(stderr, "%s: %s\n", what, status.ToString().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  loom::logging::InitProcessLogging(argv[0]);
  using namespace loom::distributed;  // NOLINT(build/namespaces): a test main
  absl::StatusOr<DistributedEnv> env = DistributedEnvFromProcess();
  if (!env.ok()) return Fail("env", env.status());
  ProcessGroupOptions options;
  options.timeout = absl::Seconds(argc > 1 ? std::atoi(argv[1]) : 30);
  absl::StatusOr<ProcessGroup> pg = CreateProcessGroup(*env, options);
  if (!pg.ok()) return Fail("process group", pg.status());

  const int n = env->world_size;
  at::Tensor sum = at::full({1}, env->rank + 1, at::kLong);
  if (absl::Status s = AllReduce(*pg, sum); !s.ok()) return Fail("AllReduce", s);
  const int64_t got = sum.item<int64_t>();
  if (got != n * (n + 1) / 2) {
    std::fprintf(stderr, "sum %ld, want %d\n", static_cast<long>(got), n * (n + 1) / 2);
    return 1;
  }
  at::Tensor local_rank = at::full({1}, env->local_rank, at::kLong);
  absl::StatusOr<std::vector<at::Tensor>> all = AllGather(*pg, local_rank);
  if (!all.ok()) return Fail("AllGather", all.status());
  std::vector<int64_t> local_ranks;
  for (const at::Tensor& t : *all) local_ranks.push_back(t.item<int64_t>());
  if (absl::Status s = Barrier(*pg); !s.ok()) return Fail("Barrier", s);
  std::printf("rank %d/%d sum %ld gathered %s\n", env->rank, n, static_cast<long>(got),
              absl::StrJoin(local_ranks, ",").c_str());
  return 0;
}
