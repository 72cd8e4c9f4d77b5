// ParamShardStrategy in the conformance suite: FSDP full_shard and shard_grad_op (--fsdp with
// auto_wrap over the suite's Linear layers) at 2 and 4 ranks, with and without prefetching,
// hybrid_shard and hybrid_shard_zero2 at 4 ranks as 2 nodes x 2,
// FSDP without auto_wrap (the whole model one root unit), and ZeRO-3 through a --deepspeed
// config (which prefetches by default) at 1, 2 and 4 ranks.
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "sharding/strategy_conformance.h"

namespace loom::sharding::testing {
namespace {

// Each unit's shard (ceil(n / W) elements of its flat buffer padded to a multiple of W) and its
// gradient and AdamW moments, one AdamW step per shard; the root (the model's own trainable
// parameter) whole as well, since it stays gathered; the frozen parameter whole.
ModelStateBytes ParamShardBytes(const SuiteModel& m, bool units) {
  const auto part = [&](int64_t n) { return (n + m.world_size - 1) / m.world_size; };
  int64_t shards = 0;
  int64_t tensors = 0;
  int64_t root = m.root_trainable_numel;
  if (units) {
    for (int64_t n : m.unit_numels) {
      shards += part(n);
      ++tensors;
    }
  } else {
    for (int64_t n : m.unit_numels) root += n;
  }
  shards += part(root);
  ++tensors;
  return ModelStateBytes{
      .parameters = 4 * shards + 4 * part(root) * m.world_size + 4 * m.frozen_numel,
      .gradients = 4 * shards,
      .optimizer_states = 8 * shards + 4 * tensors,
      .master_weights = 0};
}

void RegisterFsdp(const std::string& mode, int world, bool auto_wrap,
                  const std::string& prefetch = "") {
  const std::string label = mode == "full_shard" ? "FullShard" : "ShardGradOp";
  RegisterStrategyConformanceTests(
      {.name = absl::StrCat("Fsdp", label, auto_wrap ? "" : "NoWrap",
                            prefetch.empty() ? "" : "Prefetch", prefetch, "World", world),
       .world_size = world,
       .strategy_name = absl::StrCat("FSDP ", mode),
       .configure =
           [=](args::TrainingArguments& a) {
             a.add_fsdp(mode);
             if (auto_wrap) a.add_fsdp("auto_wrap");
             a.set_fsdp_config(prefetch.empty()
                                   ? R"({"transformer_layer_cls_to_wrap": ["Linear"]})"
                                   : absl::StrCat(R"({"transformer_layer_cls_to_wrap": ["Linear"],
                                                     "forward_prefetch": true,
                                                     "backward_prefetch": "backward_)",
                                                  prefetch == "Pre" ? "pre" : "post", R"("})"));
           },
       .expected_bytes = [=](const SuiteModel& m) { return ParamShardBytes(m, auto_wrap); }});
}

// FSDP's hybrid_shard at 4 ranks as 2 nodes of 2 (LOCAL_WORLD_SIZE=2): sharded within each
// node, so each rank holds what full_shard at 2 ranks would.
void RegisterHybrid(const std::string& mode) {
  RegisterStrategyConformanceTests(
      {.name = mode == "hybrid_shard" ? "FsdpHybridShard2x2" : "FsdpHybridShardZero2x2",
       .world_size = 4,
       .strategy_name = absl::StrCat("FSDP ", mode),
       .configure =
           [=](args::TrainingArguments& a) {
             ::setenv("LOCAL_WORLD_SIZE", "2", 1);
             a.add_fsdp(mode);
             a.add_fsdp("auto_wrap");
             a.set_fsdp_config(R"({"transformer_layer_cls_to_wrap": ["Linear"]})");
           },
       .expected_bytes =
           [](const SuiteModel& m) {
             SuiteModel node = m;
             node.world_size = 2;
             node.rank = m.rank % 2;
             return ParamShardBytes(node, true);
           }});
}

void RegisterZero3(int world) {
  RegisterStrategyConformanceTests(
      {.name = absl::StrCat("Zero3World", world),
       .world_size = world,
       .strategy_name = "ZeRO-3",
       .configure =
           [](args::TrainingArguments& a) {
             // No persistence threshold, so both layers are partitioned.
             a.set_deepspeed(
                 R"({"zero_optimization": {"stage": 3, "stage3_param_persistence_threshold": 0}})");
           },
       .expected_bytes = [](const SuiteModel& m) { return ParamShardBytes(m, true); }});
}

[[maybe_unused]] const bool kRegistered = [] {
  RegisterFsdp("full_shard", 2, true);
  RegisterFsdp("full_shard", 4, true);
  RegisterFsdp("shard_grad_op", 2, true);
  RegisterFsdp("shard_grad_op", 4, true);
  RegisterFsdp("full_shard", 2, false);
  // Prefetching the next unit's all-gather (forward, and backward_pre / backward_post).
  RegisterFsdp("full_shard", 2, true, "Pre");
  RegisterFsdp("full_shard", 4, true, "Post");
  RegisterFsdp("shard_grad_op", 4, true, "Pre");
  RegisterHybrid("hybrid_shard");
  RegisterHybrid("hybrid_shard_zero2");
  RegisterZero3(1);
  RegisterZero3(2);
  RegisterZero3(4);
  return true;
}();

}  // namespace
}  // namespace loom::sharding::testing
