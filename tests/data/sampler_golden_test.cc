// Sampler orders against Python torch 1.13: testdata/sampler_golden.txt was produced by
// make_sampler_golden.py with Debian's /usr/bin/python3 (sampler_golden_fresh_test regenerates it
// and checks the committed copy is current). Each record is rebuilt here from its parameters.
#include <ATen/CPUGeneratorImpl.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/status_matchers.h"
#include "data/data_loader.h"
#include "data/sampler.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/data/golden_records.h"

namespace loom::data {
namespace {

using Record = testing::GoldenRecord;
using testing::Int;
using testing::Uint;

std::vector<Record> LoadGolden() {
  return testing::LoadGoldenRecords("tests/data/testdata/sampler_golden.txt");
}

std::optional<int64_t> Mult(const Record& r) {
  if (r.fields.at("mult") == "auto") return std::nullopt;
  return Int(r, "mult");
}

std::map<std::string, int> CountKinds(const std::vector<Record>& records) {
  std::map<std::string, int> counts;
  for (const Record& r : records) ++counts[r.kind];
  return counts;
}

TEST(SamplerGoldenTest, FileHasEveryKind) {
  const std::map<std::string, int> counts = CountKinds(LoadGolden());
  EXPECT_EQ(counts, (std::map<std::string, int>{
                        {"grouped", 72}, {"lengths", 4}, {"random", 15}, {"shared", 18}}));
}

TEST(SamplerGoldenTest, RandomSamplerMatchesTorchRandperm) {
  for (const Record& r : LoadGolden()) {
    if (r.kind != "random") continue;
    const RandomSampler sampler(Int(r, "n"), Uint(r, "seed"));
    EXPECT_EQ(sampler.Size(), Int(r, "n"));
    EXPECT_EQ(sampler.Indices(Int(r, "epoch")), r.numbers) << r.Describe();
  }
}

TEST(SamplerGoldenTest, LengthGroupedSamplerMatchesHfPerEpochSeed) {
  const std::vector<Record> records = LoadGolden();
  std::map<std::string, std::vector<int64_t>> lengths;
  for (const Record& r : records) {
    if (r.kind == "lengths") lengths[r.fields.at("name")] = r.numbers;
  }
  int checked = 0;
  for (const Record& r : records) {
    if (r.kind != "grouped") continue;
    ASSERT_OK_AND_ASSIGN(auto sampler,
                         LengthGroupedSampler::Create(lengths.at(r.fields.at("lengths")),
                                                      Int(r, "batch"), Uint(r, "seed"), Mult(r)));
    EXPECT_EQ(sampler->Indices(Int(r, "epoch")), r.numbers) << r.Describe();
    ++checked;
  }
  EXPECT_EQ(checked, 72);
}

// HF's Trainer path: one global generator feeds the DataLoader's base-seed draw and the
// sampler's randperm, epoch after epoch.
TEST(SamplerGoldenTest, SharedGeneratorMatchesHfTrainerGlobalStream) {
  const std::vector<Record> records = LoadGolden();
  std::map<std::string, std::vector<int64_t>> lengths;
  for (const Record& r : records) {
    if (r.kind == "lengths") lengths[r.fields.at("name")] = r.numbers;
  }
  std::map<std::string, std::vector<const Record*>> runs;  // epochs of one run, in file order
  for (const Record& r : records) {
    if (r.kind != "shared") continue;
    runs[r.fields.at("lengths") + "/" + r.fields.at("manual_seed")].push_back(&r);
  }
  ASSERT_EQ(runs.size(), 6u);
  for (const auto& [key, epochs] : runs) {
    const Record& first = *epochs[0];
    at::Generator global = at::make_generator<at::CPUGeneratorImpl>(Uint(first, "manual_seed"));
    ASSERT_OK_AND_ASSIGN(auto sampler, LengthGroupedSampler::CreateSharedGenerator(
                                           lengths.at(first.fields.at("lengths")),
                                           Int(first, "batch"), global, Mult(first)));
    for (size_t e = 0; e < epochs.size(); ++e) {
      ASSERT_EQ(Int(*epochs[e], "epoch"), static_cast<int64_t>(e)) << key;
      DrawIteratorBaseSeed(global);  // the DataLoader's, as each epoch begins
      EXPECT_EQ(sampler->Indices(static_cast<int64_t>(e)), epochs[e]->numbers)
          << epochs[e]->Describe();
    }
  }
}

}  // namespace
}  // namespace loom::data
