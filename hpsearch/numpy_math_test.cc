#include "hpsearch/numpy_math.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

// Goldens printed by Debian's /usr/bin/python3 with numpy 1.24.2.
namespace loom::hpsearch::numpy {
namespace {

using ::testing::ElementsAre;

TEST(NumpyMathTest, SumIsPairwiseLikeNumpy) {
  std::vector<double> a;
  for (int i = 0; i < 200; ++i) a.push_back(0.1 * i + 1.0 / (i + 1));
  // numpy.sum: 1995.8780309481215; a left-to-right sum gives 1995.878030948122.
  EXPECT_EQ(Sum(a), 1995.8780309481215);
  EXPECT_EQ(Sum(a.data(), 13), 10.980133755133757);
  EXPECT_EQ(Sum(std::vector<double>{}), 0.0);
}

TEST(NumpyMathTest, ArgSortOrdersTiesAsNumpysQuicksort) {
  std::vector<double> v;
  for (int i = 0; i < 40; ++i) v.push_back((i * 7) % 5);
  // numpy.argsort([float((i * 7) % 5) for i in range(40)])
  EXPECT_THAT(ArgSort(v), ElementsAre(0, 20, 15, 30, 10, 25, 35, 5, 23, 8, 33, 28, 13, 3, 38, 18, 6,
                                      21, 1, 36, 16, 26, 11, 31, 34, 29, 19, 14, 9, 4, 24, 39, 27,
                                      22, 17, 12, 32, 7, 2, 37));
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_THAT(ArgSort({0.5, 0.1, 0.5, nan, 0.1, 0.3}), ElementsAre(1, 4, 5, 0, 2, 3));
  EXPECT_TRUE(ArgSort({}).empty());
}

TEST(NumpyMathTest, ArgSortSortsLargeInputs) {
  std::vector<double> v;
  for (int i = 0; i < 5000; ++i) v.push_back(std::fmod(i * 7919.0, 1013.0));
  const std::vector<int64_t> order = ArgSort(v);
  ASSERT_EQ(order.size(), v.size());
  for (size_t i = 1; i < order.size(); ++i) EXPECT_LE(v[order[i - 1]], v[order[i]]);
}

TEST(NumpyMathTest, Linspace) {
  EXPECT_THAT(Linspace(1.0 / 30, 1.0, 5),
              ElementsAre(0.03333333333333333, 0.275, 0.5166666666666667, 0.7583333333333333, 1.0));
  EXPECT_THAT(Linspace(1.0 / 26, 1.0, 1), ElementsAre(0.038461538461538464));
  EXPECT_TRUE(Linspace(0.04, 1.0, 0).empty());
}

TEST(NumpyMathTest, ArgMaxTakesTheFirstMaximumOrTheFirstNaN) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(ArgMax({1.0, 3.0, 3.0, 2.0}), 1);
  EXPECT_EQ(ArgMax({1.0, nan, 3.0, nan}), 1);
  EXPECT_EQ(ArgMax({}), -1);
  const double row[] = {1.0, nan, 2.0};
  EXPECT_TRUE(std::isnan(Max(row, 3)));
  EXPECT_EQ(Max(row, 1), 1.0);
}

TEST(NumpyMathTest, RoundHalfToEvenAndClip) {
  EXPECT_EQ(Round(0.5), 0.0);
  EXPECT_EQ(Round(1.5), 2.0);
  EXPECT_EQ(Round(2.5), 2.0);
  EXPECT_EQ(Round(-1.5), -2.0);
  EXPECT_EQ(Round(2.4999999999999996), 2.0);
  EXPECT_EQ(Clip(5.0, 0.0, 1.0), 1.0);
  EXPECT_EQ(Clip(-5.0, 0.0, 1.0), 0.0);
  EXPECT_EQ(Clip(0.25, 0.0, 1.0), 0.25);
  EXPECT_TRUE(std::isnan(Clip(std::nan(""), 0.0, 1.0)));
}

}  // namespace
}  // namespace loom::hpsearch::numpy
