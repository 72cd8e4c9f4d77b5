// Expected strings are Python 3's repr() of the same doubles (run under /usr/bin/python3).
#include "base/python_float.h"

#include <cmath>
#include <limits>

#include "gtest/gtest.h"

namespace loom::base {
namespace {

TEST(PythonFloatReprTest, MatchesPythonRepr) {
  const std::pair<double, const char*> cases[] = {
      {5e-05, "5e-05"},
      {3.0, "3.0"},
      {1e16, "1e+16"},
      {0.0001, "0.0001"},
      {1e-05, "1e-05"},
      {123456789.125, "123456789.125"},
      {1234567890123456.0, "1234567890123456.0"},
      {0.1, "0.1"},
      {1.0 / 3, "0.3333333333333333"},
      {-2.5e-7, "-2.5e-07"},
      {1e300, "1e+300"},
      {5e-324, "5e-324"},
      {0.1 + 0.2, "0.30000000000000004"},
      {100.0, "100.0"},
      {1e15, "1000000000000000.0"},
      {12345678901234567890.0, "1.2345678901234567e+19"},
      {0.0, "0.0"},
      {-0.0, "-0.0"},
  };
  for (const auto& [x, repr] : cases) EXPECT_EQ(PythonFloatRepr(x), repr) << repr;
}

TEST(PythonFloatReprTest, NonFinite) {
  EXPECT_EQ(PythonFloatRepr(std::numeric_limits<double>::quiet_NaN()), "nan");
  EXPECT_EQ(PythonFloatRepr(std::numeric_limits<double>::infinity()), "inf");
  EXPECT_EQ(PythonFloatRepr(-std::numeric_limits<double>::infinity()), "-inf");
}

}  // namespace
}  // namespace loom::base
