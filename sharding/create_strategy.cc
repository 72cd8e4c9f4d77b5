#include "sharding/create_strategy.h"

#include "absl/strings/str_cat.h"
#include "args/deepspeed_config.h"
#include "base/status_macros.h"
#include "distributed/ddp.h"
#include "sharding/replicated.h"
#include "sharding/zero.h"

namespace loom::sharding {

absl::StatusOr<std::unique_ptr<ShardingStrategy>> CreateStrategy(const StrategyOptions& o) {
  if (o.args == nullptr) return absl::InvalidArgumentError("CreateStrategy: args must be set");
  const args::TrainingArguments& args = *o.args;
  if (args.has_deepspeed() && !args.deepspeed().empty()) {
    std::optional<DeepSpeedPlan> own_plan;
    const DeepSpeedPlan* plan = o.deepspeed;
    if (plan == nullptr) {
      ASSIGN_OR_RETURN(own_plan,
                       PlanDeepSpeed(args, o.process_group ? o.process_group->world_size() : 1,
                                     std::nullopt, /*num_training_steps=*/0));
      plan = &*own_plan;
    }
    if (plan->stage == 1 || plan->stage == 2) {
      ASSIGN_OR_RETURN(
          std::unique_ptr<ZeroStrategy> zero,
          ZeroStrategy::Create(ZeroOptions()
                                   .set_pieces(o)
                                   .set_stage(plan->stage)
                                   .set_comm(plan->comm)
                                   .set_ds_config(plan->config.raw, plan->gradient_clipping)));
      return std::unique_ptr<ShardingStrategy>(std::move(zero));
    }
    if (plan->stage != 0) {
      return absl::UnimplementedError(
          absl::StrCat("--deepspeed: zero_optimization.stage ", plan->stage,
                       " is not implemented in loom yet (stages 0, 1 and 2 are)"));
    }
  }
  if (args.fsdp_size() > 0) {
    return absl::UnimplementedError(
        "--fsdp is not implemented in loom yet; train without it (DDP under //tools:launch)");
  }
  ASSIGN_OR_RETURN(std::unique_ptr<ReplicatedStrategy> strategy,
                   ReplicatedStrategy::Create(ReplicatedOptions().set_pieces(o).set_ddp(
                       distributed::DdpOptionsFromArgs(args))));
  return std::unique_ptr<ShardingStrategy>(std::move(strategy));
}

}  // namespace loom::sharding
