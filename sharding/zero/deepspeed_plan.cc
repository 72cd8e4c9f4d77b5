#include "sharding/zero/deepspeed_plan.h"

#include <map>
#include <set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "args/parser.h"
#include "base/status_macros.h"
#include "nlohmann/json.hpp"
#include "optim/deepspeed_optim.h"
#include "sharding/offload/swap_space.h"

namespace loom::sharding {
namespace {

using json = nlohmann::ordered_json;

absl::Status Invalid(const std::string& message) {
  return absl::InvalidArgumentError(absl::StrCat("--deepspeed: ", message));
}
absl::Status NotYet(const std::string& key, const std::string& what, const std::string& fix) {
  return absl::UnimplementedError(
      absl::StrCat("--deepspeed: ", key, ": ", what, " is not implemented in loom yet; ", fix));
}

// How loom treats a key it knows.
enum class Treat { kImplemented, kIgnoredBelowStage3, kDefaultOnly };
struct KeyRule {
  Treat treat;
  json default_value;  // kDefaultOnly
};

const std::map<std::string, KeyRule>& TopLevelRules() {
  static const auto* rules = new std::map<std::string, KeyRule>{
      {"train_batch_size", {Treat::kImplemented, {}}},
      {"train_micro_batch_size_per_gpu", {Treat::kImplemented, {}}},
      {"gradient_accumulation_steps", {Treat::kImplemented, {}}},
      {"gradient_clipping", {Treat::kImplemented, {}}},
      {"optimizer", {Treat::kImplemented, {}}},
      {"scheduler", {Treat::kImplemented, {}}},
      {"fp16", {Treat::kImplemented, {}}},
      {"bf16", {Treat::kImplemented, {}}},
      {"amp", {Treat::kImplemented, {}}},
      {"zero_optimization", {Treat::kImplemented, {}}},
      {"steps_per_print", {Treat::kImplemented, {}}},
      {"zero_allow_untested_optimizer", {Treat::kImplemented, {}}},
      {"zero_force_ds_cpu_optimizer", {Treat::kImplemented, {}}},
      {"communication_data_type", {Treat::kImplemented, {}}},
      {"checkpoint", {Treat::kImplemented, {}}},
      {"aio", {Treat::kImplemented, {}}},
      {"prescale_gradients", {Treat::kImplemented, {}}},
      {"gradient_predivide_factor", {Treat::kImplemented, {}}},
      {"wall_clock_breakdown", {Treat::kDefaultOnly, false}},
      {"memory_breakdown", {Treat::kDefaultOnly, false}},
      {"dump_state", {Treat::kDefaultOnly, false}},
      {"sparse_gradients", {Treat::kDefaultOnly, false}},
  };
  return *rules;
}

const std::map<std::string, KeyRule>& ZeroRules() {
  static const auto* rules = new std::map<std::string, KeyRule>{
      {"stage", {Treat::kImplemented, {}}},
      {"allgather_partitions", {Treat::kImplemented, {}}},
      {"allgather_bucket_size", {Treat::kImplemented, {}}},
      {"reduce_scatter", {Treat::kImplemented, {}}},
      {"reduce_bucket_size", {Treat::kImplemented, {}}},
      // Memory layout only: loom always reduces from one contiguous buffer per group.
      {"contiguous_gradients", {Treat::kImplemented, {}}},
      {"offload_optimizer", {Treat::kImplemented, {}}},  // device "none" only (checked below)
      {"offload_param", {Treat::kImplemented, {}}},
      {"aio", {Treat::kImplemented, {}}},
      {"overlap_comm", {Treat::kImplemented, {}}},
      {"round_robin_gradients", {Treat::kImplemented, {}}},  // stages 1 and 2
      {"load_from_fp32_weights", {Treat::kDefaultOnly, true}},
      {"elastic_checkpoint", {Treat::kDefaultOnly, false}},
      {"ignore_unused_parameters", {Treat::kIgnoredBelowStage3, {}}},
      {"sub_group_size", {Treat::kIgnoredBelowStage3, {}}},  // the NVMe swap unit at stage 3
      {"stage3_prefetch_bucket_size", {Treat::kIgnoredBelowStage3, {}}},
      {"stage3_param_persistence_threshold", {Treat::kIgnoredBelowStage3, {}}},
      {"stage3_max_live_parameters", {Treat::kIgnoredBelowStage3, {}}},
      {"stage3_max_reuse_distance", {Treat::kIgnoredBelowStage3, {}}},
      {"stage3_gather_16bit_weights_on_model_save", {Treat::kIgnoredBelowStage3, {}}},
      {"stage3_gather_fp16_weights_on_model_save", {Treat::kIgnoredBelowStage3, {}}},
  };
  return *rules;
}

// The keys a section takes (each implemented, or meaningful only with a feature that is
// refused on its own when asked for, e.g. the loss-scaler keys of a disabled fp16 section).
std::map<std::string, KeyRule> Implemented(std::initializer_list<const char*> names) {
  std::map<std::string, KeyRule> rules;
  for (const char* n : names) rules[n] = {Treat::kImplemented, {}};
  return rules;
}

const std::map<std::string, std::map<std::string, KeyRule>>& SectionRules() {
  static const auto* rules = new std::map<std::string, std::map<std::string, KeyRule>>{
      {"optimizer", Implemented({"type", "params"})},
      {"scheduler", Implemented({"type", "params"})},
      {"fp16", Implemented({"enabled", "loss_scale", "initial_scale_power", "loss_scale_window",
                            "hysteresis", "consecutive_hysteresis", "min_loss_scale"})},
      {"bf16", Implemented({"enabled"})},
      {"amp", Implemented({"enabled", "opt_level"})},
      {"checkpoint", Implemented({"use_node_local_storage"})},
      {"aio", Implemented({"block_size", "queue_depth", "thread_count", "intra_op_parallelism",
                           "single_submit", "overlap_events"})},
      {"zero_optimization.offload_optimizer",
       Implemented({"device", "nvme_path", "pin_memory", "buffer_count", "fast_init"})},
      {"zero_optimization.offload_param",
       Implemented(
           {"device", "nvme_path", "pin_memory", "buffer_count", "buffer_size", "max_in_cpu"})},
      {"zero_optimization.aio",
       Implemented({"block_size", "queue_depth", "thread_count", "intra_op_parallelism",
                    "single_submit", "overlap_events"})},
  };
  return *rules;
}

// The rule name closest to a misspelt key (edit distance below 4), or "".
std::string ClosestRule(const std::string& name, const std::map<std::string, KeyRule>& rules) {
  std::vector<std::string> keys;
  for (const auto& [rule, unused] : rules) {
    if (rule.find('.') == std::string::npos) keys.push_back(rule);  // not nested sections
  }
  return args::ClosestName(name, keys);
}

absl::Status CheckKeys(const json& obj, const std::string& path,
                       const std::map<std::string, KeyRule>& rules) {
  for (const auto& [name, value] : obj.items()) {
    if (value.is_null()) continue;
    const std::string key = path.empty() ? name : absl::StrCat(path, ".", name);
    auto it = rules.find(name);
    if (it == rules.end()) {
      const std::string hint = ClosestRule(name, rules);
      return absl::UnimplementedError(absl::StrCat(
          "--deepspeed: \"", key, "\" is not a DeepSpeed key loom implements",
          hint.empty() ? ""
                       : absl::StrCat("; did you mean \"",
                                      path.empty() ? hint : absl::StrCat(path, ".", hint), "\"?"),
          " (a misspelling — DeepSpeed would ignore it and use the default — or a feature loom "
          "does not have); remove it"));
    }
    if (it->second.treat == Treat::kDefaultOnly && value != it->second.default_value &&
        !(value.is_number() && it->second.default_value.is_number() &&
          value.get<double>() == it->second.default_value.get<double>())) {
      return absl::UnimplementedError(absl::StrCat("--deepspeed: \"", key, "\": ", value.dump(),
                                                   " is not implemented in loom yet; set it to ",
                                                   it->second.default_value.dump(),
                                                   " or remove it"));
    }
  }
  return absl::OkStatus();
}

int64_t Resolved(const std::optional<args::AutoOr<int64_t>>& v) {
  return v && !v->is_auto() ? v->value() : 0;
}

// DeepSpeed's _set_batch_related_parameters + _batch_assertion (runtime/config.py).
absl::Status ResolveBatch(const args::DeepSpeedConfig& ds, int world, DeepSpeedPlan* plan) {
  std::optional<int64_t> tb, mb, ga;
  if (ds.train_batch_size) tb = Resolved(ds.train_batch_size);
  if (ds.train_micro_batch_size_per_gpu) mb = Resolved(ds.train_micro_batch_size_per_gpu);
  if (ds.gradient_accumulation_steps) ga = Resolved(ds.gradient_accumulation_steps);
  if (tb && mb && ga) {
  } else if (tb && mb) {
    ga = *tb / std::max<int64_t>(1, *mb) / world;
  } else if (tb && ga) {
    mb = *tb / world / std::max<int64_t>(1, *ga);
  } else if (mb && ga) {
    tb = *mb * *ga * world;
  } else if (tb) {
    ga = 1;
    mb = *tb / world;
  } else if (mb) {
    tb = *mb * world;
    ga = 1;
  } else {
    return Invalid(
        "Either train_batch_size or train_micro_batch_size_per_gpu needs to be provided (set "
        "\"train_micro_batch_size_per_gpu\": \"auto\")");
  }
  if (*tb <= 0)
    return Invalid(absl::StrCat("Train batch size: ", *tb, " has to be greater than 0"));
  if (*mb <= 0) {
    return Invalid(absl::StrCat("Micro batch size per gpu: ", *mb, " has to be greater than 0"));
  }
  if (*ga <= 0) {
    return Invalid(absl::StrCat("Gradient accumulation steps: ", *ga, " has to be greater than 0"));
  }
  if (*tb != *mb * *ga * world) {
    return Invalid(absl::StrCat(
        "train_batch_size: Check batch related parameters. train_batch_size is not equal to "
        "micro_batch_per_gpu * gradient_acc_step * world_size ",
        *tb, " != ", *mb, " * ", *ga, " * ", world,
        ". Set train_batch_size (or all three batch keys) to \"auto\""));
  }
  plan->train_batch_size = *tb;
  plan->train_micro_batch_size_per_gpu = *mb;
  plan->gradient_accumulation_steps = *ga;
  return absl::OkStatus();
}

// The offload sections against the ZeRO stage: parameters need stage 3, the optimizer a stage
// above 0, NVMe for the optimizer stage 3; round_robin_gradients is a stage 1/2 option.
absl::Status CheckOffloadStages(const args::ZeroConfig& zero, bool opt_off, bool param_off) {
  if (param_off && zero.stage != 3) {
    return Invalid(absl::StrCat(
        "zero_optimization.offload_param: offloading parameters is valid only with ZeRO stage 3 "
        "(this config has stage ",
        zero.stage, "); set \"stage\": 3, or remove offload_param (offload_optimizer offloads "
        "the optimizer states at stages 1 and 2)"));
  }
  if (opt_off && zero.stage == 0) {
    return Invalid(
        "zero_optimization.offload_optimizer: offloading the optimizer needs ZeRO stage 1, 2 or "
        "3 (this config has stage 0); set a stage, or remove offload_optimizer");
  }
  const bool opt_nvme = opt_off && zero.offload_optimizer->device == args::OffloadDevice::kNvme;
  if (opt_nvme && zero.stage != 3) {
    return Invalid(absl::StrCat(
        "zero_optimization.offload_optimizer.device: \"nvme\" (ZeRO-Infinity) requires ZeRO "
        "stage 3 (this config has stage ",
        zero.stage, "); set \"stage\": 3, or offload to \"cpu\""));
  }
  if (zero.round_robin_gradients && zero.stage != 1 && zero.stage != 2) {
    return Invalid(absl::StrCat(
        "zero_optimization.round_robin_gradients: a ZeRO stage 1 and 2 option (this config has "
        "stage ",
        zero.stage, "); remove it"));
  }
  return absl::OkStatus();
}

// offload_optimizer (present, device not "none"): host memory, or NVMe swap files.
absl::Status PlanOptimizerOffload(const args::DeepSpeedConfig& ds, DeepSpeedPlan* plan) {
  const args::ZeroConfig& zero = ds.zero_optimization;
  plan->offload.optimizer = true;
  plan->offload.pin_memory = zero.offload_optimizer->pin_memory;
  if (zero.offload_optimizer->device != args::OffloadDevice::kNvme) return absl::OkStatus();
  if (!zero.offload_optimizer->nvme_path || zero.offload_optimizer->nvme_path->empty()) {
    return Invalid(
        "zero_optimization.offload_optimizer.nvme_path: required with \"device\": "
        "\"nvme\"; set it to a folder on a fast local disk");
  }
  plan->offload.optimizer_nvme_path = *zero.offload_optimizer->nvme_path;
  plan->offload.buffer_count = zero.offload_optimizer->buffer_count;
  plan->offload.sub_group_size = zero.sub_group_size;
  plan->offload.aio = ds.aio;
  if (plan->offload.buffer_count < 1) {
    return Invalid(absl::StrCat("zero_optimization.offload_optimizer.buffer_count: ",
                                plan->offload.buffer_count, " must be >= 1"));
  }
  if (plan->offload.sub_group_size < 1) {
    return Invalid(
        absl::StrCat("zero_optimization.sub_group_size: ", zero.sub_group_size, " must be >= 1"));
  }
  // The folder and the aio section, before any work (the free space is checked when the
  // state's size is known, as the strategy is made).
  RETURN_IF_ERROR_CTX(
      CheckNvmePath("zero_optimization.offload_optimizer.nvme_path",
                    plan->offload.optimizer_nvme_path, AioOptionsOf(plan->offload.aio))
          .status(),
      "--deepspeed");
  return absl::OkStatus();
}

// offload_param (present, device not "none"): host memory, or NVMe swap files.
absl::Status PlanParamOffload(const args::DeepSpeedConfig& ds, DeepSpeedPlan* plan) {
  const args::OffloadParamConfig& p = *ds.zero_optimization.offload_param;
  plan->offload.params = true;
  plan->offload.pin_memory = plan->offload.pin_memory || p.pin_memory;
  if (p.device != args::OffloadDevice::kNvme) return absl::OkStatus();
  if (!p.nvme_path || p.nvme_path->empty()) {
    return Invalid(
        "zero_optimization.offload_param.nvme_path: required with \"device\": \"nvme\"; "
        "set it to a folder on a fast local disk");
  }
  plan->offload.param_nvme_path = *p.nvme_path;
  plan->offload.param_buffer_count = p.buffer_count;
  plan->offload.param_buffer_size = p.buffer_size;
  plan->offload.max_in_cpu = p.max_in_cpu;
  plan->offload.aio = ds.aio;
  for (const auto& [key, v] :
       {std::pair{"buffer_count", p.buffer_count}, std::pair{"buffer_size", p.buffer_size}}) {
    if (v < 1) {
      return Invalid(
          absl::StrCat("zero_optimization.offload_param.", key, ": ", v, " must be >= 1"));
    }
  }
  if (p.max_in_cpu < 0) {
    return Invalid(absl::StrCat("zero_optimization.offload_param.max_in_cpu: ", p.max_in_cpu,
                                " must be >= 0"));
  }
  RETURN_IF_ERROR_CTX(CheckNvmePath("zero_optimization.offload_param.nvme_path",
                                    plan->offload.param_nvme_path, AioOptionsOf(plan->offload.aio))
                          .status(),
                      "--deepspeed");
  return absl::OkStatus();
}

// DeepSpeed's engine (_configure_optimizer): with the optimizer offloaded, a client optimizer
// that is not its CPU Adam is refused unless zero_force_ds_cpu_optimizer is false. loom's CPU
// optimizers: the config's Adam/AdamW/Adagrad section, or --optim adamw_torch_fused.
absl::Status CheckOffloadedOptimizer(const args::TrainingArguments& args,
                                     const args::DeepSpeedConfig& ds) {
  if (!ds.optimizer && ds.zero_force_ds_cpu_optimizer && args.optim() != "adamw_torch_fused") {
    return Invalid(absl::StrCat(
        "zero_force_ds_cpu_optimizer: You are using ZeRO-Offload with a client provided "
        "optimizer (--optim ",
        args.optim(),
        ") which in most cases will yield poor performance. Please either use loom's CPU Adam "
        "(--optim adamw_torch_fused) or set an optimizer in your ds-config. If you really want "
        "to use a custom optimizer w. ZeRO-Offload and understand the performance impacts you "
        "can also set <\"zero_force_ds_cpu_optimizer\": false> in your configuration file."));
  }
  return absl::OkStatus();
}

// ZeRO-Offload and ZeRO-Infinity (DeepSpeed 0.13.5 offload_optimizer / offload_param keys).
absl::Status PlanOffload(const args::TrainingArguments& args, const args::DeepSpeedConfig& ds,
                         DeepSpeedPlan* plan) {
  const args::ZeroConfig& zero = ds.zero_optimization;
  const bool opt_off =
      zero.offload_optimizer && zero.offload_optimizer->device != args::OffloadDevice::kNone;
  const bool param_off =
      zero.offload_param && zero.offload_param->device != args::OffloadDevice::kNone;
  RETURN_IF_ERROR(CheckOffloadStages(zero, opt_off, param_off));
  plan->round_robin_gradients = zero.round_robin_gradients;
  if (opt_off) RETURN_IF_ERROR(PlanOptimizerOffload(ds, plan));
  if (param_off) RETURN_IF_ERROR(PlanParamOffload(ds, plan));
  if (opt_off) RETURN_IF_ERROR(CheckOffloadedOptimizer(args, ds));
  return absl::OkStatus();
}

// Keys first: a misspelled or unimplemented key is the clearest error there is. Inside every
// section too: a misspelled "params" or "enabled" would otherwise leave DeepSpeed's defaults in
// force without a word.
absl::Status CheckAllKeys(const json& raw) {
  RETURN_IF_ERROR(CheckKeys(raw, "", TopLevelRules()));
  if (raw.contains("zero_optimization") && raw["zero_optimization"].is_object()) {
    RETURN_IF_ERROR(CheckKeys(raw["zero_optimization"], "zero_optimization", ZeroRules()));
  }
  for (const auto& [section, rules] : SectionRules()) {
    const json* node = &raw;
    for (const std::string& part : std::vector<std::string>(absl::StrSplit(section, '.'))) {
      node = node->is_object() && node->contains(part) ? &(*node)[part] : nullptr;
      if (node == nullptr) break;
    }
    if (node != nullptr && node->is_object()) RETURN_IF_ERROR(CheckKeys(*node, section, rules));
  }
  return absl::OkStatus();
}

// The config through HF's HfTrainerDeepSpeedConfig: batch keys the config leaves out take the
// Trainer's values (as accelerate fills them), then "auto" values are filled and checked.
absl::StatusOr<args::DeepSpeedConfig> FillFromTrainer(const args::TrainingArguments& args,
                                                      args::DeepSpeedConfig loaded, int world,
                                                      std::optional<int64_t> hidden_size,
                                                      int64_t num_training_steps) {
  for (const char* key :
       {"train_micro_batch_size_per_gpu", "train_batch_size", "gradient_accumulation_steps"}) {
    if (!loaded.raw.contains(key) || loaded.raw[key].is_null()) loaded.raw[key] = "auto";
  }
  ASSIGN_OR_RETURN(loaded, args::ParseDeepSpeedConfig(loaded.raw, loaded.source), "--deepspeed");
  args::TrainerDeepSpeedConfig hf(std::move(loaded));
  RETURN_IF_ERROR_CTX(hf.TrainerConfigProcess(args, world), "--deepspeed");
  RETURN_IF_ERROR_CTX(hf.TrainerConfigFinalize(args, hidden_size, num_training_steps),
                      "--deepspeed");
  return hf.config();
}

// ZeRO-3 (sharding/param_shard/param_shard.h): parameters below the persistence threshold stay whole,
// the 16-bit weights are written at save only when asked
// (stage3_gather_16bit_weights_on_model_save).
void PlanStage3(const args::ZeroConfig& zero, DeepSpeedPlan* plan) {
  plan->stage3_param_persistence_threshold = zero.stage3_param_persistence_threshold.is_auto()
                                                 ? 100000
                                                 : zero.stage3_param_persistence_threshold.value();
  plan->stage3_prefetch_bucket_size = zero.stage3_prefetch_bucket_size.is_auto()
                                          ? 50000000
                                          : zero.stage3_prefetch_bucket_size.value();
  plan->stage3_max_live_parameters = zero.stage3_max_live_parameters;
  plan->stage3_gather_16bit_weights_on_model_save = zero.stage3_gather_16bit_weights_on_model_save;
}

// The fp16 / bf16 / amp sections against the stage and the flags; true for bf16 weights.
absl::StatusOr<bool> PlanHalfPrecision(const args::TrainingArguments& args,
                                       const args::DeepSpeedConfig& ds) {
  const args::ZeroConfig& zero = ds.zero_optimization;
  const auto enabled = [](const args::AutoOr<bool>& v) { return !v.is_auto() && v.value(); };
  if (ds.fp16.present && ds.bf16.present && enabled(ds.fp16.enabled) && enabled(ds.bf16.enabled)) {
    return Invalid(
        "bf16.enabled, fp16.enabled: bfloat16 and fp16 modes cannot be simultaneously enabled; "
        "enable one");
  }
  const bool fp16 = ds.fp16.present && enabled(ds.fp16.enabled);
  const bool bf16 = ds.bf16.present && enabled(ds.bf16.enabled);
  if (fp16) {
    return NotYet("fp16.enabled",
                  "DeepSpeed's fp16 training (16-bit weights with its loss scaler; CUDA only)",
                  "use the bf16 section, or train in fp32 (\"enabled\": false, no --fp16)");
  }
  if (bf16 && zero.stage == 3) {
    return NotYet("bf16.enabled", "bf16 weights with ZeRO stage 3",
                  "train ZeRO-3 in fp32, or use zero_optimization.stage 1 or 2 with bf16");
  }
  if (bf16 && zero.stage == 0) {
    return NotYet("bf16.enabled", "bf16 weights with ZeRO stage 0 (DeepSpeed's BF16_Optimizer)",
                  "use zero_optimization.stage 1 or 2, or train in fp32");
  }
  if ((args.bf16() && !bf16) || args.fp16()) {
    // accelerate turns a missing section on for --bf16; loom asks for it to be explicit.
    return Invalid(absl::StrCat(args.bf16() ? "--bf16" : "--fp16", " with a config whose ",
                                args.bf16() ? "bf16" : "fp16", " section is missing or off: add \"",
                                args.bf16() ? "bf16" : "fp16",
                                "\": {\"enabled\": \"auto\"} to the config (or drop the flag)"));
  }
  if (ds.amp.present && enabled(ds.amp.enabled)) {
    return Invalid(
        "amp.enabled: Amp and ZeRO are not currently compatible, and NVIDIA Apex is Python-only; "
        "remove the amp section");
  }
  return bf16;
}

// communication_data_type: fp32, or bf16 with bf16 weights.
absl::Status PlanCommunicationDtype(const args::DeepSpeedConfig& ds, bool bf16,
                                    DeepSpeedPlan* plan) {
  if (!ds.communication_data_type) return absl::OkStatus();
  switch (*ds.communication_data_type) {
    case args::CommDataType::kFp32:
      plan->comm.communication_dtype = at::kFloat;
      break;
    case args::CommDataType::kBf16:
      if (!bf16) {
        return NotYet("communication_data_type", "reducing fp32 gradients in bf16",
                      "set it to \"fp32\" or remove it");
      }
      plan->comm.communication_dtype = at::kBFloat16;
      break;
    case args::CommDataType::kFp16:
      return NotYet("communication_data_type", "reducing gradients in fp16",
                    absl::StrCat("set it to \"", bf16 ? "bf16" : "fp32", "\" or remove it"));
  }
  return absl::OkStatus();
}

// The resolved batch keys against the Trainer's flags.
absl::Status CheckBatchAgainstFlags(const args::TrainingArguments& args,
                                    const DeepSpeedPlan& plan) {
  if (plan.train_micro_batch_size_per_gpu != args.per_device_train_batch_size()) {
    return Invalid(
        absl::StrCat("train_micro_batch_size_per_gpu is ", plan.train_micro_batch_size_per_gpu,
                     " (derived from the batch keys) but --per_device_train_batch_size is ",
                     args.per_device_train_batch_size(), "; set the batch keys to \"auto\""));
  }
  if (plan.gradient_accumulation_steps != args.gradient_accumulation_steps()) {
    return Invalid(
        absl::StrCat("gradient_accumulation_steps is ", plan.gradient_accumulation_steps,
                     " (derived from the batch keys) but --gradient_accumulation_steps is ",
                     args.gradient_accumulation_steps(), "; set the batch keys to \"auto\""));
  }
  return absl::OkStatus();
}

// gradient_clipping and steps_per_print.
absl::Status PlanClippingAndPrinting(const args::DeepSpeedConfig& ds, DeepSpeedPlan* plan) {
  plan->gradient_clipping = ds.gradient_clipping.value_or(0.0);
  if (plan->gradient_clipping < 0) {
    return Invalid(absl::StrCat("gradient_clipping: ", plan->gradient_clipping,
                                " must be >= 0 (0 turns clipping off)"));
  }
  plan->steps_per_print = ds.steps_per_print;
  if (plan->steps_per_print <= 0) {
    return Invalid(absl::StrCat("steps_per_print: ", plan->steps_per_print, " must be > 0"));
  }
  return absl::OkStatus();
}

// Communication (zero.h's ZeroCommOptions): buckets, reduce-scatter, overlap, and the
// gradient scaling DeepSpeed applies only when gradients are all-reduced.
absl::Status PlanCommunication(const args::DeepSpeedConfig& ds, DeepSpeedPlan* plan) {
  const args::ZeroConfig& zero = ds.zero_optimization;
  const json& raw = ds.raw;
  plan->comm.reduce_bucket_size = zero.reduce_bucket_size.value_or(500000000);
  plan->comm.allgather_bucket_size = zero.allgather_bucket_size;
  plan->comm.reduce_scatter = zero.reduce_scatter;
  plan->comm.overlap_comm = zero.OverlapComm() && plan->stage > 0;
  plan->comm.allgather_partitions = zero.allgather_partitions;
  for (const auto& [key, v] :
       {std::pair{"zero_optimization.reduce_bucket_size", plan->comm.reduce_bucket_size},
        std::pair{"zero_optimization.allgather_bucket_size", plan->comm.allgather_bucket_size}}) {
    if (v <= 0) return Invalid(absl::StrCat(key, ": ", v, " must be a positive element count"));
  }
  if (raw.contains("gradient_predivide_factor") && !raw["gradient_predivide_factor"].is_null()) {
    const json& f = raw["gradient_predivide_factor"];
    if (!f.is_number() || !(f.get<double>() > 0)) {
      return Invalid(
          absl::StrCat("gradient_predivide_factor: ", f.dump(), " must be a number > 0"));
    }
    plan->comm.gradient_predivide_factor = f.get<double>();
  }
  if (raw.contains("prescale_gradients") && !raw["prescale_gradients"].is_null()) {
    if (!raw["prescale_gradients"].is_boolean()) {
      return Invalid("prescale_gradients: expected true or false");
    }
    plan->comm.prescale_gradients = raw["prescale_gradients"].get<bool>();
  }
  // DeepSpeed applies both only when gradients are all-reduced (stage 1/2 with reduce_scatter
  // false); with reduce-scatter it asserts, and loom's DDP (stage 0) has neither.
  if ((plan->comm.gradient_predivide_factor != 1.0 || plan->comm.prescale_gradients) &&
      (plan->stage == 0 || plan->comm.reduce_scatter)) {
    return NotYet(
        plan->comm.prescale_gradients ? "prescale_gradients" : "gradient_predivide_factor",
        plan->stage == 0 ? "with ZeRO stage 0 (DDP)" : "with \"reduce_scatter\": true",
        "remove it, or use zero_optimization.stage 1/2 with \"reduce_scatter\": false");
  }
  return absl::OkStatus();
}

// The optimizer and scheduler sections, and the flags they would silently override.
absl::Status CheckOptimizerSections(const args::TrainingArguments& args,
                                    const args::DeepSpeedConfig& ds, int stage) {
  RETURN_IF_ERROR(optim::CheckDeepSpeedOptimizer(ds, stage));
  RETURN_IF_ERROR(optim::CheckDeepSpeedScheduler(ds));
  const args::TrainingArguments& defaults = args::TrainingArguments::default_instance();
  if (ds.optimizer && args.optim() != defaults.optim()) {
    return Invalid(absl::StrCat("optimizer: the config's optimizer section (type \"",
                                ds.optimizer->type, "\") and --optim ", args.optim(),
                                " both choose the optimizer; remove one of them"));
  }
  if (ds.scheduler && args.lr_scheduler_type() != defaults.lr_scheduler_type()) {
    return Invalid(absl::StrCat("scheduler: the config's scheduler section (type \"",
                                ds.scheduler->type, "\") and --lr_scheduler_type ",
                                args.lr_scheduler_type(),
                                " both choose the schedule; remove one of them"));
  }
  return absl::OkStatus();
}

}  // namespace

std::string DeepSpeedPlan::Echo() const {
  const nlohmann::json sorted = nlohmann::json::parse(config.raw.dump());  // std::map: sorted
  return absl::StrCat("DeepSpeedEngine configuration:\n  json = ", sorted.dump(4));
}

absl::StatusOr<DeepSpeedPlan> PlanDeepSpeed(const args::TrainingArguments& args, int world_size,
                                            std::optional<int64_t> hidden_size,
                                            int64_t num_training_steps) {
  DeepSpeedPlan plan;
  const int world = std::max(1, world_size);
  ASSIGN_OR_RETURN(args::DeepSpeedConfig loaded,
                   args::LoadDeepSpeedConfig(args.deepspeed(), &plan.warnings), "--deepspeed");
  RETURN_IF_ERROR(CheckAllKeys(loaded.raw));
  ASSIGN_OR_RETURN(plan.config, FillFromTrainer(args, std::move(loaded), world, hidden_size,
                                                num_training_steps));
  const args::DeepSpeedConfig& ds = plan.config;
  plan.stage = ds.zero_optimization.stage;
  if (plan.stage == 3) PlanStage3(ds.zero_optimization, &plan);
  RETURN_IF_ERROR(PlanOffload(args, ds, &plan));
  ASSIGN_OR_RETURN(const bool bf16, PlanHalfPrecision(args, ds));
  RETURN_IF_ERROR(PlanCommunicationDtype(ds, bf16, &plan));
  RETURN_IF_ERROR(ResolveBatch(ds, world, &plan));
  RETURN_IF_ERROR(CheckBatchAgainstFlags(args, plan));
  RETURN_IF_ERROR(PlanClippingAndPrinting(ds, &plan));
  RETURN_IF_ERROR(PlanCommunication(ds, &plan));
  RETURN_IF_ERROR(CheckOptimizerSections(args, ds, plan.stage));
  return plan;
}

absl::Status PreCheckDeepSpeed(const args::TrainingArguments& args, int world_size) {
  if (args.deepspeed().empty()) return absl::OkStatus();
  // Placeholders: any hidden size gives valid bucket sizes, and a step count far above any
  // warmup keeps the schedules' step checks for the real count.
  constexpr int64_t kPlaceholderSteps = int64_t{1} << 40;
  return PlanDeepSpeed(args, world_size, /*hidden_size=*/1, kPlaceholderSteps).status();
}

}  // namespace loom::sharding
