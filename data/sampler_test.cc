// Properties and errors of the samplers. Exact orders against Python torch 1.13 are in
// //tests/data:sampler_golden_test.
#include "data/sampler.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <memory>
#include <numeric>
#include <vector>

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::data {
namespace {

using base::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

std::vector<int64_t> Iota(int64_t n) {
  std::vector<int64_t> v(n);
  std::iota(v.begin(), v.end(), 0);
  return v;
}

bool IsPermutation(std::vector<int64_t> v, int64_t n) {
  std::sort(v.begin(), v.end());
  return v == Iota(n);
}

TEST(SequentialSamplerTest, YieldsZeroToNMinusOneEveryEpoch) {
  SequentialSampler s(5);
  EXPECT_EQ(s.Size(), 5);
  EXPECT_THAT(s.Indices(0), ElementsAre(0, 1, 2, 3, 4));
  EXPECT_THAT(s.Indices(9), ElementsAre(0, 1, 2, 3, 4));
  EXPECT_THAT(SequentialSampler(-3).Indices(0), IsEmpty());
}

TEST(RandomSamplerTest, EpochEIsTheSeedPlusEPermutation) {
  const RandomSampler s(50, 42);
  for (int64_t e = 0; e < 3; ++e) {
    const std::vector<int64_t> order = s.Indices(e);
    EXPECT_TRUE(IsPermutation(order, 50));
    EXPECT_EQ(order, s.Indices(e)) << "not a pure function of the epoch";
    EXPECT_EQ(order, RandomSampler(50, 42 + e).Indices(0));
  }
  EXPECT_NE(s.Indices(0), s.Indices(1));
  EXPECT_THAT(RandomSampler(0, 1).Indices(0), IsEmpty());
}

at::Generator Gen(uint64_t seed) { return at::make_generator<at::CPUGeneratorImpl>(seed); }

TEST(GetLengthGroupedIndicesTest, OneMegabatchSortsEverythingLongestFirst) {
  // Distinct lengths and a megabatch covering all 7 examples: the permutation cannot matter.
  const std::vector<int64_t> lengths = {4, 9, 1, 7, 3, 8, 2};
  EXPECT_THAT(GetLengthGroupedIndices(lengths, 4, /*mega_batch_mult=*/2, Gen(5)),
              ElementsAre(1, 5, 3, 0, 4, 6, 2));
}

TEST(GetLengthGroupedIndicesTest, MegabatchesAreSortedAndTheLongestComesFirst) {
  std::vector<int64_t> lengths(203);
  for (size_t i = 0; i < lengths.size(); ++i) lengths[i] = (i * 37) % 101;
  const int64_t batch = 5;
  // Default multiplier: min(203 / 20, 50) = 10, megabatches of 50.
  const std::vector<int64_t> order = GetLengthGroupedIndices(lengths, batch, std::nullopt, Gen(1));
  ASSERT_TRUE(IsPermutation(order, 203));
  EXPECT_EQ(lengths[order[0]], 100);
  int unsorted = 0;
  for (size_t start = 0; start < order.size(); start += 50) {
    for (size_t i = start + 2; i < std::min<size_t>(start + 50, order.size()); ++i) {
      if (lengths[order[i - 1]] < lengths[order[i]]) ++unsorted;
    }
  }
  EXPECT_EQ(unsorted, 0);
}

TEST(GetLengthGroupedIndicesTest, EmptyAndSingle) {
  EXPECT_THAT(GetLengthGroupedIndices({}, 4, std::nullopt, Gen(0)), IsEmpty());
  EXPECT_THAT(GetLengthGroupedIndices({3}, 4, std::nullopt, Gen(0)), ElementsAre(0));
}

TEST(LengthGroupedSamplerTest, SeededModeIsAPureFunctionOfTheEpoch) {
  const std::vector<int64_t> lengths = {5, 1, 4, 4, 2, 9, 3, 3, 8, 7, 1, 6};
  ASSERT_OK_AND_ASSIGN(auto s, LengthGroupedSampler::Create(lengths, 2, 42));
  EXPECT_EQ(s->Size(), 12);
  EXPECT_EQ(s->Indices(1), s->Indices(1));
  EXPECT_EQ(s->Indices(1), GetLengthGroupedIndices(lengths, 2, std::nullopt, Gen(43)));
}

TEST(LengthGroupedSamplerTest, SharedModeAdvancesTheGeneratorEachCall) {
  const std::vector<int64_t> lengths = {5, 1, 4, 4, 2, 9, 3, 3, 8, 7, 1, 6};
  ASSERT_OK_AND_ASSIGN(auto s, LengthGroupedSampler::CreateSharedGenerator(lengths, 2, Gen(7)));
  // The same stream by hand: per epoch the grouping's randperm, nothing else (the DataLoader
  // draws its base seed itself).
  at::Generator g = Gen(7);
  for (int e = 0; e < 3; ++e) {
    EXPECT_EQ(s->Indices(0), GetLengthGroupedIndices(lengths, 2, std::nullopt, g)) << e;
  }
}

TEST(RandomSamplerTest, SharedGeneratorDrawsTheSamplerSeedEachCall) {
  std::unique_ptr<RandomSampler> s = RandomSampler::SharedGenerator(10, Gen(7));
  EXPECT_EQ(s->Size(), 10);
  EXPECT_TRUE(s->shared_generator());
  EXPECT_FALSE(RandomSampler(10, 7).shared_generator());
  // The same stream by hand: per call one int64 random_() as the seed of a fresh generator,
  // and randperm from that; `epoch` plays no part (the DataLoader draws its base seed itself).
  at::Generator g = Gen(7);
  for (int e = 0; e < 3; ++e) {
    const int64_t seed = at::empty({}, at::kLong).random_(g).item<int64_t>();
    const at::Tensor perm = at::randperm(10, Gen(static_cast<uint64_t>(seed)), at::kLong);
    EXPECT_EQ(s->Indices(0),
              std::vector<int64_t>(perm.data_ptr<int64_t>(), perm.data_ptr<int64_t>() + 10))
        << e;
  }
}

TEST(LengthGroupedSamplerTest, RejectsBadArguments) {
  EXPECT_THAT(LengthGroupedSampler::Create({1, 2}, 0, 42),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("batch_size must be >= 1")));
  EXPECT_THAT(LengthGroupedSampler::Create({1, 2}, 2, 42, 0),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("mega_batch_mult")));
  EXPECT_THAT(LengthGroupedSampler::CreateSharedGenerator({1, 2}, 2, at::Generator()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("generator is undefined")));
}

}  // namespace
}  // namespace loom::data
