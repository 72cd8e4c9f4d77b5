#include "hpsearch/numpy_random.h"

#include <cstdint>
#include <numeric>
#include <vector>

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

// Goldens printed by Debian's /usr/bin/python3 with numpy 1.24.2 (repr of each value), e.g.
//   rs = numpy.random.RandomState(42); rs.random_sample(4)
namespace loom::hpsearch {
namespace {

using ::loom::base::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(NumpyRandomStateTest, RandomSampleMatchesNumpy) {
  NumpyRandomState rng(42);
  EXPECT_EQ(rng.RandomSample(), 0.3745401188473625);
  EXPECT_EQ(rng.RandomSample(), 0.9507143064099162);
  EXPECT_EQ(rng.RandomSample(), 0.7319939418114051);
  EXPECT_EQ(rng.RandomSample(), 0.5986584841970366);
  EXPECT_EQ(rng.draws(), 8u);
}

TEST(NumpyRandomStateTest, RawOutputsAreMt19937) {
  // rs = RandomState(3); rs.randint(0, 2**32, size=3, dtype=numpy.uint64)
  NumpyRandomState rng(3);
  EXPECT_EQ(rng.NextUint32(), 2365658986u);
  EXPECT_EQ(rng.NextUint32(), 303761048u);
  EXPECT_EQ(rng.NextUint32(), 3041471737u);
}

TEST(NumpyRandomStateTest, UniformMatchesNumpy) {
  // rs = RandomState(0); rs.uniform(-5, 5); rs.uniform(1e-5, 3.0);
  // rs.uniform([-5.5, 0.0], [5.5, 1.0])
  NumpyRandomState rng(0);
  EXPECT_EQ(rng.Uniform(-5, 5), 0.48813503927324753);
  EXPECT_EQ(rng.Uniform(1e-5, 3.0), 2.145570947223595);
  EXPECT_EQ(rng.Uniform(-5.5, 5.5), 1.1303971367880825);
  EXPECT_EQ(rng.Uniform(0.0, 1.0), 0.5448831829968969);
}

TEST(NumpyRandomStateTest, LargestSeed) {
  // rs = RandomState(4294967295); rs.random_sample(); rs.randint(0, 7)
  NumpyRandomState rng(4294967295u);
  EXPECT_EQ(rng.RandomSample(), 0.0976320289940138);
  EXPECT_EQ(rng.RandInt(0, 7), 4);
}

TEST(NumpyRandomStateTest, ChoiceRandIntShuffleMatchNumpy) {
  // rs = RandomState(7); rs.choice(4, p=[0.1, 0.2, 0.3, 0.4], size=10);
  // [rs.randint(0, n) for n in [1, 2, 3, 5, 17, 1000]]; rs.randint(0, 2**40);
  // rs.randint(-3, 2**33); x = list(range(10)); rs.shuffle(x); rs.random_sample()
  NumpyRandomState rng(7);
  ASSERT_OK_AND_ASSIGN(std::vector<int64_t> idx, rng.Choice(4, {0.1, 0.2, 0.3, 0.4}, 10));
  EXPECT_THAT(idx, ElementsAre(0, 3, 2, 3, 3, 2, 2, 0, 1, 2));
  std::vector<int64_t> ints;
  for (int64_t n : {1, 2, 3, 5, 17, 1000}) ints.push_back(rng.RandInt(0, n));
  EXPECT_THAT(ints, ElementsAre(0, 0, 0, 4, 0, 75));
  EXPECT_EQ(rng.RandInt(0, int64_t{1} << 40), 237460777210);
  EXPECT_EQ(rng.RandInt(-3, int64_t{1} << 33), 916483113);
  std::vector<int> x(10);
  std::iota(x.begin(), x.end(), 0);
  rng.Shuffle(x);
  EXPECT_THAT(x, ElementsAre(4, 2, 6, 1, 3, 7, 9, 0, 8, 5));
  EXPECT_EQ(rng.RandomSample(), 0.2303028790209648);
}

TEST(NumpyRandomStateTest, ChoiceOfAListIsRandInt) {
  // rs = RandomState(11); rs.choice([5, 9, 2, 7]) twice -> 9, 7
  NumpyRandomState rng(11);
  const std::vector<int> list = {5, 9, 2, 7};
  EXPECT_EQ(list[rng.RandInt(0, 4)], 9);
  EXPECT_EQ(list[rng.RandInt(0, 4)], 7);
}

TEST(NumpyRandomStateTest, RestoreByDrawCountContinuesTheStream) {
  // rs = RandomState(3); rs.randint(0, 2**32 - 1, size=1001, dtype=numpy.uint64);
  // rs.random_sample() -> 0.8370286489451046
  NumpyRandomState rng(3);
  for (int i = 0; i < 1001; ++i) rng.RandInt(0, (int64_t{1} << 32) - 1);
  const uint64_t draws = rng.draws();
  NumpyRandomState restored = NumpyRandomState::Restore(3, draws);
  EXPECT_EQ(restored.draws(), draws);
  EXPECT_EQ(rng.RandomSample(), 0.8370286489451046);
  EXPECT_EQ(restored.RandomSample(), 0.8370286489451046);

  NumpyRandomState discarded(3);
  discarded.Discard(draws);
  EXPECT_EQ(discarded.RandomSample(), 0.8370286489451046);
}

TEST(NumpyRandomStateTest, ChoiceRefusesBadProbabilitiesWithoutDrawing) {
  NumpyRandomState rng(1);
  EXPECT_THAT(rng.Choice(2, {0.5}, 1),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("must have same size")));
  EXPECT_THAT(rng.Choice(2, {0.5, 0.6}, 1),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("do not sum to 1")));
  EXPECT_THAT(rng.Choice(2, {1.5, -0.5}, 1),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not non-negative")));
  EXPECT_THAT(rng.Choice(0, {}, 1),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("greater than 0")));
  EXPECT_EQ(rng.draws(), 0u);
}

}  // namespace
}  // namespace loom::hpsearch
