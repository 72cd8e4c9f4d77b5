// The kernels by hand on single elements (closed forms of the first step), every ISA path on
// the same inputs giving the same bits (no FMA contraction), the bf16 rounding (ties to even, NaN),
// and the path choice (a path the CPU lacks runs as the widest it has).
#include "optim/cpu_optim_kernels.h"

#include <c10/util/BFloat16.h>
#include <torch/torch.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "gtest/gtest.h"

namespace loom::optim {
namespace {

TEST(CpuOptimKernelsTest, AdamWFirstStepByHand) {
  // AdamW's first step moves a parameter by lr against its gradient's sign (bias-corrected).
  for (CpuIsa isa : SupportedCpuIsas()) {
    float p = 1, g = 0.5, m = 0, v = 0;
    AdamUpdate(AdamScalarsFor(0.1, 0.9, 0.999, 1e-8, 0.0, true, true, 1), &p, &g, &m, &v, 1, {},
               isa);
    EXPECT_NEAR(p, 0.9f, 1e-6) << CpuIsaName(isa);
    EXPECT_NEAR(m, 0.05f, 1e-7);
    EXPECT_NEAR(v, 0.00025f, 1e-9);
  }
}

TEST(CpuOptimKernelsTest, AdamL2AndAdagradByHand) {
  for (CpuIsa isa : SupportedCpuIsas()) {
    // Adam with L2 0.5: g' = 0.5 + 0.5 * 2 = 1.5; first step still moves by lr.
    float p = 2, g = 0.5, m = 0, v = 0;
    AdamUpdate(AdamScalarsFor(0.1, 0.9, 0.999, 1e-8, 0.5, false, true, 1), &p, &g, &m, &v, 1, {},
               isa);
    EXPECT_NEAR(m, 0.15f, 1e-7) << CpuIsaName(isa);
    EXPECT_NEAR(p, 1.9f, 1e-6);
    // Adagrad, step 3 with lr_decay 0.5: clr = 0.1 / 2; sum 1 + 4 = 5; p -= 0.05 * 2 / sqrt(5).
    float q = 1, h = 2, sum = 1;
    AdagradUpdate(AdagradScalarsFor(0.1, 0.5, 0.0, 0.0, 3), &q, &h, &sum, 1, {}, isa);
    EXPECT_FLOAT_EQ(sum, 5);
    EXPECT_NEAR(q, 1 - 0.05 * 2 / std::sqrt(5.0), 1e-7);
  }
}

TEST(CpuOptimKernelsTest, PathsAgree) {
  const int64_t n = 100003;  // odd: every path has a tail
  torch::manual_seed(0);
  const torch::Tensor p0 = torch::randn({n}), g = torch::randn({n}), m0 = torch::randn({n}),
                      v0 = torch::rand({n});
  torch::Tensor ref;
  for (CpuIsa isa : SupportedCpuIsas()) {
    torch::Tensor p = p0.clone(), m = m0.clone(), v = v0.clone();
    AdamUpdate(AdamScalarsFor(1e-3, 0.9, 0.999, 1e-8, 0.01, true, true, 7), p.data_ptr<float>(),
               g.data_ptr<float>(), m.data_ptr<float>(), v.data_ptr<float>(), n, {}, isa);
    if (!ref.defined()) {
      ref = p;
      EXPECT_FALSE(torch::equal(p, p0));
      continue;
    }
    EXPECT_TRUE(torch::equal(p, ref)) << CpuIsaName(isa);  // no FMA contraction: same bits
  }
}

TEST(CpuOptimKernelsTest, Bf16CopyRoundsLikeC10) {
  // Values around ties, subnormals, infinities and a NaN; the update is the identity
  // (lr 0) so the copy is the input rounded.
  std::vector<float> values = {1.0f, 1.00390625f, 1.01171875f, -3.3e-39f, 65504.f, 3.4e38f,
                               std::numeric_limits<float>::infinity(),
                               std::numeric_limits<float>::quiet_NaN(), 1.0078125f};
  for (uint32_t bits : {0x3F808000u, 0x3F818000u, 0x3F80FFFFu}) {
    float f;
    std::memcpy(&f, &bits, 4);
    values.push_back(f);
  }
  for (CpuIsa isa : SupportedCpuIsas()) {
    std::vector<float> p = values, g(values.size(), 0.f), sum(values.size(), 1.f);
    std::vector<c10::BFloat16> out(values.size());
    AdagradUpdate(AdagradScalarsFor(0.0, 0, 0, 1e-10, 1), p.data(), g.data(), sum.data(),
                  static_cast<int64_t>(p.size()), HalfCopy{out.data(), at::kBFloat16}, isa);
    for (size_t i = 0; i < values.size(); ++i) {
      EXPECT_EQ(out[i].x, c10::BFloat16(values[i]).x) << CpuIsaName(isa) << " value " << i;
    }
  }
}

TEST(CpuOptimKernelsTest, DetectionNamesAPathThisCpuRuns) {
  const auto isas = SupportedCpuIsas();
  ASSERT_FALSE(isas.empty());
  EXPECT_EQ(isas.front(), CpuIsa::kScalar);
  EXPECT_EQ(isas.back(), DetectCpuIsa());
  std::cout << "this CPU's widest path: " << CpuIsaName(DetectCpuIsa()) << "\n";
  // Asking for a wider path than the CPU has runs the widest it has (no illegal instruction).
  float p = 1, g = 0.5, m = 0, v = 0;
  AdamUpdate(AdamScalarsFor(0.1, 0.9, 0.999, 1e-8, 0.0, true, true, 1), &p, &g, &m, &v, 1, {},
             CpuIsa::kAvx512);
  EXPECT_NEAR(p, 0.9f, 1e-6);
}

}  // namespace
}  // namespace loom::optim
