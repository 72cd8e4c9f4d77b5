// accelerate-style command lines for //tools:launch (accelerate 0.27): `accelerate launch`'s
// flags and config file, mapped onto the same spawn as torchrun's options.
//
// Parsing (ParseAccelerateCommandLine) is args/accelerate_config.h's ParseAccelerateLaunch
// (`--config_file FILE`, then flags over it; unknown flags are errors); launch/command_line.h
// decides which style a command line is.
//
// Mapping (accelerate -> LaunchOptions):
//   num_machines -> nnodes; machine_rank -> node_rank; num_processes (the total over machines, as
//   accelerate counts) -> nproc_per_node = num_processes / num_machines (must divide; absent:
//   one per GPU of this machine, as accelerate's default, or 1 with use_cpu or without GPUs, on
//   each machine, with a warning naming the value); main_process_ip -> master_addr
//   (default 127.0.0.1; required when num_machines > 1); main_process_port -> master_port
//   (default 29500); gpu_ids other than "all" (and not use_cpu) -> CUDA_VISIBLE_DEVICES.
//   PROGRAM is the training script; its arguments are the TrainingArguments flags the config
//   implies (ImpliedTrainingArgumentsFlags: --bf16, --fsdp ..., --deepspeed ..., --use_cpu)
//   followed by the script's own arguments, so flags the user writes win (the parser keeps the
//   last value of a repeated flag).
//   Environment of every rank, as `accelerate launch` exports it for Accelerator-based scripts:
//   ACCELERATE_MIXED_PRECISION (no/fp16/bf16), ACCELERATE_USE_CPU (with use_cpu),
//   ACCELERATE_USE_FSDP / ACCELERATE_USE_DEEPSPEED (the distributed_type),
//   ACCELERATE_GRADIENT_ACCUMULATION_STEPS (DeepSpeed plugin's), and loom's
//   LOOM_ACCELERATE_TRAINING_ARGS: the implied TrainingArguments flags as a JSON list of
//   strings (the FSDP / DeepSpeed settings accelerate passes in its FSDP_* / ACCELERATE_DEEPSPEED_*
//   variables).
//   Not mapped: rdzv_backend (always static), same_network, tpu_*, downcast_bf16,
//   main_training_function, compute_environment.
//
// Example:
//   std::vector<std::string> warnings;
//   ASSIGN_OR_RETURN(LaunchOptions options,
//                    ParseAccelerateCommandLine({"--num_processes=2", "train"}, {}, 0, &warnings));
#ifndef LOOM_LAUNCH_ACCELERATE_LAUNCH_H_
#define LOOM_LAUNCH_ACCELERATE_LAUNCH_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "args/accelerate_config.h"
#include "launch/launch_options.h"

namespace loom::launch {

// Maps a parsed `accelerate launch` onto LaunchOptions (launcher options taken from `base`;
// `warnings` may be null).
absl::StatusOr<LaunchOptions> LaunchOptionsFromAccelerate(const args::AccelerateLaunch& launch,
                                                          LaunchOptions base, int local_gpus,
                                                          std::vector<std::string>* warnings);

// `accelerate launch`'s arguments (without the launcher's own options, which come in `base`).
// `local_gpus`: the GPUs of this machine (num_processes' default).
// `warnings` (may be null) gets the accelerate config's warnings.
absl::StatusOr<LaunchOptions> ParseAccelerateCommandLine(const std::vector<std::string>& args,
                                                         LaunchOptions base, int local_gpus,
                                                         std::vector<std::string>* warnings);

}  // namespace loom::launch

#endif  // LOOM_LAUNCH_ACCELERATE_LAUNCH_H_
