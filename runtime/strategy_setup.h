// The data-parallel strategy of a run, set up the same way for the Trainer and the Accelerator:
// one DeepSpeed planning function for a model, the data-parallel topology the loaders are
// sharded by (asked of the strategy's factory before the strategy exists), the strategy itself
// (from the registry, or a program's own factory), and what an out-of-memory error should
// advise given what the strategy shards.
//
// Contract:
//   - PlanDeepSpeedForModel: nullopt without --deepspeed; else sharding::PlanDeepSpeed over the
//     arguments, the world size, the model's hidden size as HF's trainer_config_finalize finds it
//     in its config.json (args::HiddenSizeOf: hidden_size, hidden_sizes, text_config, ...) and the
//     step count (0: unknown).
//   - DataParallelTopologyFor: the factory's topology for this process, checked (world size as
//     the context's, 1 <= data_parallel_size <= world size, a replica for every rank);
//     InvalidArgument naming the factory's answer otherwise.
//   - SetUpStrategy: the factory's strategy over the pieces; FailedPrecondition when its
//     Topology() differs from what its factory promised. A model built with deferred
//     parameters (modeling/deferred_init.h) goes to a factory that ShardsParameters() as it is
//     (materialised one wrap unit at a time); for any other it is first MaterializeWholeModel'd.
//   - MaterializeWholeModel(model): every deferred parameter gets its bytes and values through
//     the model's parameter_fill(), which is then dropped (no-op for a model without deferred
//     parameters; FailedPrecondition when it has no fill). When the bytes do not fit (e.g. past
//     LOOM_CPU_MEMORY_LIMIT) the ResourceExhausted error names the model's size and the fix:
//     build it sharded, under --deepspeed zero_optimization.stage 3 or --fsdp full_shard.
//   - PlaceModel(model, device): model.to(device), the Trainer's and the Accelerator's. A model
//     with deferred parameters stays deferred on the CPU (the strategy makes it there); for
//     another device it is made whole first, with a warning (sharded construction on an
//     accelerator is not implemented yet: FlatParamUnit builds its buffers on the CPU).
//   - WithOutOfMemoryAdvice: a ResourceExhausted status naming the strategy and the model state
//     this rank holds; it suggests sharding only when the strategy does not shard parameters
//     already (StrategyCapabilities), and offload when it offloads nothing.
//
// Example:
//   ASSIGN_OR_RETURN(std::optional<sharding::DeepSpeedPlan> plan,
//                    PlanDeepSpeedForModel(args, parallel.world_size(), *model, max_steps));
//   ASSIGN_OR_RETURN(auto strategy, SetUpStrategy({.args = &args, .model = model.get(), ...}));
#ifndef LOOM_RUNTIME_STRATEGY_SETUP_H_
#define LOOM_RUNTIME_STRATEGY_SETUP_H_

#include <torch/optim/optimizer.h>

#include <cstdint>
#include <memory>
#include <optional>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "args/training_args.pb.h"
#include "modeling/model.h"
#include "precision/training_precision.h"
#include "runtime/parallel_context.h"
#include "sharding/zero/deepspeed_plan.h"
#include "sharding/strategy.h"
#include "sharding/strategy_registry.h"

namespace loom::runtime {

absl::StatusOr<std::optional<sharding::DeepSpeedPlan>> PlanDeepSpeedForModel(
    const args::TrainingArguments& args, int world_size, const modeling::Model& model,
    int64_t num_training_steps);

absl::StatusOr<sharding::DataParallelTopology> DataParallelTopologyFor(
    const args::TrainingArguments& args, const ParallelContext& parallel,
    std::shared_ptr<const sharding::StrategyFactory> own_factory);

struct StrategySetup {
  const args::TrainingArguments* args = nullptr;
  modeling::Model* model = nullptr;
  torch::optim::Optimizer* optimizer = nullptr;
  precision::TrainingPrecision* precision = nullptr;
  const ParallelContext* parallel = nullptr;
  const sharding::DeepSpeedPlan* deepspeed = nullptr;  // the plan of --deepspeed, if any
  std::shared_ptr<const sharding::StrategyFactory> factory;  // null: from the arguments
};

absl::StatusOr<std::unique_ptr<sharding::ShardingStrategy>> SetUpStrategy(
    const StrategySetup& setup);

absl::Status MaterializeWholeModel(modeling::Model& model);

// MaterializeWholeModel unless the run's strategy factory (own_factory, else the arguments')
// ShardsParameters(): the one decision SetUpStrategy and Trainer::Init share.
absl::Status MaterializeUnlessSharded(const args::TrainingArguments& args,
                                      modeling::Model& model,
                                      std::shared_ptr<const sharding::StrategyFactory> own_factory);

absl::Status PlaceModel(modeling::Model& model, const c10::Device& device);


absl::Status WithOutOfMemoryAdvice(const absl::Status& status,
                                   const sharding::ShardingStrategy& strategy);

}  // namespace loom::runtime

#endif  // LOOM_RUNTIME_STRATEGY_SETUP_H_
