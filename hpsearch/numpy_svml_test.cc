#include "hpsearch/numpy_svml.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>

#include "gtest/gtest.h"

// Goldens: numpy 1.24.2's np.log / np.exp / np.log1p / np.expm1 on an AVX-512 machine
// (Debian's /usr/bin/python3), at arguments where SVML's result differs from the C library's
// by one unit in the last place. Where this CPU lacks AVX-512, numpy (and these functions) use
// the C library, which the test then expects.
namespace loom::hpsearch::numpy {
namespace {

double FromBits(uint64_t bits) {
  double d;
  std::memcpy(&d, &bits, sizeof d);
  return d;
}

struct Golden {
  const char* function;
  uint64_t x;
  uint64_t numpy;  // SVML's bits
};

constexpr Golden kGoldens[] = {
    {"Log", 0x3fa0927a64207442, 0xc00b71de033c76af},
    {"Log", 0x4019a67866a19a96, 0x3ffdbb6ec0b23a7f},
    {"Log", 0x4008000000000000, 0x3ff193ea7aad030a},  // log(3)
    {"Log", 0x000c000000000000, 0xc086257909bce36d},  // a subnormal
    {"Exp", 0x4015152334850f7c, 0x4068514e8d524058},
    {"Exp", 0x4028f3c2cf052000, 0x410ffb7754faeb7a},
    {"Exp", 0xc029000000000000, 0x3ecf42ed3f68e691},  // exp(-12.5)
    {"Log1p", 0xbfe610c68d217c38, 0xbff2b731eb07b7f1},
    {"Log1p", 0x3fd9477ad6c77b56, 0x3fd54dffa53e7cc6},
    {"Expm1", 0xc006817949b162cc, 0xbfee1462d5049164},
    {"Expm1", 0xbfdf3ca09a01ff98, 0xbfd8b7649005c049},
};

double Call(const std::string& function, double x) {
  if (function == "Log") return Log(x);
  if (function == "Exp") return Exp(x);
  if (function == "Log1p") return Log1p(x);
  return Expm1(x);
}

double Libm(const std::string& function, double x) {
  if (function == "Log") return std::log(x);
  if (function == "Exp") return std::exp(x);
  if (function == "Log1p") return std::log1p(x);
  return std::expm1(x);
}

TEST(NumpySvmlTest, MatchesNumpyOnThisCpu) {
  for (const Golden& g : kGoldens) {
    const double x = FromBits(g.x);
    const double expected = UsesSvml() ? FromBits(g.numpy) : Libm(g.function, x);
    EXPECT_EQ(Call(g.function, x), expected) << g.function << "(" << x << ")";
  }
}

TEST(NumpySvmlTest, SpecialValues) {
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(Log(0.0), -inf);
  EXPECT_TRUE(std::isnan(Log(-1.0)));
  EXPECT_EQ(Log(inf), inf);
  EXPECT_EQ(Log(1.0), 0.0);
  EXPECT_TRUE(std::isnan(Log(std::nan(""))));
  EXPECT_EQ(Exp(0.0), 1.0);
  EXPECT_EQ(Exp(-inf), 0.0);
  EXPECT_EQ(Exp(1000.0), inf);
  EXPECT_EQ(Exp(-1000.0), 0.0);
  EXPECT_EQ(Log1p(-1.0), -inf);
  EXPECT_EQ(Log1p(0.0), 0.0);
  EXPECT_EQ(Expm1(-inf), -1.0);
  EXPECT_EQ(Expm1(0.0), 0.0);
}

// SVML's "la" routines are accurate to 4 units in the last place.
TEST(NumpySvmlTest, StaysWithinAFewUlpOfTheCLibrary) {
  for (double x = -30; x < 30; x += 0.0137) {
    EXPECT_NEAR(Exp(x), std::exp(x), 1e-15 * std::exp(x));
    EXPECT_NEAR(Expm1(x), std::expm1(x), 1e-15 * std::abs(std::expm1(x)) + 1e-300);
    const double y = std::exp(x);
    EXPECT_NEAR(Log(y), x, 1e-15 * std::abs(x) + 1e-15);
    EXPECT_NEAR(Log1p(y), std::log1p(y), 1e-15 * std::log1p(y));
  }
}

}  // namespace
}  // namespace loom::hpsearch::numpy
