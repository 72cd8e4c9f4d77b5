#include "trainer/numpy_mean.h"

#include <cmath>
#include <cstdint>
#include <vector>

#include "gtest/gtest.h"

namespace loom::trainer {
namespace {

// float32((i * 7919 % 1000) / 997), i < n: the expected means are numpy 1.24's
// `np.array(values, np.float32).mean()`.
std::vector<float> Values(int64_t n) {
  std::vector<float> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(static_cast<float>((i * 7919 % 1000) / 997.0));
  return v;
}

TEST(NumpyFloat32MeanTest, MatchesNumpyBitForBit) {
  EXPECT_EQ(NumpyFloat32Mean(Values(5)), 0x1.47a39p-1f);       // under 8: one running sum
  EXPECT_EQ(NumpyFloat32Mean(Values(100)), 0x1.f7c88ap-2f);    // one block of 8 sums
  EXPECT_EQ(NumpyFloat32Mean(Values(1000)), 0x1.008376p-1f);   // pairwise halves
  EXPECT_EQ(NumpyFloat32Mean(Values(20000)), 0x1.008376p-1f);  // 8192-value chunks
}

TEST(NumpyFloat32MeanTest, IsNotTheDoubleMean) {
  // The same values averaged in double and rounded once: another float.
  const std::vector<float> v = Values(1000);
  double sum = 0;
  for (float x : v) sum += x;
  EXPECT_EQ(static_cast<float>(sum / v.size()), 0x1.008378p-1f);
  EXPECT_NE(NumpyFloat32Mean(v), static_cast<float>(sum / v.size()));
}

TEST(NumpyFloat32MeanTest, EmptyIsNan) { EXPECT_TRUE(std::isnan(NumpyFloat32Mean({}))); }

}  // namespace
}  // namespace loom::trainer
