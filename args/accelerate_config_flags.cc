// ImpliedTrainingArgumentsFlags: the TrainingArguments flags an accelerate configuration implies
// for the training script (the mapping is documented in accelerate_config.h).
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "args/accelerate_config.h"
#include "args/field_value.h"
#include "nlohmann/json.hpp"

namespace loom::args {
namespace {

using json = nlohmann::ordered_json;

// accelerate's default fsdp_min_num_params for SIZE_BASED_WRAP.
constexpr int64_t kDefaultMinNumParams = 100000000;

absl::Status FsdpFlags(const AccelerateFsdpConfig& f, std::vector<std::string>* flags) {
  // loom saves an FSDP run's weights whole (accelerate's FULL_STATE_DICT); the per-rank layouts
  // of LOCAL_STATE_DICT and SHARDED_STATE_DICT are not written, so asking for one is refused.
  if (f.state_dict_type.has_value() && *f.state_dict_type != FsdpStateDictType::kFullStateDict) {
    return absl::UnimplementedError(absl::StrCat(
        "fsdp_config.fsdp_state_dict_type: ",
        *f.state_dict_type == FsdpStateDictType::kShardedStateDict ? "SHARDED_STATE_DICT"
                                                                   : "LOCAL_STATE_DICT",
        " is not implemented in loom yet; use FULL_STATE_DICT (the model saved whole, which "
        "is what loom writes)"));
  }
  const FsdpShardingStrategy strategy = f.sharding_strategy;
  std::vector<std::string> options = {absl::AsciiStrToLower(ShardingStrategyName(strategy))};
  if (f.offload_params) {
    if (strategy != FsdpShardingStrategy::kFullShard &&
        strategy != FsdpShardingStrategy::kShardGradOp) {
      return absl::InvalidArgumentError(absl::StrCat(
          "fsdp_config.fsdp_offload_params: offload is only compatible with FULL_SHARD and "
          "SHARD_GRAD_OP (HF --fsdp \"full_shard offload\"), but fsdp_sharding_strategy is ",
          ShardingStrategyName(strategy)));
    }
    options.push_back("offload");
  }
  const auto wrap = f.auto_wrap_policy;
  const bool transformer_wrap = wrap == FsdpAutoWrapPolicy::kTransformerBased;
  const bool size_wrap = wrap == FsdpAutoWrapPolicy::kSizeBased;
  if (transformer_wrap || size_wrap) options.push_back("auto_wrap");
  if (f.cpu_ram_efficient_loading && !f.sync_module_states) {
    return absl::InvalidArgumentError(
        "fsdp_config.fsdp_cpu_ram_efficient_loading: requires fsdp_sync_module_states: true, "
        "otherwise the non-main processes keep random weights");
  }

  json cfg = json::object();
  if (transformer_wrap && !f.transformer_layer_cls_to_wrap.empty()) {
    cfg["transformer_layer_cls_to_wrap"] = f.transformer_layer_cls_to_wrap;
  }
  if (size_wrap) cfg["min_num_params"] = f.min_num_params.value_or(kDefaultMinNumParams);
  if (f.backward_prefetch == FsdpBackwardPrefetch::kBackwardPre) {
    cfg["backward_prefetch"] = "backward_pre";
  } else if (f.backward_prefetch == FsdpBackwardPrefetch::kBackwardPost) {
    cfg["backward_prefetch"] = "backward_post";
  }
  cfg["forward_prefetch"] = f.forward_prefetch;
  cfg["sync_module_states"] = f.sync_module_states;
  cfg["use_orig_params"] = f.use_orig_params;
  cfg["cpu_ram_efficient_loading"] = f.cpu_ram_efficient_loading;
  flags->insert(flags->end(), {"--fsdp", absl::StrJoin(options, " "), "--fsdp_config", cfg.dump()});
  return absl::OkStatus();
}

void DeepSpeedFlags(const AccelerateConfig& c, std::vector<std::string>* flags) {
  const AccelerateDeepSpeedConfig d = c.deepspeed_config.value_or(AccelerateDeepSpeedConfig{});
  if (d.deepspeed_config_file) {
    flags->insert(flags->end(), {"--deepspeed", *d.deepspeed_config_file});
    return;
  }
  // accelerate's DeepSpeedPlugin config; "auto" everywhere TrainingArguments can fill it.
  json cfg = json::object();
  cfg["train_batch_size"] = "auto";
  cfg["train_micro_batch_size_per_gpu"] = "auto";
  cfg["gradient_accumulation_steps"] = "auto";
  if (d.gradient_clipping) cfg["gradient_clipping"] = "auto";
  json zero = json::object();
  zero["stage"] = d.zero_stage.value_or(2);
  zero["offload_optimizer"] = {
      {"device", OffloadDeviceName(d.offload_optimizer_device.value_or(OffloadDevice::kNone))}};
  zero["offload_param"] = {
      {"device", OffloadDeviceName(d.offload_param_device.value_or(OffloadDevice::kNone))}};
  cfg["zero_optimization"] = zero;
  if (c.mixed_precision == MixedPrecision::kFp16) cfg["fp16"] = {{"enabled", "auto"}};
  if (c.mixed_precision == MixedPrecision::kBf16) cfg["bf16"] = {{"enabled", "auto"}};
  flags->insert(flags->end(), {"--deepspeed", cfg.dump()});
  if (d.gradient_accumulation_steps) {
    flags->insert(flags->end(), {"--gradient_accumulation_steps",
                                 std::to_string(*d.gradient_accumulation_steps)});
  }
  if (d.gradient_clipping) {
    flags->insert(flags->end(), {"--max_grad_norm", PythonFloat(*d.gradient_clipping)});
  }
}

}  // namespace

absl::StatusOr<std::vector<std::string>> ImpliedTrainingArgumentsFlags(
    const AccelerateConfig& config) {
  std::vector<std::string> flags;
  if (config.mixed_precision == MixedPrecision::kBf16) flags.push_back("--bf16");
  if (config.mixed_precision == MixedPrecision::kFp16) flags.push_back("--fp16");
  if (config.use_cpu) flags.push_back("--use_cpu");
  if (config.distributed_type == DistributedType::kFsdp) {
    absl::Status s = FsdpFlags(config.fsdp_config.value_or(AccelerateFsdpConfig{}), &flags);
    if (!s.ok()) return s;
  } else if (config.distributed_type == DistributedType::kDeepSpeed) {
    DeepSpeedFlags(config, &flags);
  }
  return flags;
}

}  // namespace loom::args
