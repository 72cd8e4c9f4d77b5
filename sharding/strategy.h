// ShardingStrategy: the seam between the training loop and data parallelism — one
// object, chosen once when training starts (sharding/create_strategy.h), that owns everything
// a data-parallel scheme changes in a step: the per-micro-batch hooks, the gradient reduction,
// the global gradient norm and clipping, the optimizer step and zero_grad, and the report of
// the model-state bytes this rank holds. The loop calls it without knowing which scheme it
// has (no backend if/else in the loop). Implementations: ReplicatedStrategy (one process, or
// DDP over a process group: every rank holds everything), ZeroStrategy (ZeRO stages 1 and 2).
//
// Contract (every implementation; sharding/strategy_conformance.h tests it):
//   - BeforeForward(closes_window) before each training forward; closes_window is true for the
//     micro-batch after whose backward the optimizer steps. Micro-batches that do not close a
//     window communicate nothing (DDP's no_sync, DeepSpeed's accumulation boundary).
//   - AfterBackward() after that micro-batch's backward. After a closing one, the gradients the
//     strategy keeps (full .grad for replicated, this rank's partition for ZeRO-2) hold the
//     average over ranks of the window's gradients.
//   - ClipGradients(max_norm) once per window, after AfterBackward: loss-scaled gradients are
//     unscaled first; then the 2-norm over ALL gradients of the model (every shard, each
//     element once) is returned — equal to the unsharded run's norm — and when max_norm > 0 the
//     gradients are scaled by min(1, max_norm / (norm + 1e-6)) (torch's clip_grad_norm_).
//     max_norm <= 0: nothing is computed and nullopt is returned (HF logs no grad_norm then).
//   - OptimizerStep(): the optimizer's step on what this rank owns, then every rank holds the
//     updated parameters. Returns false when the loss scaler skipped the step (inf/nan
//     gradients; the caller then does not step the lr scheduler, as HF).
//   - ZeroGrad(): every gradient the strategy keeps is zero (or absent) for the next window.
//   - StateBytes(): the bytes of model state this rank holds now (parameters, gradients,
//     optimizer states, fp32 master copies), counted from the tensors themselves.
//   - OwnsOptimizerState(): false when HF's optimizer.pt (written by the saving rank) holds
//     the optimizer state (replicated strategies); true when the strategy saves and loads it
//     itself (ZeRO: DeepSpeed's global_stepN/ layout).
//   - SaveState(folder, info): every rank calls it, after the Trainer's own files are in the
//     staged checkpoint folder and before it is committed; a strategy that does not own the
//     optimizer state writes nothing. LoadState(folder) puts the state back at resume (model
//     weights already loaded; a strategy that does not own the optimizer state does nothing).
//     ZeRO's files are read whatever world size wrote them (repartitioned for this one).
//   - BeginFullParameters() / EndFullParameters(write_back): between them every parameter of
//     the model is whole on this rank (to save or load the model's weights). Collectives:
//     every rank calls both, in the same order. With write_back, weights put into the
//     parameters meanwhile become the strategy's own (its shards). Strategies that keep the
//     parameters whole do nothing.
//   - Errors (a peer gone, a timeout, parameters without gradients) are Statuses that name the
//     cause; after an error the strategy may only be destroyed.
//
// Example (the training loop, trainer/train_loop.cc):
//   ASSIGN_OR_RETURN(std::unique_ptr<ShardingStrategy> strategy, CreateStrategy(options));
//   RETURN_IF_ERROR(strategy->BeforeForward(closes_window));
//   loss.backward();
//   RETURN_IF_ERROR(strategy->AfterBackward());
//   if (closes_window) {
//     ASSIGN_OR_RETURN(std::optional<double> grad_norm, strategy->ClipGradients(max_norm));
//     ASSIGN_OR_RETURN(bool stepped, strategy->OptimizerStep());
//     strategy->ZeroGrad();
//   }
#ifndef LOOM_SHARDING_STRATEGY_H_
#define LOOM_SHARDING_STRATEGY_H_

#include <ATen/core/ivalue.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace loom::sharding {

// What the Trainer knows that a strategy's checkpoint files record (DeepSpeed's model states
// file keeps the step counters and the scheduler's state next to the module).
struct StrategySaveInfo {
  int64_t global_step = 0;
  int64_t global_samples = 0;
  c10::IValue lr_scheduler;  // the scheduler's state_dict(); None when there is none
};

// Model-state bytes one rank holds (DeepSpeed 0.13.5's estimate_zero*_model_states_mem_needs
// count the same four parts).
struct ModelStateBytes {
  int64_t parameters = 0;        // the module's parameters as they are stored (full or a shard)
  int64_t gradients = 0;         // gradients kept (full .grad or a partition)
  int64_t optimizer_states = 0;  // the optimizer's state tensors (e.g. AdamW's two moments)
  int64_t master_weights = 0;    // fp32 copies of half-precision parameters, when kept

  int64_t Total() const { return parameters + gradients + optimizer_states + master_weights; }
  // "parameters 1.00 MiB, gradients 1.00 MiB, optimizer states 2.00 MiB, master weights 0 B
  // (total 4.00 MiB)".
  std::string Describe() const;
};

// What a strategy does with the model state, asked by type (never decided from Name()).
struct StrategyCapabilities {
  bool shards_parameters = false;       // parameters whole only inside Begin/EndFullParameters
  bool shards_gradients = false;        // each rank keeps a partition of the gradients
  bool shards_optimizer_state = false;  // each rank keeps a partition of the optimizer state
  bool offloads = false;                // optimizer state or parameters in host memory / NVMe
};

// How the ranks of a run split the data: world_size processes form data_parallel_size replicas
// that each read their own share of every global batch. A pure data-parallel strategy has one
// replica per rank; a strategy that splits the model over ranks (tensor parallelism) puts
// several ranks into one replica, and they read the same data.
struct DataParallelTopology {
  int world_size = 1;
  int data_parallel_size = 1;
  int data_parallel_rank = 0;  // this rank's replica
  // Every world rank's replica (size world_size); empty: rank r is replica r.
  std::vector<int> replica_of_rank;

  // One replica per rank (DDP, ZeRO, FSDP).
  static DataParallelTopology PerRank(int world_size, int rank);
  // The replica of world rank `rank`.
  int ReplicaOf(int rank) const;
  // True for the lowest world rank of its replica: the one whose gathered rows count once.
  bool LeadsReplica(int rank) const;

  bool operator==(const DataParallelTopology& o) const {
    return world_size == o.world_size && data_parallel_size == o.data_parallel_size &&
           data_parallel_rank == o.data_parallel_rank && replica_of_rank == o.replica_of_rank;
  }
};

class ShardingStrategy {
 public:
  virtual ~ShardingStrategy() = default;

  // "single process", "DDP", "ZeRO-2", ... (logged once when training starts; never compared).
  virtual std::string Name() const = 0;
  virtual StrategyCapabilities Capabilities() const = 0;
  virtual DataParallelTopology Topology() const = 0;
  virtual absl::Status BeforeForward(bool closes_window) = 0;
  virtual absl::Status AfterBackward() = 0;
  virtual absl::StatusOr<std::optional<double>> ClipGradients(double max_norm) = 0;
  virtual absl::StatusOr<bool> OptimizerStep() = 0;
  virtual void ZeroGrad() = 0;
  virtual ModelStateBytes StateBytes() const = 0;
  virtual bool OwnsOptimizerState() const { return false; }
  virtual absl::Status SaveState(const std::string& folder, const StrategySaveInfo& info) {
    return absl::OkStatus();
  }
  virtual absl::Status LoadState(const std::string& folder) { return absl::OkStatus(); }
  virtual absl::Status BeginFullParameters() { return absl::OkStatus(); }
  virtual absl::Status EndFullParameters(bool write_back) { return absl::OkStatus(); }
};

}  // namespace loom::sharding

#endif  // LOOM_SHARDING_STRATEGY_H_
