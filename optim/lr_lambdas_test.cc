// Closed-form values of HF's schedule factors (the Python comparison over whole runs is in
// //tests/optim:scheduler_golden_test).
#include "optim/lr_lambdas.h"

#include <cmath>

#include "gtest/gtest.h"

namespace loom::optim {
namespace {

TEST(LrLambdasTest, WarmupRampIsSharedAndStartsAtZero) {
  for (int64_t s : {0, 1, 2, 3}) {
    const double ramp = s / 4.0;
    EXPECT_EQ(LinearLambda(s, 4, 10), ramp);
    EXPECT_EQ(ConstantWithWarmupLambda(s, 4), ramp);
    EXPECT_EQ(CosineLambda(s, 4, 10, 0.5), ramp);
    EXPECT_EQ(CosineHardRestartsLambda(s, 4, 10, 1), ramp);
    EXPECT_EQ(PolynomialLambda(s, 4, 10, 1e-7, 1.0, 1e-3), ramp);
    EXPECT_EQ(InverseSqrtLambda(s, 4, 4), ramp);
    EXPECT_EQ(CosineWithMinLrLambda(s, 4, 10, 0.5, 0.1), ramp);
    EXPECT_EQ(WarmupStableDecayLambda(s, 4, 2, 2, 0.5, 0.0), ramp);
  }
  EXPECT_EQ(ConstantLambda(0), 1.0);
  EXPECT_EQ(ConstantLambda(12345), 1.0);
}

TEST(LrLambdasTest, Linear) {
  EXPECT_EQ(LinearLambda(4, 4, 10), 1.0);
  EXPECT_EQ(LinearLambda(7, 4, 10), 0.5);
  EXPECT_EQ(LinearLambda(10, 4, 10), 0.0);
  EXPECT_EQ(LinearLambda(15, 4, 10), 0.0);  // clamped at 0 past the end
  EXPECT_EQ(LinearLambda(0, 0, 10), 1.0);   // no warmup: full lr at once
  EXPECT_EQ(LinearLambda(3, 0, 0), 0.0);    // max(1, ...) keeps the division defined
}

TEST(LrLambdasTest, CosineAndRestarts) {
  EXPECT_EQ(CosineLambda(4, 4, 10, 0.5), 1.0);
  EXPECT_NEAR(CosineLambda(7, 4, 10, 0.5), 0.5, 1e-15);  // half way: cos(pi/2)
  EXPECT_NEAR(CosineLambda(10, 4, 10, 0.5), 0.0, 1e-15);
  EXPECT_NEAR(CosineLambda(10, 4, 10, 1.0), 1.0, 1e-15);  // a full wave comes back up
  // Two hard restarts over 8 decay steps: the factor jumps back to 1 at the restart.
  EXPECT_EQ(CosineHardRestartsLambda(2, 2, 10, 2), 1.0);
  EXPECT_NEAR(CosineHardRestartsLambda(4, 2, 10, 2), 0.5, 1e-15);
  EXPECT_EQ(CosineHardRestartsLambda(6, 2, 10, 2), 1.0);
  EXPECT_EQ(CosineHardRestartsLambda(10, 2, 10, 2), 0.0);
  EXPECT_EQ(CosineHardRestartsLambda(11, 2, 10, 2), 0.0);
}

TEST(LrLambdasTest, Polynomial) {
  const double lr = 1e-2, end = 1e-4;
  EXPECT_EQ(PolynomialLambda(2, 2, 10, end, 2.0, lr), 1.0);
  // (lr - end) * (1/2)^2 + end, relative to lr.
  EXPECT_NEAR(PolynomialLambda(6, 2, 10, end, 2.0, lr), ((lr - end) * 0.25 + end) / lr, 1e-15);
  EXPECT_NEAR(PolynomialLambda(10, 2, 10, end, 2.0, lr), end / lr, 1e-15);
  EXPECT_EQ(PolynomialLambda(11, 2, 10, end, 2.0, lr), end / lr);
}

TEST(LrLambdasTest, InverseSqrt) {
  EXPECT_EQ(InverseSqrtLambda(4, 4, 4), 1.0);
  EXPECT_EQ(InverseSqrtLambda(16, 4, 4), 0.5);  // 1/sqrt(16/4)
  EXPECT_EQ(InverseSqrtLambda(0, 0, 10000), 1.0);
  EXPECT_EQ(InverseSqrtLambda(30000, 0, 10000), 1.0 / std::sqrt(4.0));
}

TEST(LrLambdasTest, CosineWithMinLr) {
  EXPECT_EQ(CosineWithMinLrLambda(4, 4, 10, 0.5, 0.1), 1.0);
  EXPECT_NEAR(CosineWithMinLrLambda(7, 4, 10, 0.5, 0.1), 0.55, 1e-15);
  EXPECT_NEAR(CosineWithMinLrLambda(10, 4, 10, 0.5, 0.1), 0.1, 1e-15);
}

TEST(LrLambdasTest, WarmupStableDecay) {
  // warmup 2, stable 3 (steps 2..4), decay 4 (steps 5..8), then min_lr_ratio.
  for (int64_t s : {2, 3, 4}) EXPECT_EQ(WarmupStableDecayLambda(s, 2, 3, 4, 0.5, 0.2), 1.0);
  EXPECT_DOUBLE_EQ(WarmupStableDecayLambda(5, 2, 3, 4, 0.5, 0.2), 1.0);
  EXPECT_NEAR(WarmupStableDecayLambda(7, 2, 3, 4, 0.5, 0.2), 0.8 * 0.5 + 0.2, 1e-15);
  EXPECT_EQ(WarmupStableDecayLambda(9, 2, 3, 4, 0.5, 0.2), 0.2);
  EXPECT_EQ(WarmupStableDecayLambda(100, 2, 3, 4, 0.5, 0.2), 0.2);
}

}  // namespace
}  // namespace loom::optim
