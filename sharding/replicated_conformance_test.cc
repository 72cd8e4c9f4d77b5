// ReplicatedStrategy in the conformance suite: one process, DDP at 2 and 4 ranks, and DeepSpeed's
// ZeRO stage 0 ("DeepSpeed only as DDP") through a --deepspeed config.
#include "gtest/gtest.h"
#include "sharding/strategy_conformance.h"

namespace loom::sharding::testing {
namespace {

// Everything on every rank: fp32 parameters, their gradients, AdamW's moments and steps.
ModelStateBytes ReplicatedBytes(const SuiteModel& m) {
  return {.parameters = 4 * m.all_numel,
          .gradients = 4 * m.trainable_numel,
          .optimizer_states = 8 * m.trainable_numel + 4 * m.trainable_tensors,
          .master_weights = 0};
}

[[maybe_unused]] const bool kRegistered = [] {
  RegisterStrategyConformanceTests({.name = "SingleProcess",
                                    .world_size = 1,
                                    .strategy_name = "single process",
                                    .expected_bytes = ReplicatedBytes});
  RegisterStrategyConformanceTests(
      {.name = "Ddp2", .world_size = 2, .strategy_name = "DDP", .expected_bytes = ReplicatedBytes});
  RegisterStrategyConformanceTests(
      {.name = "Ddp4", .world_size = 4, .strategy_name = "DDP", .expected_bytes = ReplicatedBytes});
  RegisterStrategyConformanceTests({.name = "DeepSpeedStage0",
                                    .world_size = 2,
                                    .strategy_name = "DDP",
                                    .configure =
                                        [](args::TrainingArguments& a) {
                                          a.set_deepspeed(R"({"zero_optimization": {"stage": 0}})");
                                        },
                                    .expected_bytes = ReplicatedBytes});
  return true;
}();

}  // namespace
}  // namespace loom::sharding::testing
