#include "runtime/strategy_setup.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "args/deepspeed_config.h"
#include "base/status_macros.h"
#include "modeling/deferred_init.h"
#include "nlohmann/json.hpp"
#include "sharding/create_strategy.h"

namespace loom::runtime {
namespace {

std::string Describe(const sharding::DataParallelTopology& t) {
  return absl::StrCat("world size ", t.world_size, ", data-parallel size ", t.data_parallel_size,
                      ", data-parallel rank ", t.data_parallel_rank,
                      t.replica_of_rank.empty()
                          ? ""
                          : absl::StrCat(", replicas [", absl::StrJoin(t.replica_of_rank, ", "),
                                         "]"));
}

absl::Status CheckTopology(const sharding::DataParallelTopology& t,
                           const ParallelContext& parallel) {
  bool ok = t.world_size == parallel.world_size() && t.data_parallel_size >= 1 &&
            t.data_parallel_size <= t.world_size &&
            t.ReplicaOf(parallel.rank()) == t.data_parallel_rank &&
            (t.replica_of_rank.empty() || static_cast<int>(t.replica_of_rank.size()) == t.world_size);
  for (int r = 0; ok && r < t.world_size; ++r) {
    const int replica = t.ReplicaOf(r);
    ok = replica >= 0 && replica < t.data_parallel_size;
  }
  if (ok) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "the data-parallel strategy's topology (", Describe(t), ") does not fit this process (rank ",
      parallel.rank(), " of ", parallel.world_size(),
      "): every rank needs a replica in [0, data_parallel_size)"));
}

}  // namespace

absl::StatusOr<std::optional<sharding::DeepSpeedPlan>> PlanDeepSpeedForModel(
    const args::TrainingArguments& args, int world_size, const modeling::Model& model,
    int64_t num_training_steps) {
  if (args.deepspeed().empty()) return std::nullopt;
  std::optional<int64_t> hidden_size;
  const std::string config = model.ConfigJson();
  if (!config.empty()) {
    const auto json = nlohmann::ordered_json::parse(config, nullptr, /*allow_exceptions=*/false);
    if (json.is_object()) hidden_size = args::HiddenSizeOf(json);
  }
  ASSIGN_OR_RETURN(sharding::DeepSpeedPlan plan,
                   sharding::PlanDeepSpeed(args, world_size, hidden_size, num_training_steps));
  return plan;
}

absl::StatusOr<sharding::DataParallelTopology> DataParallelTopologyFor(
    const args::TrainingArguments& args, const ParallelContext& parallel,
    std::shared_ptr<const sharding::StrategyFactory> own_factory) {
  ASSIGN_OR_RETURN(std::shared_ptr<const sharding::StrategyFactory> factory,
                   sharding::ResolveStrategyFactory(args, std::move(own_factory)));
  const sharding::DataParallelTopology topology =
      factory->Topology(args, parallel.world_size(), parallel.rank());
  RETURN_IF_ERROR(CheckTopology(topology, parallel));
  return topology;
}

absl::StatusOr<std::unique_ptr<sharding::ShardingStrategy>> SetUpStrategy(
    const StrategySetup& setup) {
  if (setup.args == nullptr || setup.parallel == nullptr) {
    return absl::InvalidArgumentError("SetUpStrategy: args and parallel must be set");
  }
  if (setup.model != nullptr && modeling::AnyDeferred(*setup.model)) {
    return absl::FailedPreconditionError(absl::StrCat(
        setup.model->ClassName(),
        " has deferred parameters (built without their values, e.g. by CreateDeferred): no "
        "data-parallel strategy materialises them yet; build the model with Create"));
  }
  ASSIGN_OR_RETURN(std::shared_ptr<const sharding::StrategyFactory> factory,
                   sharding::ResolveStrategyFactory(*setup.args, setup.factory));
  const std::optional<distributed::ProcessGroup>& pg = setup.parallel->process_group();
  ASSIGN_OR_RETURN(std::unique_ptr<sharding::ShardingStrategy> strategy,
                   factory->Create(sharding::StrategyOptions()
                                       .set_args(setup.args)
                                       .set_deepspeed(setup.deepspeed)
                                       .set_model(setup.model)
                                       .set_optimizer(setup.optimizer)
                                       .set_precision(setup.precision)
                                       .set_process_group(pg ? &*pg : nullptr)));
  const sharding::DataParallelTopology promised =
      factory->Topology(*setup.args, setup.parallel->world_size(), setup.parallel->rank());
  const sharding::DataParallelTopology reported = strategy->Topology();
  if (!(promised == reported)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the data-parallel strategy ", strategy->Name(), " reports a topology (",
        Describe(reported), ") other than its factory promised (", Describe(promised), ")"));
  }
  return strategy;
}

absl::Status WithOutOfMemoryAdvice(const absl::Status& status,
                                   const sharding::ShardingStrategy& strategy) {
  const sharding::StrategyCapabilities can = strategy.Capabilities();
  std::string advice;
  if (!can.shards_parameters) {
    advice = ". Sharding it over the ranks holds less per rank: --fsdp \"full_shard auto_wrap\", "
             "or --deepspeed with zero_optimization stage 2 or 3";
  } else if (!can.offloads) {
    advice = ". Offloading it holds less on the device: --deepspeed with zero_optimization "
             "offload_optimizer / offload_param {\"device\": \"cpu\"}, or --fsdp offload";
  }
  return absl::ResourceExhaustedError(
      absl::StrCat(status.message(), " (data parallelism: ", strategy.Name(),
                   "; model state on this rank: ", strategy.StateBytes().Describe(), advice, ")"));
}

}  // namespace loom::runtime
