#include "sharding/create_strategy.h"

#include <algorithm>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "args/deepspeed_config.h"
#include "args/fsdp_config.h"
#include "base/status_macros.h"
#include "distributed/ddp.h"
#include "sharding/param_shard.h"
#include "sharding/replicated.h"
#include "sharding/zero.h"

namespace loom::sharding {

namespace {

bool Has(const args::TrainingArguments& args, const std::string& option) {
  return std::find(args.fsdp().begin(), args.fsdp().end(), option) != args.fsdp().end();
}

absl::Status FsdpNotYet(const std::string& what, const std::string& fix) {
  return absl::UnimplementedError(absl::StrCat(what, " is not implemented in loom yet; ", fix));
}

}  // namespace

absl::Status CheckFsdp(const args::TrainingArguments& args, bool launched) {
  if (args.fsdp_size() == 0) return absl::OkStatus();
  // HF's Trainer.__init__ (transformers 4.41).
  if (args.has_deepspeed() && !args.deepspeed().empty()) {
    return absl::InvalidArgumentError(
        "Using --fsdp xxx together with --deepspeed is not possible, deactivate one of those "
        "flags.");
  }
  if (!launched) {
    return absl::InvalidArgumentError(
        "Using fsdp only works in distributed training. (--fsdp: launch the script with "
        "//tools:launch, e.g. --nproc_per_node 2)");
  }
  RETURN_IF_ERROR_CTX(args::FsdpConfigOf(args).status(), "--fsdp_config");
  return absl::OkStatus();
}

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
    if (plan->stage == 3) {
      ASSIGN_OR_RETURN(
          std::unique_ptr<ParamShardStrategy> zero3,
          ParamShardStrategy::Create(
              ParamShardOptions()
                  .set_pieces(o)
                  .set_name("ZeRO-3")
                  .set_persistence_threshold(plan->stage3_param_persistence_threshold)
                  // DeepSpeed prefetches up to stage3_prefetch_bucket_size elements ahead, in
                  // forward and backward; 0 turns it off.
                  .set_prefetch(plan->stage3_prefetch_bucket_size > 0,
                                plan->stage3_prefetch_bucket_size > 0 ? BackwardPrefetch::kPre
                                                                      : BackwardPrefetch::kNone,
                                plan->stage3_prefetch_bucket_size)
                  .set_max_live_elements(plan->stage3_max_live_parameters)
                  .set_offload(plan->offload)
                  .set_deepspeed(plan->config.raw, plan->gradient_clipping)));
      return std::unique_ptr<ShardingStrategy>(std::move(zero3));
    }
    if (plan->stage == 1 || plan->stage == 2) {
      ASSIGN_OR_RETURN(
          std::unique_ptr<ZeroStrategy> zero,
          ZeroStrategy::Create(ZeroOptions()
                                   .set_pieces(o)
                                   .set_stage(plan->stage)
                                   .set_comm(plan->comm)
                                   .set_offload(plan->offload)
                                   .set_round_robin_gradients(plan->round_robin_gradients)
                                   .set_ds_config(plan->config.raw, plan->gradient_clipping)));
      return std::unique_ptr<ShardingStrategy>(std::move(zero));
    }
    if (plan->stage != 0) {
      return absl::UnimplementedError(
          absl::StrCat("--deepspeed: zero_optimization.stage ", plan->stage,
                       " is not implemented in loom yet (stages 0, 1, 2 and 3 are)"));
    }
  }
  if (args.fsdp_size() > 0) {
    const bool launched = o.process_group != nullptr || std::getenv("LOCAL_RANK") != nullptr;
    RETURN_IF_ERROR(CheckFsdp(args, launched));
    if (!Has(args, "no_shard")) {
      ASSIGN_OR_RETURN(args::FsdpConfig cfg, args::FsdpConfigOf(args), "--fsdp_config");
      const bool hybrid = Has(args, "hybrid_shard") || Has(args, "hybrid_shard_zero2");
      const bool shard_grad_op = Has(args, "shard_grad_op") || Has(args, "hybrid_shard_zero2");
      // Hybrid: shard within a node (LOCAL_WORLD_SIZE ranks, numbered consecutively by the
      // launcher), replicate across nodes.
      int node_size = 0;
      if (hybrid) {
        const char* local = std::getenv("LOCAL_WORLD_SIZE");
        node_size = local != nullptr ? std::atoi(local) : 0;
        if (node_size <= 0 && o.process_group != nullptr) {
          node_size = o.process_group->world_size();
        }
      }
      BackwardPrefetch backward = BackwardPrefetch::kNone;
      if (cfg.backward_prefetch == args::FsdpBackwardPrefetchPolicy::kBackwardPre) {
        backward = BackwardPrefetch::kPre;
      } else if (cfg.backward_prefetch == args::FsdpBackwardPrefetchPolicy::kBackwardPost) {
        backward = BackwardPrefetch::kPost;
      }
      // "offload": the shards live in host memory between uses; on a CPU build the device is
      // the host, so the same code runs (a CUDA model is refused until offload lands there).
      if (Has(args, "offload") && o.model != nullptr) {
        for (const at::Tensor& p : o.model->parameters()) {
          if (!p.device().is_cpu()) {
            return FsdpNotYet("--fsdp offload of a GPU model", "remove offload");
          }
        }
      }
      // FSDP's CPUOffload(offload_params=True): the shards and their gradients in host memory,
      // the optimizer stepping there.
      OffloadOptions fsdp_offload;
      fsdp_offload.optimizer = fsdp_offload.params = Has(args, "offload");
      ASSIGN_OR_RETURN(std::unique_ptr<ParamShardStrategy> fsdp,
                       ParamShardStrategy::Create(
                           ParamShardOptions()
                               .set_pieces(o)
                               .set_name(hybrid ? (shard_grad_op ? "FSDP hybrid_shard_zero2"
                                                                 : "FSDP hybrid_shard")
                                         : shard_grad_op ? "FSDP shard_grad_op"
                                                         : "FSDP full_shard")
                               .set_hybrid_group_size(node_size)
                               .set_auto_wrap(Has(args, "auto_wrap"))
                               .set_wrap_classes(cfg.transformer_layer_cls_to_wrap)
                               .set_min_num_params(cfg.min_num_params)
                               .set_sync_module_states(cfg.sync_module_states)
                               .set_prefetch(cfg.forward_prefetch, backward)
                               .set_reshard_after_forward(!shard_grad_op)
                               .set_offload(fsdp_offload)));
      return std::unique_ptr<ShardingStrategy>(std::move(fsdp));
    }
    // no_shard: DDP (FSDP's NO_SHARD keeps every parameter, gradient and state on every rank).
  }
  ASSIGN_OR_RETURN(std::unique_ptr<ReplicatedStrategy> strategy,
                   ReplicatedStrategy::Create(ReplicatedOptions().set_pieces(o).set_ddp(
                       distributed::DdpOptionsFromArgs(args))));
  return std::unique_ptr<ShardingStrategy>(std::move(strategy));
}

}  // namespace loom::sharding
