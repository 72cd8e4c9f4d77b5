#include "hpsearch/single_value.h"

#include "gtest/gtest.h"
#include "hpsearch/distribution.h"

namespace loom::hpsearch {
namespace {

TEST(SingleValueTest, OptunasSingle) {
  EXPECT_TRUE(IsSingle(FloatDistribution{2.0, 2.0}));
  EXPECT_FALSE(IsSingle(FloatDistribution{0.0, 1.0}));
  EXPECT_TRUE(IsSingle(FloatDistribution{0.0, 0.05, false, 0.1}));
  EXPECT_FALSE(IsSingle(FloatDistribution{0.0, 0.1, false, 0.1}));
  EXPECT_TRUE(IsSingle(IntDistribution{3, 3}));
  EXPECT_TRUE(IsSingle(IntDistribution{0, 1, false, 2}));
  EXPECT_FALSE(IsSingle(IntDistribution{1, 2, true, 1}));
  EXPECT_TRUE(IsSingle(CategoricalDistribution{{"only"}}));
  EXPECT_FALSE(IsSingle(CategoricalDistribution{{"a", "b"}}));
}

TEST(SingleValueTest, TheValueIsLowOrTheFirstChoice) {
  EXPECT_EQ(SingleValue(FloatDistribution{2.5, 2.5}), 2.5);
  EXPECT_EQ(SingleValue(IntDistribution{7, 7}), 7.0);
  EXPECT_EQ(SingleValue(CategoricalDistribution{{"only"}}), 0.0);
}

}  // namespace
}  // namespace loom::hpsearch
