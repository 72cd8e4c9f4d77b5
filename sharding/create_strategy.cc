#include "sharding/create_strategy.h"

#include <algorithm>
#include <cstdlib>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "args/deepspeed_config.h"
#include "args/fsdp_config.h"
#include "base/status_macros.h"
#include "distributed/ddp.h"
#include "glog/logging.h"
#include "sharding/param_shard/param_shard.h"
#include "sharding/replicated.h"
#include "sharding/zero/zero.h"

namespace loom::sharding {

namespace {

bool Has(const args::TrainingArguments& args, const std::string& option) {
  return std::find(args.fsdp().begin(), args.fsdp().end(), option) != args.fsdp().end();
}

absl::Status FsdpNotYet(const std::string& what, const std::string& fix) {
  return absl::UnimplementedError(absl::StrCat(what, " is not implemented in loom yet; ", fix));
}

}  // namespace

absl::Status CheckFsdp(const args::TrainingArguments& args) {
  if (args.fsdp_size() == 0) return absl::OkStatus();
  // HF's Trainer.__init__ (transformers 4.41).
  if (args.has_deepspeed() && !args.deepspeed().empty()) {
    return absl::InvalidArgumentError(
        "Using --fsdp xxx together with --deepspeed is not possible, deactivate one of those "
        "flags.");
  }
  // HF refuses --fsdp outside distributed training ("Using fsdp only works in distributed
  // training."); loom runs it: one process is FSDP over a world of one.
  RETURN_IF_ERROR_CTX(args::FsdpConfigOf(args).status(), "--fsdp_config");
  return absl::OkStatus();
}

namespace {

template <typename T>
std::unique_ptr<ShardingStrategy> Upcast(std::unique_ptr<T> strategy) {
  return std::unique_ptr<ShardingStrategy>(std::move(strategy));
}

absl::StatusOr<std::unique_ptr<ShardingStrategy>> CreateReplicated(const StrategyOptions& o) {
  ASSIGN_OR_RETURN(std::unique_ptr<ReplicatedStrategy> strategy,
                   ReplicatedStrategy::Create(ReplicatedOptions().set_pieces(o).set_ddp(
                       distributed::DdpOptionsFromArgs(*o.args))));
  return Upcast(std::move(strategy));
}

// ZeRO-3 as DeepSpeed 0.13.5 `stage3.py` runs it: prefetching up to
// stage3_prefetch_bucket_size elements ahead in forward and backward (0 turns it off).
absl::StatusOr<std::unique_ptr<ShardingStrategy>> CreateZero3(const StrategyOptions& o,
                                                              const DeepSpeedPlan& plan) {
  const bool prefetch = plan.stage3_prefetch_bucket_size > 0;
  ASSIGN_OR_RETURN(
      std::unique_ptr<ParamShardStrategy> zero3,
      ParamShardStrategy::Create(
          ParamShardOptions()
              .set_pieces(o)
              .set_name("ZeRO-3")
              .set_persistence_threshold(plan.stage3_param_persistence_threshold)
              .set_prefetch(prefetch, prefetch ? BackwardPrefetch::kPre : BackwardPrefetch::kNone,
                            plan.stage3_prefetch_bucket_size)
              .set_max_live_elements(plan.stage3_max_live_parameters)
              .set_offload(plan.offload)
              .set_deepspeed(plan.config.raw, plan.gradient_clipping)));
  return Upcast(std::move(zero3));
}

absl::StatusOr<std::unique_ptr<ShardingStrategy>> CreateZero12(const StrategyOptions& o,
                                                               const DeepSpeedPlan& plan) {
  ASSIGN_OR_RETURN(std::unique_ptr<ZeroStrategy> zero,
                   ZeroStrategy::Create(ZeroOptions()
                                            .set_pieces(o)
                                            .set_stage(plan.stage)
                                            .set_comm(plan.comm)
                                            .set_offload(plan.offload)
                                            .set_round_robin_gradients(plan.round_robin_gradients)
                                            .set_ds_config(plan.config.raw,
                                                           plan.gradient_clipping)));
  return Upcast(std::move(zero));
}

// --deepspeed: the ZeRO stage of the plan (the front end's, or one made here without a hidden
// size or step count).
class DeepSpeedFactory : public StrategyFactory {
 public:
  // ZeRO stage 3 (HF's is_deepspeed_zero3_enabled); an unreadable config is its error, before
  // anything is built whole.
  absl::StatusOr<bool> ShardsParameters(const args::TrainingArguments& args) const override {
    ASSIGN_OR_RETURN(const args::DeepSpeedConfig config,
                     args::LoadDeepSpeedConfig(args.deepspeed()), "--deepspeed");
    return config.IsZero3();
  }
  absl::StatusOr<std::unique_ptr<ShardingStrategy>> Create(
      const StrategyOptions& o) const override {
    // HF refuses --fsdp with --deepspeed (CheckFsdp says so).
    if (o.args->fsdp_size() > 0) RETURN_IF_ERROR(CheckFsdp(*o.args));
    std::optional<DeepSpeedPlan> own_plan;
    const DeepSpeedPlan* plan = o.deepspeed;
    if (plan == nullptr) {
      ASSIGN_OR_RETURN(own_plan,
                       PlanDeepSpeed(*o.args, o.process_group ? o.process_group->world_size() : 1,
                                     std::nullopt, /*num_training_steps=*/0));
      plan = &*own_plan;
    }
    switch (plan->stage) {
      case 0:
        return CreateReplicated(o);  // stage 0: plain data parallelism
      case 1:
      case 2:
        return CreateZero12(o, *plan);
      case 3:
        return CreateZero3(o, *plan);
      default:
        return absl::UnimplementedError(absl::StrCat(
            "--deepspeed: zero_optimization.stage ", plan->stage,
            " is not a ZeRO stage loom implements (stages 0, 1, 2 and 3 are)"));
    }
  }
};

BackwardPrefetch BackwardPrefetchOf(const args::FsdpConfig& cfg) {
  if (cfg.backward_prefetch == args::FsdpBackwardPrefetchPolicy::kBackwardPre) {
    return BackwardPrefetch::kPre;
  }
  if (cfg.backward_prefetch == args::FsdpBackwardPrefetchPolicy::kBackwardPost) {
    return BackwardPrefetch::kPost;
  }
  return BackwardPrefetch::kNone;
}

// Hybrid sharding shards within a node: LOCAL_WORLD_SIZE ranks (numbered consecutively by the
// launcher), or the whole group when the launcher did not say.
int HybridNodeSize(const StrategyOptions& o) {
  const char* local = std::getenv("LOCAL_WORLD_SIZE");
  int node_size = local != nullptr ? std::atoi(local) : 0;
  if (node_size <= 0 && o.process_group != nullptr) node_size = o.process_group->world_size();
  return node_size;
}

// --fsdp: FSDP's sharding strategies over ParamShardStrategy; no_shard is DDP.
class FsdpFactory : public StrategyFactory {
 public:
  // Every --fsdp strategy but no_shard (DDP).
  absl::StatusOr<bool> ShardsParameters(const args::TrainingArguments& args) const override {
    return !Has(args, "no_shard");
  }
  absl::StatusOr<std::unique_ptr<ShardingStrategy>> Create(
      const StrategyOptions& o) const override {
    const args::TrainingArguments& args = *o.args;
    RETURN_IF_ERROR(CheckFsdp(args));
    if (o.process_group == nullptr || o.process_group->world_size() == 1) {
      LOG(WARNING) << "--fsdp on one process: a world of one rank, so every parameter stays "
                      "whole on it; launch with //tools:launch --nproc_per_node N to shard";
    }
    // no_shard: FSDP's NO_SHARD keeps every parameter, gradient and state on every rank.
    if (Has(args, "no_shard")) return CreateReplicated(o);
    ASSIGN_OR_RETURN(args::FsdpConfig cfg, args::FsdpConfigOf(args), "--fsdp_config");
    RETURN_IF_ERROR(CheckOffloadDevice(o));
    const bool hybrid = Has(args, "hybrid_shard") || Has(args, "hybrid_shard_zero2");
    const bool shard_grad_op = Has(args, "shard_grad_op") || Has(args, "hybrid_shard_zero2");
    // FSDP's CPUOffload(offload_params=True): the shards and their gradients in host memory,
    // the optimizer stepping there.
    OffloadOptions offload;
    offload.optimizer = offload.params = Has(args, "offload");
    ASSIGN_OR_RETURN(
        std::unique_ptr<ParamShardStrategy> fsdp,
        ParamShardStrategy::Create(
            ParamShardOptions()
                .set_pieces(o)
                .set_name(hybrid ? (shard_grad_op ? "FSDP hybrid_shard_zero2"
                                                  : "FSDP hybrid_shard")
                          : shard_grad_op ? "FSDP shard_grad_op"
                                          : "FSDP full_shard")
                .set_hybrid_group_size(hybrid ? HybridNodeSize(o) : 0)
                .set_auto_wrap(Has(args, "auto_wrap"))
                .set_wrap_classes(cfg.transformer_layer_cls_to_wrap)
                .set_min_num_params(cfg.min_num_params)
                .set_sync_module_states(cfg.sync_module_states)
                .set_prefetch(cfg.forward_prefetch, BackwardPrefetchOf(cfg))
                .set_reshard_after_forward(!shard_grad_op)
                .set_offload(offload)));
    return Upcast(std::move(fsdp));
  }

 private:
  // "offload": the shards live in host memory between uses; on a CPU build the device is the
  // host, so the same code runs (a CUDA model is refused until offload lands there).
  static absl::Status CheckOffloadDevice(const StrategyOptions& o) {
    if (!Has(*o.args, "offload") || o.model == nullptr) return absl::OkStatus();
    for (const at::Tensor& p : o.model->parameters()) {
      if (!p.device().is_cpu()) return FsdpNotYet("--fsdp offload of a GPU model", "remove offload");
    }
    return absl::OkStatus();
  }
};

// No --deepspeed, no --fsdp: DDP over the process group, or one process.
class ReplicatedFactory : public StrategyFactory {
 public:
  absl::StatusOr<std::unique_ptr<ShardingStrategy>> Create(
      const StrategyOptions& o) const override {
    return CreateReplicated(o);
  }
};

void RegisterBuiltins() {
  static std::once_flag once;
  std::call_once(once, [] {
    StrategyRegistry& registry = StrategyRegistry::Global();
    for (auto& [name, factory] :
         std::vector<std::pair<std::string, std::shared_ptr<const StrategyFactory>>>{
             {"replicated", std::make_shared<ReplicatedFactory>()},
             {"deepspeed", std::make_shared<DeepSpeedFactory>()},
             {"fsdp", std::make_shared<FsdpFactory>()}}) {
      const absl::Status s = registry.Register(name, factory);
      LOG_IF(WARNING, !s.ok()) << s.message();  // a program took the name first: its wins
    }
  });
}

}  // namespace

std::string BuiltinStrategyName(const args::TrainingArguments& args) {
  if (args.has_deepspeed() && !args.deepspeed().empty()) return "deepspeed";
  if (args.fsdp_size() > 0) return "fsdp";
  return "replicated";
}

absl::StatusOr<std::shared_ptr<const StrategyFactory>> ResolveStrategyFactory(
    const args::TrainingArguments& args, std::shared_ptr<const StrategyFactory> own) {
  if (own != nullptr) return own;
  RegisterBuiltins();
  return StrategyRegistry::Global().Find(BuiltinStrategyName(args));
}

absl::StatusOr<std::unique_ptr<ShardingStrategy>> CreateStrategy(const StrategyOptions& o) {
  if (o.args == nullptr) return absl::InvalidArgumentError("CreateStrategy: args must be set");
  ASSIGN_OR_RETURN(std::shared_ptr<const StrategyFactory> factory,
                   ResolveStrategyFactory(*o.args));
  return factory->Create(o);
}

}  // namespace loom::sharding
