// ZeroStrategy in the conformance suite: ZeRO-1 and ZeRO-2 through a --deepspeed config, at 1,
// 2 and 4 ranks (4 ranks pad the suite's 53 trainable elements to 56).
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "sharding/strategy_conformance.h"
#include "sharding/zero.h"

namespace loom::sharding::testing {
namespace {

// Full parameters on every rank; the fp32 master partition, its gradient and AdamW's moments
// of it; stage 1 also keeps the full gradients until ZeroGrad, stage 2 drops them.
std::function<ModelStateBytes(const SuiteModel&)> ZeroBytes(int stage) {
  return [stage](const SuiteModel& m) {
    const int64_t part = ZeroAlignedNumel(m.trainable_numel, m.world_size) / m.world_size;
    return ModelStateBytes{.parameters = 4 * m.all_numel,
                           .gradients = 4 * part + (stage == 1 ? 4 * m.trainable_numel : 0),
                           .optimizer_states = 8 * part + 4,
                           .master_weights = 4 * part};
  };
}

void RegisterZero(int stage, int world) {
  RegisterStrategyConformanceTests(
      {.name = absl::StrCat("Zero", stage, "World", world),
       .world_size = world,
       .strategy_name = absl::StrCat("ZeRO-", stage),
       .configure =
           [stage](args::TrainingArguments& a) {
             a.set_deepspeed(absl::StrCat(R"({"zero_optimization": {"stage": )", stage, "}}"));
           },
       .expected_bytes = ZeroBytes(stage)});
}

[[maybe_unused]] const bool kRegistered = [] {
  RegisterZero(1, 2);
  RegisterZero(2, 1);
  RegisterZero(2, 2);
  RegisterZero(2, 4);
  return true;
}();

TEST(ZeroAlignedNumelTest, DeepSpeedsPadding) {
  EXPECT_EQ(ZeroAlignedNumel(53, 1), 54);
  EXPECT_EQ(ZeroAlignedNumel(53, 2), 56);
  EXPECT_EQ(ZeroAlignedNumel(56, 4), 56);
  EXPECT_EQ(ZeroAlignedNumel(57, 4), 64);
  EXPECT_EQ(ZeroAlignedNumel(0, 2), 0);
}

}  // namespace
}  // namespace loom::sharding::testing
