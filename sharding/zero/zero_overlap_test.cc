// OverlappedReduction on real ranks: each rank's partition of the averaged gradient, with
// buckets that split the flat buffer unevenly across the ranks' partitions, over an
// accumulation window (the hooks only act on its closing micro-batch), and a parameter that
// gets no gradient.
#include "sharding/zero/zero_overlap.h"

#include <torch/torch.h>

#include "base/free_port.h"
#include "base/status_matchers.h"
#include "distributed/multiprocess_testing.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::sharding {
namespace {

using ::testing::Each;

int Child(int rank, int world, int port) {
  auto pg = distributed::testing::JoinGroup(rank, world, port);
  CHILD_CHECK_OK(pg.status());
  // Parameters of 3, 4, 2 and 5 elements (14, padded to 16 at 2 or 4 ranks); "d" never gets a
  // gradient.
  std::vector<at::Tensor> params;
  for (int64_t n : {3, 4, 2, 5}) params.push_back(at::zeros({n}).requires_grad_(true));
  OverlappedReduction::Group g;
  g.params = params;
  g.model_index = {0, 1, 2, 3};
  g.numel = 14;
  g.padded_numel = 16;
  auto overlap = OverlappedReduction::Create(*pg, {g}, /*bucket_elements=*/5, at::kFloat);
  CHILD_CHECK_OK(overlap.status());
  CHILD_CHECK((*overlap)->bucket_count() >= 3);
  // Micro-batch 1 (accumulation: nothing is sent), micro-batch 2 (closing). Rank r's loss
  // gives parameter k the gradient (r + 1) * (k + 1) * m on micro-batch m (m = 1, 2).
  for (int m = 1; m <= 2; ++m) {
    (*overlap)->Arm(m == 2);
    at::Tensor loss = at::zeros({});
    for (int k = 0; k < 3; ++k) loss = loss + params[k].sum() * ((rank + 1) * (k + 1) * m);
    loss.backward();
  }
  const int64_t part = 16 / world;
  at::Tensor out = at::full({part}, -1.0f);
  CHILD_CHECK_OK((*overlap)->Finish({&out}));
  // Accumulated gradient of parameter k: (r + 1)(k + 1) * 3; averaged over ranks:
  // (k + 1) * 3 * mean(r + 1) = (k + 1) * 3 * (world + 1) / 2; "d" and the padding are 0.
  at::Tensor want_flat = at::zeros({16});
  const int64_t offsets[] = {0, 3, 7, 9};
  const int64_t sizes[] = {3, 4, 2, 5};
  for (int k = 0; k < 3; ++k) {
    want_flat.slice(0, offsets[k], offsets[k] + sizes[k]).fill_((k + 1) * 3.0 * (world + 1) / 2);
  }
  CHILD_CHECK(at::allclose(out, want_flat.slice(0, rank * part, (rank + 1) * part), 0, 1e-6));
  return 0;
}

TEST(OverlappedReductionTest, EachRankGetsItsAveragedPartition) {
  for (int world : {2, 4}) {
    ASSERT_OK_AND_ASSIGN(const int port, base::PickFreePort());
    ASSERT_GT(port, 0);
    auto codes = distributed::testing::RunRanks(world, absl::Seconds(60),
                                                [&](int rank) { return Child(rank, world, port); });
    EXPECT_THAT(codes, Each(0)) << "world " << world;
  }
}

}  // namespace
}  // namespace loom::sharding
