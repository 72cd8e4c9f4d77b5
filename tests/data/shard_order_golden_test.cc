// Per-rank train orders against HF's Trainer at several processes (transformers 4.38 +
// accelerate 0.27): testdata/shard_order_golden.txt was produced by make_shard_order_golden.py,
// which replays accelerate 0.27's `prepare_data_loader` / `BatchSamplerShard` with Debian's
// /usr/bin/python3 and torch 1.13 (shard_order_golden_fresh_test regenerates it and checks the
// committed copy is current). Each rank is its own process in a real run: here each gets its own
// generator seeded as `set_seed(seed)` seeds the global one, and reads epochs 0 and 1 in order.
#include <ATen/CPUGeneratorImpl.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/status_matchers.h"
#include "data/data_loader.h"
#include "data/sampler.h"
#include "data/shard_sampler.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/data/golden_records.h"

namespace loom::data {
namespace {

using ::testing::ElementsAre;

// One line: `shard key=value ... : indices`.
using Record = testing::GoldenRecord;
using testing::Int;

std::vector<Record> LoadGolden() {
  return testing::LoadGoldenRecords("tests/data/testdata/shard_order_golden.txt");
}

// The sampler loom's Trainer and Accelerator give rank `rank` of `world` (seed + epoch
// RandomSampler, replaced as accelerate 0.27 does, then BatchSamplerShard), its process's global
// generator being `generator`.
std::unique_ptr<Sampler> RankSampler(const Record& r, at::Generator generator) {
  auto seeded = std::make_unique<RandomSampler>(Int(r, "n"), testing::Uint(r, "seed"));
  if (Int(r, "world") == 1) return seeded;
  std::unique_ptr<Sampler> order = AccelerateShardedOrder(*seeded, std::move(generator));
  EXPECT_NE(order, nullptr) << r.Describe();
  if (order == nullptr) return nullptr;
  absl::StatusOr<std::unique_ptr<BatchShardSampler>> shard = BatchShardSampler::Create(
      std::move(order), BatchShardOptions()
                            .set_batch_size(Int(r, "batch"))
                            .set_drop_last(Int(r, "drop_last") != 0)
                            .set_num_processes(static_cast<int>(Int(r, "world")))
                            .set_process_index(static_cast<int>(Int(r, "rank")))
                            .set_even_batches(Int(r, "even") != 0)
                            .set_split_batches(Int(r, "split") != 0));
  EXPECT_TRUE(shard.ok()) << shard.status();
  if (!shard.ok()) return nullptr;
  return *std::move(shard);
}

TEST(ShardOrderGoldenTest, EveryRankReadsWhatAccelerateGivesIt) {
  const std::vector<Record> records = LoadGolden();
  // Epochs of one rank's run follow each other in the file; epoch 0 starts a new process.
  std::unique_ptr<Sampler> sampler;
  at::Generator global;
  int checked = 0;
  for (const Record& r : records) {
    ASSERT_EQ(r.kind, "shard") << r.Describe();
    if (Int(r, "epoch") == 0) {
      global = at::make_generator<at::CPUGeneratorImpl>(testing::Uint(r, "seed"));
      sampler = RankSampler(r, global);
    }
    ASSERT_NE(sampler, nullptr) << r.Describe();
    DrawIteratorBaseSeed(global);  // the DataLoader's, as each epoch begins
    EXPECT_EQ(sampler->Indices(Int(r, "epoch")), r.numbers) << r.Describe();
    EXPECT_EQ(sampler->Size(), static_cast<int64_t>(r.numbers.size())) << r.Describe();
    ++checked;
  }
  EXPECT_EQ(checked, 380);
}

// The order HF's Trainer logs at 2 ranks for 512 examples and seed 42: rank 0's first
// micro-batch starts [288, 271, 443, 20] whatever the per-device batch size (its first 4+
// examples are the permutation's first ones).
TEST(ShardOrderGoldenTest, TwoRanksOf512ExamplesSeed42) {
  for (const int64_t batch : {4, 8, 16}) {
    at::Generator global = at::make_generator<at::CPUGeneratorImpl>(42);
    ASSERT_OK_AND_ASSIGN(
        std::unique_ptr<BatchShardSampler> shard,
        BatchShardSampler::Create(AccelerateShardedOrder(RandomSampler(512, 42), global),
                                  BatchShardOptions().set_batch_size(batch).set_num_processes(2)));
    DrawIteratorBaseSeed(global);  // the DataLoader's, as each epoch begins
    const std::vector<int64_t> order = shard->Indices(0);
    EXPECT_THAT(std::vector<int64_t>(order.begin(), order.begin() + 4),
                ElementsAre(288, 271, 443, 20))
        << batch;
  }
  // One process keeps accelerate's seedable sampler: randperm(512, seed 42).
  const std::vector<int64_t> single = RandomSampler(512, 42).Indices(0);
  EXPECT_THAT(std::vector<int64_t>(single.begin(), single.begin() + 4),
              ElementsAre(102, 486, 438, 2));
}

}  // namespace
}  // namespace loom::data
