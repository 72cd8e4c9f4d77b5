// CreateStrategy: the one place that decides which data-parallel scheme a run uses,
// from TrainingArguments (+ the DeepSpeed config of --deepspeed) and the process group.
//
// Contract:
//   - --deepspeed: the plan's zero_optimization.stage (deepspeed_plan.h, which refuses the
//     keys loom does not implement). Stage 0 is DDP through the same config (DeepSpeed's
//     "ZeRO disabled"); stages 1 and 2 are ZeroStrategy (zero.h; fp32 and bf16) with the
//     plan's communication options.
//   - --deepspeed stage 3: ParamShardStrategy (param_shard.h) as ZeRO-3.
//   - --fsdp (non-empty, CheckFsdp's rules first): full_shard / shard_grad_op, and
//     hybrid_shard / hybrid_shard_zero2 within each node (LOCAL_WORLD_SIZE ranks) are
//     ParamShardStrategy (units: auto_wrap with transformer_layer_cls_to_wrap or the model's
//     own layer classes, min_num_params); no_shard is DDP.
//   - Otherwise: ReplicatedStrategy — DDP over the process group (ddp_* arguments), or one
//     process without a group.
//   The model, optimizer, precision and process group must outlive the strategy.
//
// Example:
//   ASSIGN_OR_RETURN(std::unique_ptr<ShardingStrategy> strategy,
//                    CreateStrategy(StrategyOptions().set_args(&args).set_model(model.get())
//                                       .set_optimizer(opt.get()).set_precision(precision.get())
//                                       .set_process_group(pg ? &*pg : nullptr)));
//   LOG(INFO) << "data parallelism: " << strategy->Name();
#ifndef LOOM_SHARDING_CREATE_STRATEGY_H_
#define LOOM_SHARDING_CREATE_STRATEGY_H_

#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>

#include <memory>

#include "absl/status/statusor.h"
#include "args/training_args.pb.h"
#include "distributed/process_group.h"
#include "precision/training_precision.h"
#include "sharding/deepspeed_plan.h"
#include "sharding/strategy.h"
#include "sharding/strategy_pieces.h"

namespace loom::sharding {

struct StrategyOptions : StrategyPieces<StrategyOptions> {
  const args::TrainingArguments* args = nullptr;
  // The plan of --deepspeed (the Trainer makes it before the optimizer); when null and
  // --deepspeed is set, CreateStrategy plans it itself (without a hidden size or step count,
  // so "auto" keys that need them are errors).
  const DeepSpeedPlan* deepspeed = nullptr;

  StrategyOptions& set_args(const args::TrainingArguments* v) {
    args = v;
    return *this;
  }
  StrategyOptions& set_deepspeed(const DeepSpeedPlan* v) {
    deepspeed = v;
    return *this;
  }
};

absl::StatusOr<std::unique_ptr<ShardingStrategy>> CreateStrategy(const StrategyOptions& options);

// HF's --fsdp rules (transformers 4.41 Trainer.__init__ / TrainingArguments), for a script to check
// before any work: --fsdp with --deepspeed, --fsdp in a process not started by a launcher
// (`launched` false), a bad --fsdp_config. OK without --fsdp.
absl::Status CheckFsdp(const args::TrainingArguments& args, bool launched);

}  // namespace loom::sharding

#endif  // LOOM_SHARDING_CREATE_STRATEGY_H_
