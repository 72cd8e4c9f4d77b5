#include "hpsearch/truncnorm.h"

#include <cmath>
#include <limits>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hpsearch/numpy_random.h"

// Goldens: optuna 4.6's optuna/samplers/_tpe/_truncnorm.py and _erf.py with numpy 1.24.2
// (Debian's /usr/bin/python3). The C library parts agree bit for bit; the parts numpy
// vectorizes agree to a few units in the last place (bit for bit on AVX-512 CPUs), hence
// the 1e-14 relative tolerance.
namespace loom::hpsearch::truncnorm {
namespace {

constexpr double kRel = 1e-14;

void ExpectNear(const std::vector<double>& actual, const std::vector<double>& expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    if (std::isnan(expected[i])) {
      EXPECT_TRUE(std::isnan(actual[i])) << i;
      continue;
    }
    if (std::isinf(expected[i])) {
      EXPECT_EQ(actual[i], expected[i]) << i;
      continue;
    }
    EXPECT_NEAR(actual[i], expected[i], kRel * std::abs(expected[i])) << "element " << i;
  }
}

TEST(TruncnormTest, LogNdtrMatchesOptunaExactly) {
  // [_log_ndtr_single(a) for a in [-30.0, -20.5, -3.0, 0.0, 2.0, 7.0]] (the first two take
  // the asymptotic series).
  EXPECT_EQ(LogNdtr(-30.0), -454.32124395634315);
  EXPECT_EQ(LogNdtr(-20.5), -214.0667289632638);
  EXPECT_EQ(LogNdtr(-3.0), -6.607726221510348);
  EXPECT_EQ(LogNdtr(0.0), -0.6931471805599453);
  EXPECT_EQ(LogNdtr(2.0), -0.02301290932896349);
  EXPECT_EQ(LogNdtr(7.0), -1.279812543885835e-12);
}

TEST(TruncnormTest, LogGaussMassCoversLeftRightAndCentralIntervals) {
  ExpectNear(LogGaussMass({-1.0, -3.0, 0.5, -0.2, 2.0}, {2.0, -1.0, 3.0, 0.1, 8.0}),
             {-0.20016629432446262, -1.8495664205476083, -1.1802965106326773, -2.1278963696652227,
              -3.7831843336820588});
}

TEST(TruncnormTest, PpfMatchesOptuna) {
  ExpectNear(
      Ppf({0.3, 0.9, 0.0, 1e-9, 0.5}, {-1.0, -3.0, 0.5, -0.2, 2.0}, {2.0, -1.0, 3.0, 0.1, 8.0}),
      {-0.24240381788922674, -1.0672710948611959, 0.5, -0.19999999969546142, 2.2776048388094483});
  const std::vector<double> degenerate = Ppf({0.5, 1.0}, {1.0, -1.0}, {1.0, 2.0});
  EXPECT_TRUE(std::isnan(degenerate[0]));  // a == b
  EXPECT_EQ(degenerate[1], 2.0);           // q == 1
  EXPECT_TRUE(Ppf({}, {}, {}).empty());
}

TEST(TruncnormTest, NdtriExpMatchesOptuna) {
  ExpectNear(NdtriExp({-0.5, -1e-3, -30.0, -3.0}),
             {0.27028802073873576, 3.0903807869170454, -7.357666815008751, -1.646921720527715});
}

TEST(TruncnormTest, LogPdf) {
  // logpdf([0.0, 0.7, -2.0, 5.0], a=-1.5, b=2.5, loc=0.3, scale=0.8)
  const std::vector<double> x = {0.0, 0.7, -2.0, 5.0};
  ExpectNear(LogPdf(x, {-1.5}, {2.5}, {0.3}, {0.8}),
             {-0.6902875734924352, -0.7449750734924352, -std::numeric_limits<double>::infinity(),
              -std::numeric_limits<double>::infinity()});
}

TEST(TruncnormTest, RvsDrawsOneUniformPerElement) {
  // rvs([-1, 0.5, -4], [1, 2, -3], [0.1, 0.2, 0.3], [1, 0.5, 2], RandomState(3))
  NumpyRandomState rng(3);
  ExpectNear(Rvs({-1.0, 0.5, -4.0}, {1.0, 2.0, -3.0}, {0.1, 0.2, 0.3}, {1.0, 0.5, 2.0}, rng),
             {0.18703761716093228, 0.8236116691257842, -6.384982771451148});
  EXPECT_EQ(rng.draws(), 6u);
}

TEST(TruncnormTest, ErfSwitchesToOptunasPolynomialAt2000Elements) {
  // erf(numpy.linspace(-7, 7, 2001)) takes optuna's FreeBSD-derived polynomial, which differs
  // from math.erf in the last place at some points; below 2000 elements it is math.erf.
  std::vector<double> x(2001);
  for (int i = 0; i < 2001; ++i) x[i] = -7.0 + i * (14.0 / 2000);
  x[2000] = 7.0;
  const std::vector<double> big = Erf(x);
  EXPECT_EQ(big[0], -1.0);
  EXPECT_EQ(big[1000], 0.0);
  EXPECT_NEAR(big[300], -0.999999999995781, 1e-15);
  EXPECT_NEAR(big[900], -0.6778011938374185, kRel);
  EXPECT_NEAR(big[1500], 0.9999992569016276, kRel);
  EXPECT_EQ(big[2000], 1.0);
  // linspace(-7, 7, 2001)[831] == -1.1829999999999998: optuna's polynomial gives
  // -0.9056755868197942, math.erf -0.9056755868197941.
  std::vector<double> one_point(2000, 0.0);
  one_point[0] = -1.1829999999999998;
  EXPECT_NEAR(Erf(one_point)[0], -0.9056755868197942, 1e-16);
  EXPECT_EQ(Erf({-1.1829999999999998})[0], -0.9056755868197941);
  // erf([0.3, -1.2, 5.9]): math.erf's values.
  EXPECT_THAT(Erf({0.3, -1.2, 5.9}),
              ::testing::ElementsAre(0.3286267594591274, -0.9103139782296353, 0.9999999999999999));
}

}  // namespace
}  // namespace loom::hpsearch::truncnorm
