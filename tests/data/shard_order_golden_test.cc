// Per-rank train orders against HF's Trainer at several processes (transformers 4.38 +
// accelerate 0.27): testdata/shard_order_golden.txt was produced by make_shard_order_golden.py,
// which replays accelerate 0.27's `prepare_data_loader` / `BatchSamplerShard` with Debian's
// /usr/bin/python3 and torch 1.13 (shard_order_golden_fresh_test regenerates it and checks the
// committed copy is current). Each rank is its own process in a real run: here each gets its own
// generator seeded as `set_seed(seed)` seeds the global one, and reads epochs 0 and 1 in order.
#include <ATen/CPUGeneratorImpl.h>

#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "base/file_util.h"
#include "base/status_matchers.h"
#include "data/sampler.h"
#include "data/shard_sampler.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::data {
namespace {

using ::testing::ElementsAre;

// One line: `shard key=value ... : indices`.
struct Record {
  std::map<std::string, int64_t> fields;
  std::vector<int64_t> indices;
  std::string text;  // the head, for messages
};

std::string RunfilePath(const std::string& rel) {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* workspace = std::getenv("TEST_WORKSPACE");
  if (srcdir == nullptr || workspace == nullptr) return rel;
  return std::string(srcdir) + "/" + workspace + "/" + rel;
}

std::vector<Record> LoadGolden() {
  absl::StatusOr<std::string> text =
      base::ReadFile(RunfilePath("tests/data/testdata/shard_order_golden.txt"));
  EXPECT_TRUE(text.ok()) << text.status();
  std::vector<Record> records;
  if (!text.ok()) return records;
  for (absl::string_view line : absl::StrSplit(*text, '\n', absl::SkipEmpty())) {
    if (line[0] == '#') continue;
    std::pair<absl::string_view, absl::string_view> head_numbers = absl::StrSplit(line, " : ");
    Record r;
    r.text = std::string(head_numbers.first);
    for (absl::string_view word : absl::StrSplit(head_numbers.first, ' ', absl::SkipEmpty())) {
      if (word == "shard") continue;
      std::pair<std::string, std::string> kv = absl::StrSplit(word, '=');
      EXPECT_TRUE(absl::SimpleAtoi(kv.second, &r.fields[kv.first])) << line;
    }
    for (absl::string_view num : absl::StrSplit(head_numbers.second, ' ', absl::SkipEmpty())) {
      int64_t v = 0;
      EXPECT_TRUE(absl::SimpleAtoi(num, &v)) << line;
      r.indices.push_back(v);
    }
    records.push_back(std::move(r));
  }
  return records;
}

// The sampler loom's Trainer and Accelerator give rank `rank` of `world` (seed + epoch
// RandomSampler, replaced as accelerate 0.27 does, then BatchSamplerShard), its process's global
// generator being `generator`.
std::unique_ptr<Sampler> RankSampler(const Record& r, at::Generator generator) {
  const std::map<std::string, int64_t>& f = r.fields;
  auto seeded = std::make_unique<RandomSampler>(f.at("n"), static_cast<uint64_t>(f.at("seed")));
  if (f.at("world") == 1) return seeded;
  std::unique_ptr<Sampler> order = AccelerateShardedOrder(*seeded, std::move(generator));
  EXPECT_NE(order, nullptr) << r.text;
  if (order == nullptr) return nullptr;
  absl::StatusOr<std::unique_ptr<BatchShardSampler>> shard = BatchShardSampler::Create(
      std::move(order), BatchShardOptions()
                            .set_batch_size(f.at("batch"))
                            .set_drop_last(f.at("drop_last") != 0)
                            .set_num_processes(static_cast<int>(f.at("world")))
                            .set_process_index(static_cast<int>(f.at("rank")))
                            .set_even_batches(f.at("even") != 0)
                            .set_split_batches(f.at("split") != 0));
  EXPECT_TRUE(shard.ok()) << shard.status();
  if (!shard.ok()) return nullptr;
  return *std::move(shard);
}

TEST(ShardOrderGoldenTest, EveryRankReadsWhatAccelerateGivesIt) {
  const std::vector<Record> records = LoadGolden();
  // Epochs of one rank's run follow each other in the file; epoch 0 starts a new process.
  std::unique_ptr<Sampler> sampler;
  int checked = 0;
  for (const Record& r : records) {
    if (r.fields.at("epoch") == 0) {
      sampler = RankSampler(
          r, at::make_generator<at::CPUGeneratorImpl>(static_cast<uint64_t>(r.fields.at("seed"))));
    }
    ASSERT_NE(sampler, nullptr) << r.text;
    EXPECT_EQ(sampler->Indices(r.fields.at("epoch")), r.indices) << r.text;
    EXPECT_EQ(sampler->Size(), static_cast<int64_t>(r.indices.size())) << r.text;
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
