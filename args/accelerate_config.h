// accelerate launcher configuration (accelerate 0.27): the YAML file `accelerate config` writes,
// the equivalent `accelerate launch` flags, and the TrainingArguments flags they imply for the
// training script.
//
// YAML contract (LoadAccelerateConfig / ParseAccelerateConfigYaml):
//   * Every key of the YAML configs in transformers' Trainer docs ("Accelerate launcher") is
//     read into AccelerateConfig; absent keys keep
//     accelerate's defaults (below). `key: null` (accelerate writes e.g. `main_process_ip: null`)
//     counts as absent.
//   * Enums: distributed_type NO|MULTI_CPU|MULTI_GPU|FSDP|DEEPSPEED; mixed_precision no|fp16|bf16;
//     fsdp_sharding_strategy 1-5 or FULL_SHARD|SHARD_GRAD_OP|NO_SHARD|HYBRID_SHARD|
//     HYBRID_SHARD_ZERO2; fsdp_auto_wrap_policy TRANSFORMER_BASED_WRAP|SIZE_BASED_WRAP|NO_WRAP;
//     fsdp_backward_prefetch(_policy) BACKWARD_PRE|BACKWARD_POST|NO_PREFETCH; fsdp_state_dict_type
//     FULL_STATE_DICT|LOCAL_STATE_DICT|SHARDED_STATE_DICT (names case-insensitive); offload devices
//     none|cpu|nvme; zero_stage 0-3. Bools take YAML/Python words (true/false/yes/no/on/off/1/0),
//     so downcast_bf16: 'no' is false.
//   * Bad values are InvalidArgument naming the file and the dotted key
//     ("fsdp_config.fsdp_sharding_strategy: expected 1-5 or ..."); unknown keys are warnings.
//   * Cross-checks: machine_rank < num_machines; deepspeed_config_file excludes the plugin keys
//     (gradient_accumulation_steps, gradient_clipping, offload_*_device, zero_stage) as accelerate
//     does; zero3_init_flag with zero_stage != 3 is a warning.
//
// CLI contract (ParseAccelerateLaunch / ApplyAccelerateLaunchFlags): `accelerate launch` flags
// before the training script, as `--k=v` or `--k v` (dashes or underscores). The first word not
// starting with "--" is the script; everything after it belongs to the script. Flags override the
// YAML given by --config_file. --use_fsdp / --use_deepspeed / --multi_gpu set distributed_type
// (at most one); --cpu / --use_cpu set use_cpu; any --fsdp_* or DeepSpeed flag creates the
// section. Value-less boolean flags mean true. Unknown flags are errors (argparse's behaviour).
//
// TrainingArguments mapping (ImpliedTrainingArgumentsFlags) — what the script must be told:
//   mixed_precision bf16 -> --bf16; fp16 -> --fp16.          use_cpu -> --use_cpu.
//   FSDP -> --fsdp "<full_shard|shard_grad_op|no_shard|hybrid_shard|hybrid_shard_zero2>
//           [ offload][ auto_wrap]" (offload: fsdp_offload_params; auto_wrap:
//           TRANSFORMER_BASED_WRAP or SIZE_BASED_WRAP) and --fsdp_config '<JSON>' with
//           transformer_layer_cls_to_wrap (transformer wrap, when given), min_num_params (size
//           wrap; accelerate's default 1e8), backward_prefetch ("backward_pre"/"backward_post",
//           when set), forward_prefetch, sync_module_states, use_orig_params,
//           cpu_ram_efficient_loading.
//   DEEPSPEED with deepspeed_config_file -> --deepspeed <file>. Without one (the plugin form),
//           --deepspeed '<JSON>' built like accelerate's DeepSpeedPlugin: "auto" batch sizes,
//           gradient_accumulation_steps/gradient_clipping "auto" plus --gradient_accumulation_steps
//           N / --max_grad_norm X when given, zero_optimization {stage (default 2),
//           offload_optimizer/offload_param {device}}, and {"fp16"|"bf16": {"enabled": "auto"}}
//           for the mixed precision.
//   Not mapped (launcher-level or no TrainingArguments equivalent): num_processes, num_machines,
//   machine_rank, main_process_ip/port, gpu_ids, rdzv_backend, same_network, downcast_bf16,
//   main_training_function, compute_environment, tpu_*, zero3_init_flag.
//   fsdp_state_dict_type: FULL_STATE_DICT is what loom writes (no flag); LOCAL_STATE_DICT and
//   SHARDED_STATE_DICT are refused by ImpliedTrainingArgumentsFlags (Unimplemented).
//
// Example:
//   std::vector<std::string> warnings;
//   ASSIGN_OR_RETURN(AccelerateLaunch launch, ParseAccelerateLaunch(argv_after_launch, &warnings));
//   ASSIGN_OR_RETURN(std::vector<std::string> extra, ImpliedTrainingArgumentsFlags(launch.config));
//   // run launch.training_script with launch.training_script_args + extra on
//   // launch.config.num_processes ranks
#ifndef LOOM_ARGS_ACCELERATE_CONFIG_H_
#define LOOM_ARGS_ACCELERATE_CONFIG_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "args/deepspeed_config.h"

namespace loom::args {

enum class DistributedType { kNo, kMultiCpu, kMultiGpu, kFsdp, kDeepSpeed };
enum class MixedPrecision { kNo, kFp16, kBf16 };
enum class FsdpShardingStrategy {  // FSDP's ShardingStrategy numbering
  kFullShard = 1,
  kShardGradOp = 2,
  kNoShard = 3,
  kHybridShard = 4,
  kHybridShardZero2 = 5,
};
enum class FsdpAutoWrapPolicy { kTransformerBased, kSizeBased, kNoWrap };
enum class FsdpBackwardPrefetch { kBackwardPre, kBackwardPost, kNoPrefetch };
enum class FsdpStateDictType { kFullStateDict, kLocalStateDict, kShardedStateDict };

const char* DistributedTypeName(DistributedType type);     // "MULTI_GPU"
const char* ShardingStrategyName(FsdpShardingStrategy s);  // "FULL_SHARD"

// fsdp_config.* (YAML keys carry the fsdp_ prefix: fsdp_sharding_strategy, ...).
struct AccelerateFsdpConfig {
  std::optional<FsdpAutoWrapPolicy> auto_wrap_policy;
  std::optional<FsdpBackwardPrefetch> backward_prefetch;  // fsdp_backward_prefetch(_policy)
  bool forward_prefetch = false;
  bool offload_params = false;
  FsdpShardingStrategy sharding_strategy = FsdpShardingStrategy::kFullShard;
  std::optional<FsdpStateDictType> state_dict_type;
  bool sync_module_states = true;
  std::vector<std::string> transformer_layer_cls_to_wrap;  // "A,B" is split on commas
  bool use_orig_params = true;
  std::optional<int64_t> min_num_params;
  bool cpu_ram_efficient_loading = false;
};

// deepspeed_config.* (accelerate's DeepSpeed plugin).
struct AccelerateDeepSpeedConfig {
  std::optional<std::string> deepspeed_config_file;
  std::optional<bool> zero3_init_flag;
  std::optional<int64_t> gradient_accumulation_steps;
  std::optional<double> gradient_clipping;
  std::optional<OffloadDevice> offload_optimizer_device;
  std::optional<OffloadDevice> offload_param_device;
  std::optional<int> zero_stage;
};

struct AccelerateConfig {
  std::string compute_environment = "LOCAL_MACHINE";
  DistributedType distributed_type = DistributedType::kNo;
  bool downcast_bf16 = false;
  std::string gpu_ids = "all";  // "all" or "0,1,..."
  int64_t machine_rank = 0;
  std::optional<std::string> main_process_ip;
  std::optional<int64_t> main_process_port;
  std::string main_training_function = "main";
  MixedPrecision mixed_precision = MixedPrecision::kNo;
  int64_t num_machines = 1;
  std::optional<int64_t> num_processes;  // unset: one per visible GPU
  std::string rdzv_backend = "static";
  bool same_network = true;
  std::vector<std::string> tpu_env;
  bool tpu_use_cluster = false;
  bool tpu_use_sudo = false;
  bool use_cpu = false;
  std::optional<AccelerateFsdpConfig> fsdp_config;            // the section was given
  std::optional<AccelerateDeepSpeedConfig> deepspeed_config;  // the section was given
};

// Reads an accelerate YAML config file. `warnings` (may be null) gets unknown keys etc.
absl::StatusOr<AccelerateConfig> LoadAccelerateConfig(const std::string& path,
                                                      std::vector<std::string>* warnings = nullptr);
absl::StatusOr<AccelerateConfig> ParseAccelerateConfigYaml(
    const std::string& yaml_text, const std::string& source,
    std::vector<std::string>* warnings = nullptr);

struct AccelerateLaunch {
  AccelerateConfig config;
  std::optional<std::string> config_file;  // --config_file
  std::string training_script;             // empty when the command line has none
  std::vector<std::string> training_script_args;
};

// Applies launcher flags (everything before the script) to `launch->config`, and fills
// training_script / training_script_args / config_file (recorded, not loaded).
absl::Status ApplyAccelerateLaunchFlags(const std::vector<std::string>& args,
                                        AccelerateLaunch* launch,
                                        std::vector<std::string>* warnings = nullptr);

// The whole `accelerate launch` command line (without "accelerate launch"): loads --config_file
// when given, then applies the flags over it.
absl::StatusOr<AccelerateLaunch> ParseAccelerateLaunch(
    const std::vector<std::string>& args, std::vector<std::string>* warnings = nullptr);

// The TrainingArguments flags the configuration implies for the script (see the header comment);
// InvalidArgument naming the key for combinations HF rejects (offload with NO_SHARD/HYBRID_*,
// cpu_ram_efficient_loading without sync_module_states).
absl::StatusOr<std::vector<std::string>> ImpliedTrainingArgumentsFlags(
    const AccelerateConfig& config);

}  // namespace loom::args

#endif  // LOOM_ARGS_ACCELERATE_CONFIG_H_
