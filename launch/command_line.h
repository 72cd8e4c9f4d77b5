// The command line of //tools:launch in any of its three styles: torchrun
// (launch/launch_options.h), accelerate (launch/accelerate_launch.h) or deepspeed
// (launch/deepspeed_launch.h).
//
// Style (DetectStyle): the launcher's own options (--prefix_output, --tee, --redirects,
// --log_dir, --local_ranks_filter, --grace_period_s) may come first; the next word decides: no
// option (PROGRAM, "--"), -h/--help or a torchrun option
// (--nproc_per_node, --nnodes, --node_rank, --master_addr, --master_port, --standalone) ->
// torchrun; a deepspeed option (--num_gpus, --num_accelerators, --include/-i, --exclude/-e,
// --num_nodes, --no_local_rank, --hostfile) -> deepspeed; any other option -> accelerate. Styles do
// not mix: an option of another style later on is an unknown option of the chosen one.
//
// Example:
//   std::vector<std::string> warnings;
//   ASSIGN_OR_RETURN(LaunchOptions options, ParseCommandLine(args, CountLocalGpus(), &warnings));
#ifndef LOOM_LAUNCH_COMMAND_LINE_H_
#define LOOM_LAUNCH_COMMAND_LINE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "launch/launch_options.h"

namespace loom::launch {

enum class CommandLineStyle { kTorchrun, kAccelerate, kDeepSpeed };

CommandLineStyle DetectStyle(const std::vector<std::string>& args);

// `local_gpus`: GPUs of this machine (deepspeed style's default pool). `warnings` (may be null):
// the accelerate config's warnings.
absl::StatusOr<LaunchOptions> ParseCommandLine(const std::vector<std::string>& args, int local_gpus,
                                               std::vector<std::string>* warnings);

}  // namespace loom::launch

#endif  // LOOM_LAUNCH_COMMAND_LINE_H_
