// ReplicatedStrategy in the conformance suite: one process, DDP at 2 and 4 ranks, and DeepSpeed's
// ZeRO stage 0 ("DeepSpeed only as DDP") through a --deepspeed config.
#include "gtest/gtest.h"
#include "sharding/strategy_conformance.h"

namespace loom::sharding::testing {
namespace {

[[maybe_unused]] const bool kRegistered = [] {
  RegisterStrategyConformanceTests(
      {.name = "SingleProcess", .world_size = 1, .strategy_name = "single process"});
  RegisterStrategyConformanceTests({.name = "Ddp2", .world_size = 2, .strategy_name = "DDP"});
  RegisterStrategyConformanceTests({.name = "Ddp4", .world_size = 4, .strategy_name = "DDP"});
  RegisterStrategyConformanceTests(
      {.name = "DeepSpeedStage0",
       .world_size = 2,
       .strategy_name = "DDP",
       .configure = [](args::TrainingArguments& a) {
         a.set_deepspeed(R"({"zero_optimization": {"stage": 0}})");
       }});
  return true;
}();

}  // namespace
}  // namespace loom::sharding::testing
