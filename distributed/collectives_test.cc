#include "distributed/collectives.h"

#include <cstdio>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "base/free_port.h"
#include "base/status_matchers.h"
#include "distributed/multiprocess_testing.h"
#include "distributed/process_group.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::distributed {
namespace {

using ::loom::base::PickFreePort;
using ::loom::distributed::testing::RunRanks;
using ::testing::Each;

absl::StatusOr<ProcessGroup> Join(int rank, int world, int port,
                                  absl::Duration timeout = absl::Seconds(20)) {
  return testing::JoinGroup(rank, world, port, timeout);
}

// AllReduce: sums (also in place on a non-contiguous view) and averages.
int CheckAllReduce(ProcessGroup& pg, int rank, int n) {
  // AllReduce sum: 1 + 2 + ... + n.
  at::Tensor sum = at::full({3}, static_cast<float>(rank + 1));
  CHILD_CHECK_OK(AllReduce(pg, sum, ReduceOp::kSum));
  CHILD_CHECK(at::equal(sum, at::full({3}, static_cast<float>(n * (n + 1) / 2))));

  // Integer sum, in place on a non-contiguous view (every other element of a row).
  at::Tensor base = at::zeros({2, 4}, at::kLong);
  base.fill_(rank + 1);
  at::Tensor view = base.select(1, 1);  // non-contiguous column
  CHILD_CHECK(!view.is_contiguous());
  CHILD_CHECK_OK(AllReduce(pg, view, ReduceOp::kSum));
  at::Tensor want_base = at::full({2, 4}, rank + 1, at::kLong);
  want_base.select(1, 1).fill_(n * (n + 1) / 2);
  CHILD_CHECK(at::equal(base, want_base));

  // Average: (n + 1) / 2, exactly representable.
  at::Tensor avg = at::full({2, 2}, static_cast<double>(rank + 1), at::kDouble);
  CHILD_CHECK_OK(AllReduce(pg, avg, ReduceOp::kAvg));
  CHILD_CHECK(at::equal(avg, at::full({2, 2}, (n + 1) / 2.0, at::kDouble)));
  at::Tensor ints = at::ones({1}, at::kInt);
  CHILD_CHECK(AllReduce(pg, ints, ReduceOp::kAvg).code() == absl::StatusCode::kInvalidArgument);
  return 0;
}

// Broadcast from rank 0 and from the last rank.
int CheckBroadcast(ProcessGroup& pg, int rank, int n) {
  // Broadcast from rank 0, then from the last rank.
  at::Tensor b = rank == 0 ? at::arange(5, at::kFloat) : at::zeros({5});
  CHILD_CHECK_OK(Broadcast(pg, b));
  CHILD_CHECK(at::equal(b, at::arange(5, at::kFloat)));
  at::Tensor b2 = at::full({2}, rank * 10, at::kLong);
  CHILD_CHECK_OK(Broadcast(pg, b2, n - 1));
  CHILD_CHECK(at::equal(b2, at::full({2}, (n - 1) * 10, at::kLong)));
  CHILD_CHECK(Broadcast(pg, b2, n).code() == absl::StatusCode::kInvalidArgument);
  return 0;
}

// AllGather of equal shapes, and of variable length along dim 0.
int CheckAllGather(ProcessGroup& pg, int rank, int n) {
  // AllGather of equal shapes: rank r sends [r + 1, 10 (r + 1)].
  at::Tensor mine = at::tensor({rank + 1, 10 * (rank + 1)}, at::kLong);
  absl::StatusOr<std::vector<at::Tensor>> gathered = AllGather(pg, mine);
  CHILD_CHECK_OK(gathered.status());
  CHILD_CHECK(static_cast<int>(gathered->size()) == n);
  for (int r = 0; r < n; ++r) {
    CHILD_CHECK(at::equal((*gathered)[r], at::tensor({r + 1, 10 * (r + 1)}, at::kLong)));
  }

  // AllGather with a shape that differs on the last rank: every rank gets InvalidArgument.
  at::Tensor odd = at::zeros({rank == n - 1 ? 3 : 2});
  CHILD_CHECK(AllGather(pg, odd).status().code() == absl::StatusCode::kInvalidArgument);

  // Variable length: rank r has r + 1 rows [100 r + i, -(100 r + i)].
  at::Tensor rows = at::arange(rank + 1, at::kFloat) + 100.0f * rank;
  at::Tensor var = at::stack({rows, -rows}, 1);
  absl::StatusOr<std::vector<at::Tensor>> all = AllGatherVariableLength(pg, var);
  CHILD_CHECK_OK(all.status());
  CHILD_CHECK(static_cast<int>(all->size()) == n);
  for (int r = 0; r < n; ++r) {
    at::Tensor want_rows = at::arange(r + 1, at::kFloat) + 100.0f * r;
    CHILD_CHECK(at::equal((*all)[r], at::stack({want_rows, -want_rows}, 1)));
  }
  // Trailing dims must agree.
  at::Tensor bad = at::zeros({1, rank == 0 ? 2 : 3});
  CHILD_CHECK(AllGatherVariableLength(pg, bad).status().code() ==
              absl::StatusCode::kInvalidArgument);
  return 0;
}

// AllGatherInto one flat buffer.
int CheckAllGatherInto(ProcessGroup& pg, int rank, int n) {
  // AllGatherInto: rank r's [r, r + 0.5, r + 0.25] lands at [3r, 3r + 3) of one flat buffer.
  at::Tensor piece = at::tensor({rank + 0.0f, rank + 0.5f, rank + 0.25f});
  at::Tensor flat = at::full({3 * n}, -1.0f);
  CHILD_CHECK_OK(AllGatherInto(pg, piece, flat));
  for (int r = 0; r < n; ++r) {
    CHILD_CHECK(
        at::equal(flat.slice(0, 3 * r, 3 * r + 3), at::tensor({r + 0.0f, r + 0.5f, r + 0.25f})));
  }
  at::Tensor short_flat = at::zeros({3 * n - 1});
  CHILD_CHECK(AllGatherInto(pg, piece, short_flat).code() == absl::StatusCode::kInvalidArgument);
  return 0;
}

// ReduceScatterSum over 2 elements per rank.
int CheckReduceScatterSum(ProcessGroup& pg, int rank, int n) {
  // ReduceScatterSum: rank r holds element i = (r + 1) * (i + 1) over 2n elements; chunk k
  // (2 elements) sums to (1 + ... + n) * (i + 1) = n (n + 1) / 2 * (i + 1).
  at::Tensor contrib = (at::arange(2 * n, at::kDouble) + 1) * (rank + 1);
  at::Tensor mine_sum = at::zeros({2}, at::kDouble);
  CHILD_CHECK_OK(ReduceScatterSum(pg, contrib, mine_sum));
  const double tri = n * (n + 1) / 2.0;
  CHILD_CHECK(
      at::equal(mine_sum, at::tensor({tri * (2 * rank + 1), tri * (2 * rank + 2)}, at::kDouble)));
  at::Tensor uneven = at::zeros({2 * n + 1}, at::kDouble);
  CHILD_CHECK(ReduceScatterSum(pg, uneven, mine_sum).code() == absl::StatusCode::kInvalidArgument);
  return 0;
}

// bfloat16 through every collective.
int CheckBfloat16(ProcessGroup& pg, int rank, int n) {
  const double tri = n * (n + 1) / 2.0;
  // bfloat16 (Gloo has none): broadcast, gather and the reduce-scatter ring move the bits;
  // values with few significant bits stay exact. AllReduce sums in fp32: 1 + ... + n.
  at::Tensor hb = rank == 0 ? at::tensor({1.5f, -3.0f, 0.125f}).to(at::kBFloat16)
                            : at::zeros({3}, at::kBFloat16);
  CHILD_CHECK_OK(Broadcast(pg, hb));
  CHILD_CHECK(at::equal(hb, at::tensor({1.5f, -3.0f, 0.125f}).to(at::kBFloat16)));
  at::Tensor hpiece = at::full({2}, rank + 0.5f).to(at::kBFloat16);
  at::Tensor hflat = at::zeros({2 * n}, at::kBFloat16);
  CHILD_CHECK_OK(AllGatherInto(pg, hpiece, hflat));
  for (int r = 0; r < n; ++r) {
    CHILD_CHECK(
        at::equal(hflat.slice(0, 2 * r, 2 * r + 2), at::full({2}, r + 0.5f).to(at::kBFloat16)));
  }
  absl::StatusOr<std::vector<at::Tensor>> hall = AllGather(pg, hpiece);
  CHILD_CHECK_OK(hall.status());
  CHILD_CHECK(at::equal((*hall)[n - 1], at::full({2}, n - 0.5f).to(at::kBFloat16)));
  at::Tensor hcontrib = ((at::arange(2 * n, at::kFloat) + 1) * (rank + 1)).to(at::kBFloat16);
  at::Tensor hsum = at::zeros({2}, at::kBFloat16);
  CHILD_CHECK_OK(ReduceScatterSum(pg, hcontrib, hsum));
  CHILD_CHECK(at::equal(
      hsum,
      at::tensor({tri * (2 * rank + 1), tri * (2 * rank + 2)}, at::kFloat).to(at::kBFloat16)));
  at::Tensor hred = at::full({2}, static_cast<float>(rank + 1)).to(at::kBFloat16);
  CHILD_CHECK_OK(AllReduce(pg, hred, ReduceOp::kSum));
  CHILD_CHECK(hred.scalar_type() == at::kBFloat16 &&
              at::equal(hred, at::full({2}, static_cast<float>(tri)).to(at::kBFloat16)));
  return 0;
}

// ReduceScatterSum over the ring in several pieces.
int CheckLongReduceScatter(ProcessGroup& pg, int rank, int n) {
  const double tri = n * (n + 1) / 2.0;
  // A chunk of more than one ring piece (2^20 elements) with a short last piece.
  const int64_t big = (int64_t{1} << 20) + 3;
  at::Tensor bigflat = (at::arange(big * n, at::kFloat).remainder(7.0f) + 1) * (rank + 1);
  at::Tensor bigout = at::zeros({big});
  CHILD_CHECK_OK(ReduceScatterSum(pg, bigflat, bigout));
  CHILD_CHECK(
      at::equal(bigout, (at::arange(rank * big, (rank + 1) * big, at::kFloat).remainder(7.0f) + 1) *
                            static_cast<float>(tri)));
  return 0;
}

// Every collective with exact expected values; rank r contributes r + 1.
int RunCollectives(int rank, int n, int port) {
  absl::StatusOr<ProcessGroup> pg_or = Join(rank, n, port);
  CHILD_CHECK_OK(pg_or.status());
  ProcessGroup& pg = *pg_or;
  CHILD_CHECK(pg.rank() == rank && pg.world_size() == n);
  CHILD_CHECK(CheckAllReduce(pg, rank, n) == 0);
  CHILD_CHECK(CheckBroadcast(pg, rank, n) == 0);
  CHILD_CHECK_OK(Barrier(pg));
  CHILD_CHECK(CheckAllGather(pg, rank, n) == 0);
  CHILD_CHECK(CheckAllGatherInto(pg, rank, n) == 0);
  CHILD_CHECK(CheckReduceScatterSum(pg, rank, n) == 0);
  CHILD_CHECK(CheckBfloat16(pg, rank, n) == 0);
  CHILD_CHECK(CheckLongReduceScatter(pg, rank, n) == 0);
  CHILD_CHECK_OK(Barrier(pg));
  return 0;
}

void RunWorld(int n) {
  ASSERT_OK_AND_ASSIGN(const int port, PickFreePort());
  ASSERT_GT(port, 0);
  std::vector<int> codes =
      RunRanks(n, absl::Seconds(60), [&](int rank) { return RunCollectives(rank, n, port); });
  EXPECT_THAT(codes, Each(0)) << "world size " << n;
}

TEST(CollectivesTest, TwoProcesses) { RunWorld(2); }

// Rank 1 joins and exits; rank 0's AllReduce returns an error (no hang, within the timeout).
TEST(CollectivesTest, PeerGoneIsAnErrorNotAHang) {
  ASSERT_OK_AND_ASSIGN(const int port, PickFreePort());
  ASSERT_GT(port, 0);
  std::vector<int> codes = RunRanks(2, absl::Seconds(60), [&](int rank) {
    absl::StatusOr<ProcessGroup> pg = Join(rank, 2, port);
    CHILD_CHECK_OK(pg.status());
    if (rank == 1) return 0;
    absl::SleepFor(absl::Milliseconds(200));
    const absl::Time start = absl::Now();
    at::Tensor t = at::ones({4});
    const absl::Status status = AllReduce(*pg, t);
    std::fprintf(stderr, "rank 0 after %s: %s\n", absl::FormatDuration(absl::Now() - start).c_str(),
                 status.ToString().c_str());
    CHILD_CHECK(!status.ok());
    CHILD_CHECK(status.message().find("AllReduce on rank 0 of 2 (gloo") != absl::string_view::npos);
    CHILD_CHECK(absl::Now() - start < absl::Seconds(21));
    return 0;
  });
  EXPECT_THAT(codes, Each(0));
}

TEST(CollectivesTest, FourProcesses) { RunWorld(4); }

// Rank 1 stays connected but never calls the collective: rank 0 gets DeadlineExceeded after
// ddp_timeout (2 s) and the 2 s its peers have to report (peer_check.h), naming rank 1.
TEST(CollectivesTest, PeerThatNeverJoinsTheCollectiveTimesOut) {
  ASSERT_OK_AND_ASSIGN(const int port, PickFreePort());
  ASSERT_GT(port, 0);
  std::vector<int> codes = RunRanks(2, absl::Seconds(60), [&](int rank) {
    absl::StatusOr<ProcessGroup> pg = Join(rank, 2, port, absl::Seconds(2));
    CHILD_CHECK_OK(pg.status());
    if (rank == 1) {
      absl::SleepFor(absl::Seconds(6));
      return 0;
    }
    const absl::Time start = absl::Now();
    at::Tensor t = at::ones({4});
    const absl::Status status = Broadcast(*pg, t, 1);
    const absl::Duration took = absl::Now() - start;
    std::fprintf(stderr, "rank 0 after %s: %s\n", absl::FormatDuration(took).c_str(),
                 status.ToString().c_str());
    CHILD_CHECK(status.code() == absl::StatusCode::kDeadlineExceeded);
    CHILD_CHECK(status.message().find("Broadcast on rank 0 of 2 (gloo, ddp_timeout=2s)") !=
                absl::string_view::npos);
    CHILD_CHECK(status.message().find("rank 1 did not report the failure within 2s") !=
                absl::string_view::npos);
    CHILD_CHECK(took >= absl::Milliseconds(3500) && took < absl::Seconds(5.5));
    return 0;
  });
  EXPECT_THAT(codes, Each(0));
}

}  // namespace
}  // namespace loom::distributed
