#include "runtime/run_setup.h"

#include <torch/cuda.h>

#include "absl/strings/str_cat.h"
#include "args/deepspeed_config.h"
#include "args/fsdp_config.h"
#include "base/status_macros.h"
#include "sharding/create_strategy.h"
#include "sharding/zero/deepspeed_plan.h"

namespace loom::runtime {
namespace {

absl::StatusOr<at::Device> TrainingDevice(const args::TrainingArguments& args, int local_rank) {
  if (args.use_cpu() || !torch::cuda::is_available()) return at::Device(at::kCPU);
  const int64_t gpus = static_cast<int64_t>(torch::cuda::device_count());
  const int64_t index = std::max(local_rank, 0);
  if (index >= gpus) {
    return absl::FailedPreconditionError(absl::StrCat(
        "local rank ", index, " has no GPU: only ", gpus,
        " visible (CUDA_VISIBLE_DEVICES); start at most that many processes per node, or pass "
        "--use_cpu"));
  }
  return at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(index));
}

}  // namespace

absl::StatusOr<RunSetup> ResolveRunSetup(const args::TrainingArguments& args, int local_rank,
                                         int world_size) {
  if (args.auto_find_batch_size() && world_size > 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--auto_find_batch_size is not implemented in loom yet for runs of several processes (",
        world_size,
        " here): a rank that ran out of memory alone would retry while the others wait. Set "
        "--per_device_train_batch_size yourself, or find it with one process."));
  }
  RunSetup setup;
  ASSIGN_OR_RETURN(setup.device, TrainingDevice(args, local_rank));
  // Under --deepspeed the config's fp16/bf16 sections decide (HF hands precision to DeepSpeed).
  std::optional<args::TrainerDeepSpeedConfig> deepspeed;
  if (!args.deepspeed().empty()) {
    ASSIGN_OR_RETURN(args::DeepSpeedConfig config, args::LoadDeepSpeedConfig(args.deepspeed()),
                     "--deepspeed");
    deepspeed.emplace(std::move(config));
    RETURN_IF_ERROR_CTX(deepspeed->TrainerConfigProcess(args, std::max(1, world_size)),
                        "--deepspeed");
  }
  ASSIGN_OR_RETURN(setup.precision, precision::ResolvePrecisionPolicy(
                                        args, deepspeed ? &*deepspeed : nullptr,
                                        precision::CurrentPrecisionEnvironment(setup.device)));
  const bool matmuls_in_blas =
      setup.device.is_cpu() && setup.precision.policy.mode == precision::PrecisionMode::kFp32;
  setup.threads = threads::DecideThreads(threads::CurrentThreadInputs(
      matmuls_in_blas, static_cast<int>(args.dataloader_num_workers())));
  if (args.gradient_checkpointing()) {
    ASSIGN_OR_RETURN(setup.gradient_checkpointing, modeling::CheckpointingOptions::FromKwargs(
                                                       args.has_gradient_checkpointing_kwargs()
                                                           ? args.gradient_checkpointing_kwargs()
                                                           : std::string()));
  }
  if (args.fsdp_size() > 0) {
    // --fsdp_config activation_checkpointing: each wrapped layer's activations recomputed in
    // backward (accelerate's non-reentrant checkpoint wrapper); HF refuses it next to
    // --gradient_checkpointing.
    ASSIGN_OR_RETURN(args::FsdpConfig fsdp, args::FsdpConfigOf(args), "--fsdp_config");
    if (fsdp.activation_checkpointing) {
      if (args.gradient_checkpointing()) {
        return absl::InvalidArgumentError(
            "The activation_checkpointing in FSDP config and the gradient_checkpointing in "
            "training arg can't be set to True simultaneously. Please use FSDP's "
            "activation_checkpointing logic when using FSDP.");
      }
      modeling::CheckpointingOptions options;
      options.use_reentrant = false;
      setup.gradient_checkpointing = options;
    }
  }
  return setup;
}

absl::StatusOr<RunSetup> PreflightRun(const args::TrainingArguments& args, int local_rank,
                                      int world_size) {
  ASSIGN_OR_RETURN(RunSetup setup, ResolveRunSetup(args, local_rank, world_size));
  // A --deepspeed config loom cannot train with (the Trainer plans it again with the model's
  // hidden size and the step count), and HF's --fsdp rules.
  RETURN_IF_ERROR(sharding::PreCheckDeepSpeed(args, world_size));
  RETURN_IF_ERROR(sharding::CheckFsdp(args));
  return setup;
}

}  // namespace loom::runtime
