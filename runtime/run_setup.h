// What a run is, decided once from its arguments before any work: where it trains (HF's
// args.device), in what precision (the Trainer's amp setup, precision/policy.h) and how the
// model recomputes activations (--gradient_checkpointing_kwargs). Scripts resolve it before
// reading data — so a bad combination stops them first and HF's "Process rank: ..., device:
// ..., 16-bits training: ..." line is truthful — and the Trainer resolves it in Init.
//
// Contract:
//   - device: cpu with --use_cpu or when LibTorch has no CUDA; otherwise cuda:<local_rank>
//     (each launched rank its own GPU; cuda:0 alone), FailedPrecondition when the node has
//     fewer GPUs than local ranks.
//   - precision: ResolvePrecisionPolicy for this machine; under --deepspeed from the config's
//     fp16/bf16 sections ("auto" filled from the flags).
//   - gradient_checkpointing: set with --gradient_checkpointing, from its kwargs
//     (modeling::CheckpointingOptions::FromKwargs; bad keys are InvalidArgument).
//   - threads: threads/thread_plan.h's plan for this process (fp32 matmuls on the CPU run in
//     BLAS, bf16 ones in oneDNN; the data-loader workers take cores), applied by the Trainer.
//   - --auto_find_batch_size in a run of several processes is refused (not implemented yet):
//     a rank that runs out of memory alone would retry while the others wait in a collective.
//   - PreflightRun(args, local_rank, world_size): everything a run refuses before any work —
//     ResolveRunSetup, the --deepspeed config's model-independent checks
//     (sharding::PreCheckDeepSpeed) and --fsdp's rules (sharding::CheckFsdp) — so that a script
//     and //tools:show_args refuse exactly the same command lines.
//
// Example:
//   ASSIGN_OR_RETURN(RunSetup setup, ResolveRunSetup(args, local_rank, world_size));
//   LOG(WARNING) << "device: " << setup.device << ", 16-bits training: "
//                << setup.precision.policy.SixteenBit();
#ifndef LOOM_RUNTIME_RUN_SETUP_H_
#define LOOM_RUNTIME_RUN_SETUP_H_

#include <ATen/ATen.h>

#include <optional>

#include "absl/status/statusor.h"
#include "args/training_args.pb.h"
#include "modeling/activation_checkpoint.h"
#include "precision/policy.h"
#include "threads/thread_plan.h"

namespace loom::runtime {

struct RunSetup {
  at::Device device = at::Device(at::kCPU);
  precision::ResolvedPrecision precision;
  std::optional<modeling::CheckpointingOptions> gradient_checkpointing;
  threads::ThreadPlan threads;
};

absl::StatusOr<RunSetup> ResolveRunSetup(const args::TrainingArguments& args, int local_rank,
                                         int world_size);
absl::StatusOr<RunSetup> PreflightRun(const args::TrainingArguments& args, int local_rank,
                                      int world_size);

}  // namespace loom::runtime

#endif  // LOOM_RUNTIME_RUN_SETUP_H_
