// DeepSpeedPlan: what a `--deepspeed` config asks of a training run, resolved and checked once
// before any work — HF's deepspeed_init up to the engine: the config loaded, its
// "auto" values filled from TrainingArguments and the model (HfTrainerDeepSpeedConfig,
// transformers 4.41 integrations/deepspeed.py), DeepSpeed 0.13.5's own batch-size derivation
// and assertion (DeepSpeedConfig._set_batch_related_parameters, its error text), and every key
// checked against what loom implements.
//
// Contract of PlanDeepSpeed(args, world_size, hidden_size, num_training_steps):
//   - Loading / "auto" errors come back as //args gives them (naming the key).
//   - Batch sizes: DeepSpeed's _set_batch_related_parameters fills the missing one of
//     train_batch_size / train_micro_batch_size_per_gpu / gradient_accumulation_steps, then
//     asserts "Check batch related parameters. train_batch_size is not equal to
//     micro_batch_per_gpu * gradient_acc_step * world_size T != M * G * W". loom also refuses
//     a derived micro batch or accumulation that differs from --per_device_train_batch_size /
//     --gradient_accumulation_steps (the Trainer's loop and DeepSpeed would disagree).
//   - Every key, in every section, is one of: implemented (stage 0-3; the bucket,
//     reduce_scatter, allgather and overlap_comm keys; gradient_clipping;
//     gradient_predivide_factor / prescale_gradients with the all-reduce path; the optimizer
//     and scheduler sections of optim/deepspeed_optim.h; bf16 with stages 1-2;
//     communication_data_type fp32, or bf16 with bf16; steps_per_print (DeepSpeed's progress
//     line); zero_allow_untested_optimizer; offload_optimizer cpu (stages 1-3) and nvme
//     (stage 3: ZeRO-Infinity with nvme_path, buffer_count, sub_group_size and the aio
//     section, the path checked here), offload_param cpu and nvme (stage 3; buffer_count,
//     buffer_size, max_in_cpu), pin_memory; zero_force_ds_cpu_optimizer (DeepSpeed's error
//     for a client optimizer with the optimizer offloaded: loom's CPU optimizers are the
//     config's Adam/AdamW/Adagrad and --optim adamw_torch_fused); round_robin_gradients
//     (stages 1 and 2); checkpoint.use_node_local_storage (one node: every rank's files land
//     in the same folder)), ignored by DeepSpeed itself below stage 3 (stage3_*,
//     sub_group_size, ignore_unused_parameters), accepted only at its default value
//     (wall_clock_breakdown false, ...), or refused: InvalidArgument / Unimplemented naming
//     the dotted key and the fix. Refused now: offload_param below stage 3, offload_optimizer
//     at stage 0 and nvme below stage 3 (DeepSpeed: stage 3 only), round_robin_gradients at
//     stages 0 and 3, fp16
//     enabled (DeepSpeed's loss scaler), bf16 with stage 0, fp16 communication, predivide /
//     prescale without the all-reduce path, unknown or misspelled keys in any section, an
//     optimizer section with a non-default --optim, a scheduler section with a non-default
//     --lr_scheduler_type (DeepSpeed's section would win silently).
//   - Warnings (non-fatal notes from loading) are in `warnings`.
//
// Example:
//   ASSIGN_OR_RETURN(DeepSpeedPlan plan, PlanDeepSpeed(args, world, hidden_size, max_steps));
//   LOG(INFO) << plan.Echo();
//   ZeroOptions().set_stage(plan.stage).set_comm(plan.comm) ...
#ifndef LOOM_SHARDING_ZERO_DEEPSPEED_PLAN_H_
#define LOOM_SHARDING_ZERO_DEEPSPEED_PLAN_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "args/deepspeed_config.h"
#include "args/training_args.pb.h"
#include "sharding/offload/offload.h"
#include "sharding/zero/zero.h"

namespace loom::sharding {

struct DeepSpeedPlan {
  args::DeepSpeedConfig config;  // resolved: no "auto" left
  int stage = 0;
  ZeroCommOptions comm;
  double gradient_clipping = 0;  // 0: none
  int64_t train_batch_size = 0;
  int64_t train_micro_batch_size_per_gpu = 0;
  int64_t gradient_accumulation_steps = 0;
  int64_t steps_per_print = 10;
  // Stage 3 (DeepSpeed 0.13.5 zero_optimization stage3_* keys and defaults).
  int64_t stage3_param_persistence_threshold = 100000;
  int64_t stage3_prefetch_bucket_size = 50000000;
  int64_t stage3_max_live_parameters = 1000000000;
  bool stage3_gather_16bit_weights_on_model_save = false;
  // offload_optimizer / offload_param.
  OffloadOptions offload;
  bool round_robin_gradients = false;  // stages 1 and 2
  std::vector<std::string> warnings;

  // DeepSpeed's engine log of its configuration: "DeepSpeedEngine configuration:" and the
  // resolved JSON with sorted keys ("  json = {...}").
  std::string Echo() const;
};

absl::StatusOr<DeepSpeedPlan> PlanDeepSpeed(const args::TrainingArguments& args, int world_size,
                                            std::optional<int64_t> hidden_size,
                                            int64_t num_training_steps);

// Everything PlanDeepSpeed checks that does not depend on the model or the step count, for a
// script to run before it reads any data (hidden-size and step-count "auto" values are filled
// with placeholders and then discarded). OK without --deepspeed.
absl::Status PreCheckDeepSpeed(const args::TrainingArguments& args, int world_size);

}  // namespace loom::sharding

#endif  // LOOM_SHARDING_ZERO_DEEPSPEED_PLAN_H_
