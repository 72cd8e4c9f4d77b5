// accelerate-style command lines for //tools:launch (spec/trainer.md §9): `accelerate launch`'s
// flags and config file, mapped onto the same spawn as torchrun's options.
//
// Style (ParseCommandLine): after any leading launcher options (--prefix_output, --tee,
// --grace_period_s), a first option that is not torchrun's (launch_options.h) makes the whole
// command line accelerate-style, parsed by args/accelerate_config.h (`--config_file FILE`, then
// flags over it; unknown flags are errors). Otherwise it is torchrun-style. The two styles do not
// mix; the launcher's own options go first in accelerate style.
//
// Mapping (accelerate -> LaunchOptions):
//   num_machines -> nnodes; machine_rank -> node_rank; num_processes (the total over machines, as
//   accelerate counts) -> nproc_per_node = num_processes / num_machines (must divide; absent: 1
//   per machine, as accelerate on a machine without GPUs); main_process_ip -> master_addr
//   (default 127.0.0.1; required when num_machines > 1); main_process_port -> master_port
//   (default 29500); gpu_ids other than "all" (and not use_cpu) -> CUDA_VISIBLE_DEVICES.
//   PROGRAM is the training script; its arguments are the TrainingArguments flags the config
//   implies (ImpliedTrainingArgumentsFlags: --bf16, --fsdp ..., --deepspeed ..., --use_cpu)
//   followed by the script's own arguments, so flags the user writes win (the parser keeps the
//   last value of a repeated flag).
//   Not mapped: rdzv_backend (always static), same_network, tpu_*, downcast_bf16,
//   main_training_function, compute_environment; accelerate's ACCELERATE_* variables are not set.
//
// Example:
//   std::vector<std::string> warnings;
//   ASSIGN_OR_RETURN(LaunchOptions options, ParseCommandLine(args, &warnings));
#ifndef LOOM_LAUNCH_ACCELERATE_LAUNCH_H_
#define LOOM_LAUNCH_ACCELERATE_LAUNCH_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "args/accelerate_config.h"
#include "launch/launch_options.h"

namespace loom::launch {

// True when `args` is accelerate-style (see the header comment).
bool IsAccelerateStyle(const std::vector<std::string>& args);

// Maps a parsed `accelerate launch` onto LaunchOptions (launcher options taken from `base`).
absl::StatusOr<LaunchOptions> LaunchOptionsFromAccelerate(const args::AccelerateLaunch& launch,
                                                          LaunchOptions base);

// Either style. `warnings` (may be null) gets the accelerate config's warnings.
absl::StatusOr<LaunchOptions> ParseCommandLine(const std::vector<std::string>& args,
                                               std::vector<std::string>* warnings = nullptr);

}  // namespace loom::launch

#endif  // LOOM_LAUNCH_ACCELERATE_LAUNCH_H_
