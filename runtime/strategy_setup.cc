#include "runtime/strategy_setup.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "args/deepspeed_config.h"
#include "base/cpu_memory_limit.h"
#include "base/status_macros.h"
#include "base/torch_status.h"
#include "glog/logging.h"
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

std::string Mib(int64_t bytes) {
  return absl::StrFormat("%.2f MiB", static_cast<double>(bytes) / (1 << 20));
}

// What sharded construction held, against the whole model (the peak when
// LOOM_CPU_MEMORY_LIMIT counts the CPU tensor bytes).
void LogShardedConstruction(const modeling::Model& model) {
  int64_t whole = 0;
  for (const at::Tensor& p : model.parameters()) whole += p.numel() * p.element_size();
  std::string peak;
  if (std::optional<base::CpuMemoryStats> stats = base::CurrentCpuMemoryStats()) {
    peak = absl::StrCat("; peak CPU tensor memory while building: ", Mib(stats->peak),
                        " (now ", Mib(stats->live), ", limit ", Mib(stats->limit), ")");
  }
  LOG(INFO) << "sharded construction: " << model.ClassName() << " built one wrap unit at a time, "
            << "its whole parameters being " << Mib(whole) << peak;
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
  ASSIGN_OR_RETURN(std::shared_ptr<const sharding::StrategyFactory> factory,
                   sharding::ResolveStrategyFactory(*setup.args, setup.factory));
  if (setup.model != nullptr) {
    RETURN_IF_ERROR(MaterializeUnlessSharded(*setup.args, *setup.model, factory));
  }
  const bool sharded_build = setup.model != nullptr && modeling::AnyDeferred(*setup.model);
  base::ResetCpuMemoryPeak();
  const std::optional<distributed::ProcessGroup>& pg = setup.parallel->process_group();
  ASSIGN_OR_RETURN(std::unique_ptr<sharding::ShardingStrategy> strategy,
                   factory->Create(sharding::StrategyOptions()
                                       .set_args(setup.args)
                                       .set_deepspeed(setup.deepspeed)
                                       .set_model(setup.model)
                                       .set_optimizer(setup.optimizer)
                                       .set_precision(setup.precision)
                                       .set_process_group(pg ? &*pg : nullptr)));
  if (sharded_build) LogShardedConstruction(*setup.model);
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

absl::Status MaterializeWholeModel(modeling::Model& model) {
  if (!modeling::AnyDeferred(model)) return absl::OkStatus();
  if (!model.parameter_fill()) {
    return absl::FailedPreconditionError(absl::StrCat(
        model.ClassName(), " has deferred parameters but no parameter_fill to make their values"));
  }
  const int64_t bytes = modeling::DeferredBytes(model);
  absl::Status made = modeling::MaterializeParameters(model, "", model.parameter_fill());
  if (absl::IsResourceExhausted(made)) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "building ", model.ClassName(), " whole on this rank (", Mib(bytes),
        " of parameters) does not fit: ", made.message(),
        ". Build it sharded instead, each rank holding only its shards: --deepspeed with "
        "zero_optimization.stage 3 (zero.Init), or --fsdp \"full_shard auto_wrap\" with "
        "--fsdp_config '{\"cpu_ram_efficient_loading\": true}'"));
  }
  RETURN_IF_ERROR(made);
  model.set_parameter_fill(nullptr);
  return absl::OkStatus();
}

absl::Status MaterializeUnlessSharded(const args::TrainingArguments& args,
                                      modeling::Model& model,
                                      std::shared_ptr<const sharding::StrategyFactory> own) {
  if (!modeling::AnyDeferred(model)) return absl::OkStatus();
  ASSIGN_OR_RETURN(std::shared_ptr<const sharding::StrategyFactory> factory,
                   sharding::ResolveStrategyFactory(args, std::move(own)));
  ASSIGN_OR_RETURN(const bool sharded, factory->ShardsParameters(args));
  if (sharded) return absl::OkStatus();
  return MaterializeWholeModel(model);
}

absl::Status PlaceModel(modeling::Model& model, const c10::Device& device) {
  if (modeling::AnyDeferred(model)) {
    if (device.is_cpu()) return absl::OkStatus();  // made on the CPU by the strategy
    LOG(WARNING) << "sharded construction on " << device.str()
                 << " is not implemented yet: building " << model.ClassName()
                 << " whole before placing it there";
    RETURN_IF_ERROR(MaterializeWholeModel(model));
  }
  try {
    model.to(device);
  } catch (const std::exception& e) {
    return base::TorchErrorToStatus(e, absl::StatusCode::kInternal, "placing the model");
  }
  return absl::OkStatus();
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
