#include "rng/python_rng.h"

#include <cstdint>
#include <numeric>

#include "gtest/gtest.h"

// Expected values printed by Debian's /usr/bin/python3 (CPython 3.11, numpy 1.24.2):
//   random.seed(s); k = random.getstate()[1]
//   np.random.seed(s); k = np.random.get_state()[1]
// The sum of all 624 words (mod 2^64) pins the words not listed. python_interop_test compares
// whole states live.

namespace loom::rng {
namespace {

struct Golden {
  uint64_t seed;
  uint32_t w0, w1, w2, w311, w623;
  uint64_t sum;
};

uint64_t Sum(const Mt19937State& s) {
  return std::accumulate(s.key.begin(), s.key.end(), uint64_t{0});
}

void ExpectMatches(const Mt19937State& s, const Golden& g) {
  EXPECT_EQ(s.key[0], g.w0) << g.seed;
  EXPECT_EQ(s.key[1], g.w1) << g.seed;
  EXPECT_EQ(s.key[2], g.w2) << g.seed;
  EXPECT_EQ(s.key[311], g.w311) << g.seed;
  EXPECT_EQ(s.key[623], g.w623) << g.seed;
  EXPECT_EQ(Sum(s), g.sum) << g.seed;
  EXPECT_EQ(s.pos, 624) << g.seed;
}

TEST(PythonRandomStateAfterSeedTest, MatchesCPythonRandomSeed) {
  const Golden cases[] = {
      {0, 2147483648u, 766982754u, 497961170u, 652504502u, 2902720905u, 1289886632581u},
      {42, 2147483648u, 3564348608u, 1266698288u, 3918217378u, 3831079317u, 1406570960303u},
      {1234, 2147483648u, 681931688u, 3687344416u, 3199144549u, 343805460u, 1382038150189u},
      {4294967295u, 2147483648u, 2159790430u, 4274725319u, 3298412812u, 2300076184u,
       1335658544087u},
      // 2^40 + 5: two 32-bit key words.
      {1099511627781u, 2147483648u, 550267540u, 1323789645u, 2509901944u, 2187275131u,
       1342281428491u},
  };
  for (const Golden& g : cases) ExpectMatches(PythonRandomStateAfterSeed(g.seed), g);
}

TEST(NumpyStateAfterSeedTest, MatchesNumpyRandomSeed) {
  const Golden cases[] = {
      {0, 0u, 1u, 1812433255u, 200524822u, 1796872496u, 1331279006190u},
      {42, 42u, 3107752595u, 1895908407u, 1303595780u, 26719530u, 1360939282068u},
      {1234, 1234u, 3159640283u, 4062961311u, 56319052u, 3064478787u, 1333207943307u},
      {4294967295u, 4294967295u, 1340201581u, 3941791902u, 2715907864u, 3413567280u,
       1376677664014u},
  };
  for (const Golden& g : cases) {
    const std::optional<Mt19937State> s = NumpyStateAfterSeed(g.seed);
    ASSERT_TRUE(s.has_value()) << g.seed;
    ExpectMatches(*s, g);
  }
}

TEST(NumpyStateAfterSeedTest, SeedsFrom2To32AreOutOfNumpysRange) {
  EXPECT_FALSE(NumpyStateAfterSeed(uint64_t{1} << 32).has_value());
  EXPECT_FALSE(NumpyStateAfterSeed(~uint64_t{0}).has_value());
}

}  // namespace
}  // namespace loom::rng
