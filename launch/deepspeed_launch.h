// deepspeed-style command lines for //tools:launch (the `deepspeed` launcher, single node):
// `--num_gpus N`, `--include localhost:0,1`, `--exclude localhost:1`, `--master_port`,
// `--master_addr`, `--no_local_rank`, then SCRIPT [ARGS...].
//
// Contract (ParseDeepSpeedCommandLine), following DeepSpeed's runner:
//   * The pool is localhost with slots 0..G-1, G = `local_gpus` (the GPUs this machine has).
//     --include / --exclude (mutually exclusive; "NAME[:SLOT[,SLOT...]][@NAME...]", NAME must be
//     localhost) filter it; a slot that is not in the pool is an error naming it. --num_gpus N
//     (alias --num_accelerators) makes the slots 0..N-1; unlike DeepSpeed it works without
//     GPUs, which gives N CPU ranks. --num_gpus/--num_nodes with --include/--exclude is an error
//     (as in DeepSpeed). No GPUs and none of these flags is an error that says to give
//     --num_gpus.
//   * One rank per slot: nproc_per_node = slot count, CUDA_VISIBLE_DEVICES = the slots ("0,2").
//   * Every rank gets `--local_rank=L` before ARGS, as DeepSpeed's launch.py passes it, unless
//     --no_local_rank.
//   * --num_nodes 1 is accepted; hostfiles and multi-node launches (pdsh/ssh) are not: the error
//     says to run launch on each node with --nnodes/--node_rank instead.
//   Launcher options (--prefix_output, --tee, --grace_period_s) are taken from `base`.
//
// Example:
//   ASSIGN_OR_RETURN(LaunchOptions o, ParseDeepSpeedCommandLine({"--include", "localhost:1",
//                                                                "train", "--x"}, {}, 2));
//   // o.nproc_per_node == 1, CUDA_VISIBLE_DEVICES=1, ranks run "train --local_rank=0 --x"
#ifndef LOOM_LAUNCH_DEEPSPEED_LAUNCH_H_
#define LOOM_LAUNCH_DEEPSPEED_LAUNCH_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "launch/launch_options.h"

namespace loom::launch {

// True when `name` (without dashes, underscores for dashes) is a deepspeed-only option.
bool IsDeepSpeedOption(const std::string& name);

absl::StatusOr<LaunchOptions> ParseDeepSpeedCommandLine(const std::vector<std::string>& args,
                                                        LaunchOptions base, int local_gpus);

// GPUs of this machine as the NVIDIA driver lists them (/proc/driver/nvidia/gpus); 0 without one.
int CountLocalGpus();

}  // namespace loom::launch

#endif  // LOOM_LAUNCH_DEEPSPEED_LAUNCH_H_
