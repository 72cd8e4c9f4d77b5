// CreateStrategy: the data-parallel strategy a run's arguments ask for, through the strategy
// registry (sharding/strategy_registry.h), where the built-in ones are registered by name:
//   - "deepspeed" (--deepspeed): the plan's zero_optimization.stage (deepspeed_plan.h refuses
//     what loom does not implement): stage 0 is DDP through the same config (DeepSpeed 0.13.5
//     runs stage 0 as plain data parallelism); stages 1 and 2 are ZeroStrategy (zero.h; fp32
//     and bf16) with the plan's communication and offload options; stage 3 is
//     ParamShardStrategy (param_shard.h) as ZeRO-3.
//   - "fsdp" (--fsdp non-empty, CheckFsdp's rules first): full_shard / shard_grad_op, and
//     hybrid_shard / hybrid_shard_zero2 within each node (LOCAL_WORLD_SIZE ranks) are
//     ParamShardStrategy (units: auto_wrap with transformer_layer_cls_to_wrap or the model's
//     own layer classes, min_num_params); no_shard is DDP.
//   - "replicated" (otherwise): ReplicatedStrategy — DDP over the process group (ddp_*
//     arguments), or one process without a group.
//   options.factory, when set, is used instead (a program's own strategy). The model,
//   optimizer, precision and process group must outlive the strategy.
//
// Example:
//   ASSIGN_OR_RETURN(std::unique_ptr<ShardingStrategy> strategy,
//                    CreateStrategy(StrategyOptions().set_args(&args).set_model(model.get())
//                                       .set_optimizer(opt.get()).set_precision(precision.get())
//                                       .set_process_group(pg ? &*pg : nullptr)));
//   LOG(INFO) << "data parallelism: " << strategy->Name();
#ifndef LOOM_SHARDING_CREATE_STRATEGY_H_
#define LOOM_SHARDING_CREATE_STRATEGY_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "args/training_args.pb.h"
#include "sharding/strategy.h"
#include "sharding/strategy_registry.h"

namespace loom::sharding {

// The registered name the arguments select: "deepspeed", "fsdp" or "replicated".
std::string BuiltinStrategyName(const args::TrainingArguments& args);

// The factory for these arguments: `own` when set, else the registry's entry for
// BuiltinStrategyName(args) (the built-ins are registered on first use).
absl::StatusOr<std::shared_ptr<const StrategyFactory>> ResolveStrategyFactory(
    const args::TrainingArguments& args, std::shared_ptr<const StrategyFactory> own = nullptr);

// ResolveStrategyFactory(*options.args)->Create(options).
absl::StatusOr<std::unique_ptr<ShardingStrategy>> CreateStrategy(const StrategyOptions& options);

// HF's --fsdp rules (transformers 4.38 `Trainer.__init__` / `TrainingArguments.__post_init__`),
// for a script to check before any work: --fsdp with --deepspeed, a bad --fsdp_config. OK
// without --fsdp. Unlike HF, --fsdp in a process not started by a launcher is not refused: it
// trains as FSDP over one rank (the "fsdp" factory logs that nothing is sharded).
absl::Status CheckFsdp(const args::TrainingArguments& args);

}  // namespace loom::sharding

#endif  // LOOM_SHARDING_CREATE_STRATEGY_H_
