#include "data/shard_sampler.h"

#include <ATen/CPUGeneratorImpl.h>

#include <memory>
#include <vector>

#include "base/status_matchers.h"
#include "data/sampler.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::data {
namespace {

using ::loom::base::testing::StatusIs;
using ::testing::_;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Batches = std::vector<std::vector<int64_t>>;

Batches Shard(int64_t n, int64_t batch_size, int world, int rank, bool split = false,
              bool even = true, bool drop_last = false) {
  auto sampler = BatchShardSampler::Create(std::make_unique<SequentialSampler>(n),
                                           BatchShardOptions()
                                               .set_batch_size(batch_size)
                                               .set_num_processes(world)
                                               .set_process_index(rank)
                                               .set_split_batches(split)
                                               .set_even_batches(even)
                                               .set_drop_last(drop_last));
  EXPECT_TRUE(sampler.ok()) << sampler.status();
  Batches batches = (*sampler)->Batches(0);
  int64_t total = 0;
  for (const auto& b : batches) total += b.size();
  EXPECT_EQ((*sampler)->Size(), total);
  EXPECT_EQ((*sampler)->Indices(3).size(), static_cast<size_t>(total));
  return batches;
}

// Expectations follow the round-robin rule by hand: batch i of the global batches goes to rank
// i % N; an incomplete round is completed from the first N batches' indices.
TEST(BatchShardSamplerTest, EvenSplitRoundRobin) {
  EXPECT_EQ(Shard(24, 3, 2, 0), (Batches{{0, 1, 2}, {6, 7, 8}, {12, 13, 14}, {18, 19, 20}}));
  EXPECT_EQ(Shard(24, 3, 2, 1), (Batches{{3, 4, 5}, {9, 10, 11}, {15, 16, 17}, {21, 22, 23}}));
}

TEST(BatchShardSamplerTest, OddNumberOfFullBatchesCyclesFromTheStart) {
  EXPECT_EQ(Shard(21, 3, 2, 0), (Batches{{0, 1, 2}, {6, 7, 8}, {12, 13, 14}, {18, 19, 20}}));
  EXPECT_EQ(Shard(21, 3, 2, 1), (Batches{{3, 4, 5}, {9, 10, 11}, {15, 16, 17}, {0, 1, 2}}));
}

TEST(BatchShardSamplerTest, ShortLastBatchIsCompletedThenTheRoundIs) {
  EXPECT_EQ(Shard(22, 3, 2, 0), (Batches{{0, 1, 2}, {6, 7, 8}, {12, 13, 14}, {18, 19, 20}}));
  EXPECT_EQ(Shard(22, 3, 2, 1), (Batches{{3, 4, 5}, {9, 10, 11}, {15, 16, 17}, {21, 0, 1}}));
  EXPECT_EQ(Shard(20, 3, 2, 0), (Batches{{0, 1, 2}, {6, 7, 8}, {12, 13, 14}, {18, 19, 0}}));
  EXPECT_EQ(Shard(20, 3, 2, 1), (Batches{{3, 4, 5}, {9, 10, 11}, {15, 16, 17}, {1, 2, 3}}));
}

TEST(BatchShardSamplerTest, DropLastDropsTheIncompleteRound) {
  EXPECT_EQ(Shard(22, 3, 2, 0, false, true, true), (Batches{{0, 1, 2}, {6, 7, 8}, {12, 13, 14}}));
  EXPECT_EQ(Shard(22, 3, 2, 1, false, true, true), (Batches{{3, 4, 5}, {9, 10, 11}, {15, 16, 17}}));
}

TEST(BatchShardSamplerTest, UnevenBatchesKeepTheRemainderAsItIs) {
  EXPECT_EQ(Shard(22, 3, 2, 0, false, false),
            (Batches{{0, 1, 2}, {6, 7, 8}, {12, 13, 14}, {18, 19, 20}}));
  EXPECT_EQ(Shard(22, 3, 2, 1, false, false),
            (Batches{{3, 4, 5}, {9, 10, 11}, {15, 16, 17}, {21}}));
  EXPECT_EQ(Shard(2, 3, 2, 1, false, false), Batches{});
}

TEST(BatchShardSamplerTest, DatasetSmallerThanOneRoundRepeatsItself) {
  EXPECT_EQ(Shard(2, 3, 2, 0), (Batches{{0, 1, 0}}));
  EXPECT_EQ(Shard(2, 3, 2, 1), (Batches{{1, 0, 1}}));
  EXPECT_EQ(Shard(0, 3, 2, 1), Batches{});
}

TEST(BatchShardSamplerTest, SplitBatchesSlicesEveryBatch) {
  EXPECT_EQ(Shard(22, 4, 2, 0, true),
            (Batches{{0, 1}, {4, 5}, {8, 9}, {12, 13}, {16, 17}, {20, 21}}));
  EXPECT_EQ(Shard(22, 4, 2, 1, true),
            (Batches{{2, 3}, {6, 7}, {10, 11}, {14, 15}, {18, 19}, {0, 1}}));
  EXPECT_EQ(Shard(22, 4, 2, 1, true, false),
            (Batches{{2, 3}, {6, 7}, {10, 11}, {14, 15}, {18, 19}}));
  EXPECT_EQ(Shard(22, 4, 2, 1, true, true, true),
            (Batches{{2, 3}, {6, 7}, {10, 11}, {14, 15}, {18, 19}}));
}

// With even batches, step k of all ranks together is the single process's global batch k of
// N x B examples (outside the padded last round).
TEST(BatchShardSamplerTest, RanksTogetherCoverTheSingleProcessOrder) {
  for (int world : {2, 3, 4}) {
    for (int64_t n : {1, 7, 24, 25, 50}) {
      for (int64_t b : {1, 2, 5}) {
        std::vector<Batches> per_rank;
        for (int r = 0; r < world; ++r) per_rank.push_back(Shard(n, b, world, r));
        for (int r = 1; r < world; ++r) ASSERT_EQ(per_rank[r].size(), per_rank[0].size());
        std::vector<int64_t> covered;
        for (size_t k = 0; k < per_rank[0].size(); ++k) {
          for (int r = 0; r < world; ++r) {
            ASSERT_EQ(per_rank[r][k].size(), static_cast<size_t>(b));
            covered.insert(covered.end(), per_rank[r][k].begin(), per_rank[r][k].end());
          }
        }
        ASSERT_GE(covered.size(), static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i) ASSERT_EQ(covered[i], i) << world << " " << n << " " << b;
        for (size_t i = n; i < covered.size(); ++i) ASSERT_EQ(covered[i], (i - n) % n);
      }
    }
  }
}

TEST(BatchShardSamplerTest, EpochsFollowTheInnerSampler) {
  auto sampler = BatchShardSampler::Create(
      std::make_unique<RandomSampler>(10, 42),
      BatchShardOptions().set_batch_size(2).set_num_processes(2).set_process_index(1));
  ASSERT_OK(sampler.status());
  const std::vector<int64_t> order = RandomSampler(10, 42).Indices(1);
  EXPECT_THAT((*sampler)->Indices(1),
              ElementsAre(order[2], order[3], order[6], order[7], order[0], order[1]));
}

TEST(AccelerateShardedOrderTest, OnlyASeededRandomSamplerIsReplaced) {
  at::Generator g = at::make_generator<at::CPUGeneratorImpl>(42);
  std::unique_ptr<Sampler> replaced = AccelerateShardedOrder(RandomSampler(12, 42), g);
  ASSERT_NE(replaced, nullptr);
  const auto* random = dynamic_cast<const RandomSampler*>(replaced.get());
  ASSERT_NE(random, nullptr);
  EXPECT_TRUE(random->shared_generator());
  EXPECT_EQ(random->Size(), 12);
  EXPECT_EQ(AccelerateShardedOrder(SequentialSampler(12), g), nullptr);
  EXPECT_EQ(AccelerateShardedOrder(*RandomSampler::SharedGenerator(12, g), g), nullptr);
}

TEST(BatchShardSamplerTest, RejectsBadOptions) {
  EXPECT_THAT(
      BatchShardSampler::Create(
          std::make_unique<SequentialSampler>(4),
          BatchShardOptions().set_batch_size(3).set_num_processes(2).set_split_batches(true))
          .status(),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("batch size (3) needs to be a round multiple of the number of "
                         "processes (2)")));
  EXPECT_THAT(
      BatchShardSampler::Create(std::make_unique<SequentialSampler>(4),
                                BatchShardOptions().set_num_processes(2).set_process_index(2))
          .status(),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("process index 2")));
  EXPECT_THAT(BatchShardSampler::Create(nullptr, BatchShardOptions()).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, _));
}

}  // namespace
}  // namespace loom::data

namespace loom::data {
namespace {

TEST(EvalShardSamplerTest, DealsWholeBatchesAndPadsTheLastRoundWithBatchZero) {
  // 10 examples, batches of 3: [0,1,2] [3,4,5] [6,7,8] [9]; 3 ranks -> 2 rounds.
  auto r0 = EvalShardSampler::Create(10, 3, 3, 0);
  auto r1 = EvalShardSampler::Create(10, 3, 3, 1);
  auto r2 = EvalShardSampler::Create(10, 3, 3, 2);
  ASSERT_TRUE(r0.ok() && r1.ok() && r2.ok());
  EXPECT_EQ((*r0)->Indices(0), (std::vector<int64_t>{0, 1, 2, 9}));
  EXPECT_EQ((*r0)->RealBatches(), 2);
  EXPECT_EQ((*r1)->Indices(0), (std::vector<int64_t>{3, 4, 5, 0, 1, 2}));
  EXPECT_EQ((*r1)->RealBatches(), 1);
  EXPECT_EQ((*r2)->Indices(0), (std::vector<int64_t>{6, 7, 8, 0, 1, 2}));
  EXPECT_EQ((*r2)->Rounds(), 2);
  // Fewer examples than one batch per rank.
  auto tiny = EvalShardSampler::Create(2, 3, 2, 1);
  ASSERT_TRUE(tiny.ok());
  EXPECT_EQ((*tiny)->Indices(0), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ((*tiny)->RealBatches(), 0);
  EXPECT_EQ((*tiny)->Rounds(), 1);
  EXPECT_FALSE(EvalShardSampler::Create(5, 0, 2, 0).ok());
  // drop_last: the short batch [9] does not exist; rank 0 pads its second round instead.
  auto dropped = EvalShardSampler::Create(10, 3, 3, 0, /*drop_last=*/true);
  ASSERT_TRUE(dropped.ok());
  EXPECT_EQ((*dropped)->Indices(0), (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ((*dropped)->Rounds(), 1);
  auto dropped2 = EvalShardSampler::Create(10, 4, 2, 1, /*drop_last=*/true);
  ASSERT_TRUE(dropped2.ok());  // batches [0..3] [4..7]; [8, 9] dropped
  EXPECT_EQ((*dropped2)->Indices(0), (std::vector<int64_t>{4, 5, 6, 7}));
  EXPECT_EQ((*dropped2)->RealBatches(), 1);
}

}  // namespace
}  // namespace loom::data
