#include "launch/accelerate_launch.h"

#include "nlohmann/json.hpp"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace loom::launch {

absl::StatusOr<LaunchOptions> LaunchOptionsFromAccelerate(const args::AccelerateLaunch& launch,
                                                          LaunchOptions base, int local_gpus,
                                                          std::vector<std::string>* warnings) {
  const args::AccelerateConfig& c = launch.config;
  if (launch.training_script.empty()) {
    return absl::InvalidArgumentError(
        "no training script given: usage is launch [accelerate options] SCRIPT [ARGS...]");
  }
  LaunchOptions o = std::move(base);
  o.nnodes = static_cast<int>(c.num_machines);
  o.node_rank = static_cast<int>(c.machine_rank);
  int64_t total = 0;
  if (c.num_processes.has_value()) {
    total = *c.num_processes;
  } else {
    total = c.num_machines * ((c.use_cpu || local_gpus == 0) ? 1 : local_gpus);
    if (warnings != nullptr) {
      warnings->push_back(absl::StrCat("`--num_processes` was set to a value of ", total,
                                       " (one per GPU of each machine, 1 without GPUs)"));
    }
  }
  if (total < c.num_machines || total % c.num_machines != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "num_processes ", total, " is not a multiple of num_machines ", c.num_machines,
        ": accelerate counts processes over all machines; set --num_processes (or the config "
        "file's num_processes) to num_machines times the processes per machine"));
  }
  o.nproc_per_node = static_cast<int>(total / c.num_machines);
  if (c.num_machines > 1 && !c.main_process_ip.has_value()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--main_process_ip is required with num_machines ", c.num_machines,
        ": give the address of the machine with machine_rank 0 (flag or config file key)"));
  }
  o.master_addr = c.main_process_ip.value_or("127.0.0.1");
  // args/accelerate_config.h has checked the port's range.
  if (c.main_process_port.has_value()) o.master_port = static_cast<int>(*c.main_process_port);
  if (c.gpu_ids != "all" && !c.use_cpu) o.extra_env.emplace_back("CUDA_VISIBLE_DEVICES", c.gpu_ids);
  ASSIGN_OR_RETURN(o.program_args, args::ImpliedTrainingArgumentsFlags(c));
  // What `accelerate launch` exports for Accelerator-based scripts (accelerate/accelerator.h
  // reads them): the mixed precision, CPU use, which plugin, and — loom's own — the implied
  // TrainingArguments flags as a JSON list, which carry the FSDP / DeepSpeed settings.
  const char* mixed = c.mixed_precision == args::MixedPrecision::kBf16   ? "bf16"
                      : c.mixed_precision == args::MixedPrecision::kFp16 ? "fp16"
                                                                          : "no";
  o.extra_env.emplace_back("ACCELERATE_MIXED_PRECISION", mixed);
  if (c.use_cpu) o.extra_env.emplace_back("ACCELERATE_USE_CPU", "true");
  if (c.distributed_type == args::DistributedType::kFsdp) {
    o.extra_env.emplace_back("ACCELERATE_USE_FSDP", "true");
  }
  if (c.distributed_type == args::DistributedType::kDeepSpeed) {
    o.extra_env.emplace_back("ACCELERATE_USE_DEEPSPEED", "true");
    if (c.deepspeed_config && c.deepspeed_config->gradient_accumulation_steps) {
      o.extra_env.emplace_back("ACCELERATE_GRADIENT_ACCUMULATION_STEPS",
                               std::to_string(*c.deepspeed_config->gradient_accumulation_steps));
    }
  }
  o.extra_env.emplace_back("LOOM_ACCELERATE_TRAINING_ARGS",
                           nlohmann::json(o.program_args).dump());
  o.program = launch.training_script;
  o.program_args.insert(o.program_args.end(), launch.training_script_args.begin(),
                        launch.training_script_args.end());
  return o;
}

absl::StatusOr<LaunchOptions> ParseAccelerateCommandLine(const std::vector<std::string>& args,
                                                         LaunchOptions base, int local_gpus,
                                                         std::vector<std::string>* warnings) {
  ASSIGN_OR_RETURN(args::AccelerateLaunch launch, args::ParseAccelerateLaunch(args, warnings));
  return LaunchOptionsFromAccelerate(launch, std::move(base), local_gpus, warnings);
}

}  // namespace loom::launch
