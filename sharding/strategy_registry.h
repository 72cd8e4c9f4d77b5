// StrategyFactory and StrategyRegistry: how a run gets its data-parallel strategy. Strategies
// are registered by name (tensorstore's driver-registry pattern); the flags resolve to a
// registered name (sharding/create_strategy.h: "replicated", "deepspeed", "fsdp"), and a
// program can hand the Trainer or the Accelerator a factory of its own (TrainerOptions /
// AcceleratorOptions `strategy_factory`) without touching CreateStrategy.
//
// Contract:
//   - A factory answers, before anything is built, the DataParallelTopology its strategy will
//     have on (world_size, rank) for these arguments: the loop sizes and shards its data loaders
//     by it (default: one replica per rank). The strategy it creates must report the same
//     Topology().
//   - Create(options) builds the strategy over options' pieces (model, optimizer, precision,
//     process group; none owned, all outlive the strategy). Errors name what is wrong.
//   - ShardsParameters(args): true when the strategy for these arguments shards the
//     parameters and so takes a model built with deferred parameters (modeling/deferred_init.h),
//     materialising one wrap unit at a time; for the others (the default) the model is
//     materialised whole before Create (runtime/strategy_setup.h). An error when the arguments
//     cannot tell (an unreadable --deepspeed file), the one Create would give.
//   - StrategyRegistry::Global() is process-wide and thread-safe. Register refuses an empty
//     name, a null factory and a name already taken (AlreadyExists); Find names the registered
//     ones when the name is unknown.
//
// Example:
//   class MyFactory : public sharding::StrategyFactory {
//     absl::StatusOr<std::unique_ptr<ShardingStrategy>> Create(
//         const StrategyOptions& o) const override { ... }
//   };
//   RETURN_IF_ERROR(sharding::StrategyRegistry::Global().Register(
//       "mine", std::make_shared<MyFactory>()));
//   trainer_options.strategy_factory = *sharding::StrategyRegistry::Global().Find("mine");
#ifndef LOOM_SHARDING_STRATEGY_REGISTRY_H_
#define LOOM_SHARDING_STRATEGY_REGISTRY_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "args/training_args.pb.h"
#include "sharding/zero/deepspeed_plan.h"
#include "sharding/strategy.h"
#include "sharding/strategy_pieces.h"

namespace loom::sharding {

// What a factory builds a strategy from: the pieces, the arguments and, under --deepspeed,
// the plan the front end made for this model (null: the factory plans it itself, without a
// hidden size or step count).
struct StrategyOptions : StrategyPieces<StrategyOptions> {
  const args::TrainingArguments* args = nullptr;
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

class StrategyFactory {
 public:
  virtual ~StrategyFactory() = default;
  virtual DataParallelTopology Topology(const args::TrainingArguments& args, int world_size,
                                        int rank) const {
    return DataParallelTopology::PerRank(world_size, rank);
  }
  virtual absl::StatusOr<std::unique_ptr<ShardingStrategy>> Create(
      const StrategyOptions& options) const = 0;
  virtual absl::StatusOr<bool> ShardsParameters(const args::TrainingArguments& args) const {
    return false;
  }
};

class StrategyRegistry {
 public:
  static StrategyRegistry& Global();

  absl::Status Register(const std::string& name, std::shared_ptr<const StrategyFactory> factory);
  absl::StatusOr<std::shared_ptr<const StrategyFactory>> Find(const std::string& name) const;
  std::vector<std::string> Names() const;

 private:
  mutable absl::Mutex mu_;
  std::map<std::string, std::shared_ptr<const StrategyFactory>> factories_ ABSL_GUARDED_BY(mu_);
};

}  // namespace loom::sharding

#endif  // LOOM_SHARDING_STRATEGY_REGISTRY_H_
