// ParamShardStrategy: parameter sharding — FSDP's FULL_SHARD and SHARD_GRAD_OP
// (torch 1.13 FullyShardedDataParallel, HF's --fsdp) and DeepSpeed 0.13.5's ZeRO stage 3
// (stage3.py) behind the
// strategy seam of strategy.h: parameters, gradients and optimizer states all partitioned over
// the ranks.
//
// Layout:
//   - Wrap units: the model's modules of the classes `wrap_classes` names (FSDP's
//     transformer_layer_cls_to_wrap; empty: the model's own UnitClassNames(), HF's default of
//     _no_split_modules), those with fewer than `min_num_params` parameters left out (FSDP's
//     size-based policy, applied to the layers a model can run as units; no units at all
//     without auto_wrap), parameters below `persistence_threshold` elements left out (DeepSpeed's
//     persistent parameters). Every trainable
//     parameter outside them belongs to the root unit (FSDP's outermost unit), which stays
//     gathered (as FSDP keeps the root unsharded between forward and backward, and DeepSpeed
//     keeps persistent parameters): its gradients and optimizer state are still sharded.
//   - Each unit's parameters of one optimizer group form a flat buffer padded to a multiple of
//     the world size (FSDP's FlatParameter); rank r keeps elements [r * n / W, (r + 1) * n / W)
//     as its shard. The optimizer steps on the shards (each group's params become its shards),
//     so its state covers only this rank's elements. Frozen parameters stay whole on every rank.
//   - The model runs its units through a FullShardRunner (full_shard_runner.h): gathered for
//     forward, released after it (full_shard / ZeRO-3) or after backward (shard_grad_op),
//     gathered again for backward, gradients reduce-scattered into the shards' gradients.
//
// Per window (contract of strategy.h, with one difference: parameters are gathered and
// gradients reduced at every micro-batch, since the parameters exist only as shards — FSDP
// without no_sync):
//   - AfterBackward: the runner's FinishBackward (the root's gradients reduced).
//   - ClipGradients: the 2-norm over every shard gradient, summed over the ranks, computed as
//     each framework does: torch 2.x FSDP's clip_grad_norm_ (float32 shard norms, a float32
//     coefficient clamped to 1) or DeepSpeed's ZeRO-3 (float64 norms, (norm + 1e-6) /
//     max_norm).
//   - OptimizerStep: the optimizer steps on the shards; the root is gathered again.
//   - StateBytes: the shards, the parameters gathered now (the root), frozen parameters, the
//     shard gradients, the optimizer's state.
//   - Checkpoints (OwnsOptimizerState): DeepSpeed 0.13.5's ZeRO-3 layout (what zero_to_fp32.py
//     reads) in global_stepN/: every rank writes zero_pp_rank_R_mp_rank_00_model_states.pt
//     (empty placeholders for the partitioned parameters, the buffers) and
//     zero_pp_rank_R_mp_rank_00_optim_states.pt (fp32_flat_groups: per group the rank's
//     partition of each parameter, ceil(numel / W) elements, in order; the optimizer state in
//     the same layout); LoadState reads a checkpoint of any world size, one file at a time.
//   - Hybrid sharding (hybrid_group_size, FSDP's HYBRID_SHARD / HYBRID_SHARD_ZERO2): the above
//     within each group of ranks (a node), the groups replicas of each other: every shard's
//     gradient is also summed across them, and only the first group writes checkpoint files
//     (as a checkpoint of the group's size, which any world size resumes).
//   - BeginFullParameters / EndFullParameters: every parameter gathered (to save or load the
//     model's weights), then written back into the shards and released.
// Sharded construction: a model built with deferred parameters (modeling/deferred_init.h: what
// DeepSpeed's zero.Init and FSDP's meta-device construction give) is materialised one unit at a
// time through its parameter_fill() — each unit's full parameters made, this rank's shard kept,
// the unit released — so no rank ever holds the whole model; deferred parameters are not
// broadcast (each rank makes the same values), and the model's fill is dropped once the shards
// hold the values.
// Precision: fp32 and autocast (parameters stay fp32); 16-bit weights and the fp16 GradScaler
// are refused (Unimplemented) until they land.
//
// Example:
//   ASSIGN_OR_RETURN(auto fsdp, ParamShardStrategy::Create(ParamShardOptions()
//       .set_model(m).set_optimizer(opt).set_precision(p).set_process_group(&pg)));
#ifndef LOOM_SHARDING_PARAM_SHARD_PARAM_SHARD_H_
#define LOOM_SHARDING_PARAM_SHARD_PARAM_SHARD_H_

#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "sharding/param_shard/full_shard_runner.h"
#include "sharding/offload/offload.h"
#include "sharding/offload/optimizer_swapper.h"
#include "sharding/offload/param_swapper.h"
#include "sharding/strategy.h"
#include "sharding/strategy_pieces.h"
#include "sharding/deepspeed_checkpoint/zero_checkpoint.h"

namespace loom::sharding {

struct ParamShardOptions : StrategyPieces<ParamShardOptions> {
  std::string name = "FSDP full_shard";   // logged
  std::vector<std::string> wrap_classes;  // empty: the model's UnitClassNames()
  int64_t min_num_params = 0;
  bool auto_wrap = true;  // false: no units, the whole model is the root (FSDP without auto_wrap)
  // Parameters of fewer elements stay whole in the root (DeepSpeed's
  // stage3_param_persistence_threshold; 0: none).
  int64_t persistence_threshold = 0;
  bool reshard_after_forward = true;  // false: shard_grad_op
  // Prefetching the next unit's all-gather (full_shard_runner.h).
  bool forward_prefetch = false;
  BackwardPrefetch backward_prefetch = BackwardPrefetch::kNone;
  int64_t prefetch_limit = std::numeric_limits<int64_t>::max();
  int64_t max_live_elements = std::numeric_limits<int64_t>::max();  // stage3_max_live_parameters
  bool sync_module_states = true;  // rank 0's weights broadcast first
  // FSDP's hybrid sharding: > 0 shards within consecutive groups of this many ranks (a node:
  // torchrun numbers a node's ranks consecutively) and replicates across them; 0: over all.
  int hybrid_group_size = 0;
  bool deepspeed_clipping = false;  // DeepSpeed's clip formula instead of torch's
  // Recorded in the checkpoint files (DeepSpeed's ds_config and clip_grad).
  nlohmann::ordered_json ds_config = nlohmann::ordered_json::object();
  double gradient_clipping = 0;
  // offload_optimizer / offload_param / FSDP's offload (offload.h): the shards, their gradients
  // and the optimizer state in host memory.
  OffloadOptions offload;

  ParamShardOptions& set_offload(const OffloadOptions& v) {
    offload = v;
    return *this;
  }
  ParamShardOptions& set_name(std::string v) {
    name = std::move(v);
    return *this;
  }
  ParamShardOptions& set_wrap_classes(std::vector<std::string> v) {
    wrap_classes = std::move(v);
    return *this;
  }
  ParamShardOptions& set_min_num_params(int64_t v) {
    min_num_params = v;
    return *this;
  }
  ParamShardOptions& set_auto_wrap(bool v) {
    auto_wrap = v;
    return *this;
  }
  ParamShardOptions& set_persistence_threshold(int64_t v) {
    persistence_threshold = v;
    return *this;
  }
  ParamShardOptions& set_reshard_after_forward(bool v) {
    reshard_after_forward = v;
    return *this;
  }
  ParamShardOptions& set_prefetch(bool forward, BackwardPrefetch backward,
                                  int64_t limit = std::numeric_limits<int64_t>::max()) {
    forward_prefetch = forward;
    backward_prefetch = backward;
    prefetch_limit = limit;
    return *this;
  }
  ParamShardOptions& set_max_live_elements(int64_t v) {
    max_live_elements = v;
    return *this;
  }
  ParamShardOptions& set_hybrid_group_size(int v) {
    hybrid_group_size = v;
    return *this;
  }
  ParamShardOptions& set_sync_module_states(bool v) {
    sync_module_states = v;
    return *this;
  }
  ParamShardOptions& set_deepspeed(const nlohmann::ordered_json& config, double clipping) {
    deepspeed_clipping = true;
    ds_config = config;
    gradient_clipping = clipping;
    return *this;
  }
};

class ParamShardStrategy : public ShardingStrategy {
 public:
  // InvalidArgument for a missing piece, a model that is not a modeling::Model, wrap classes
  // the model does not have (naming the classes it has), a non-fp32 parameter or one not in the
  // model; Unimplemented for 16-bit weights or a GradScaler; FailedPrecondition when the
  // optimizer already has state. Installs the runner into the model (removed again when the
  // strategy is destroyed).
  static absl::StatusOr<std::unique_ptr<ParamShardStrategy>> Create(const ParamShardOptions& o);
  ~ParamShardStrategy() override;

  std::string Name() const override { return options_.name + OffloadSuffix(options_.offload); }
  // Parameters, gradients and optimizer state sharded (over the node under hybrid sharding);
  // every rank reads its own data.
  StrategyCapabilities Capabilities() const override {
    StrategyCapabilities c;
    c.shards_parameters = c.shards_gradients = c.shards_optimizer_state = true;
    c.offloads = options_.offload.any();
    return c;
  }
  DataParallelTopology Topology() const override {
    return pg_ ? DataParallelTopology::PerRank(pg_->world_size(), pg_->rank())
               : DataParallelTopology::PerRank(1, 0);
  }
  absl::Status BeforeForward(bool closes_window) override { return absl::OkStatus(); }
  absl::Status AfterBackward() override;
  absl::StatusOr<std::optional<double>> ClipGradients(double max_norm) override;
  absl::StatusOr<bool> OptimizerStep() override;
  void ZeroGrad() override;
  ModelStateBytes StateBytes() const override;
  bool OwnsOptimizerState() const override { return true; }
  absl::Status SaveState(const std::string& folder, const StrategySaveInfo& info) override;
  absl::Status LoadState(const std::string& folder) override;
  absl::Status BeginFullParameters() override;
  absl::Status EndFullParameters(bool write_back) override;

  const FullShardRunner& runner() const { return *runner_; }
  FullShardRunner& runner() { return *runner_; }  // e.g. to reset its peak counter
  // Per optimizer group, its parameters in checkpoint order (pieces in order, each piece's
  // parameters in module order).
  const std::vector<ZeroGroupLayout>& layout() const { return layout_; }

 private:
  absl::StatusOr<double> DeepSpeedClip(double max_norm);
  absl::StatusOr<double> FsdpClip(double max_norm);
  explicit ParamShardStrategy(const ParamShardOptions& o) : options_(o) {
    if (o.process_group != nullptr) pg_ = *o.process_group;
  }
  // The sharding group (every rank, or the node's under hybrid sharding): shards, gathers,
  // the gradient norm and the checkpoint files are over it.
  distributed::ProcessGroup* pg() { return shard_pg_ ? &*shard_pg_ : pg_ ? &*pg_ : nullptr; }
  const distributed::ProcessGroup* pg() const {
    return shard_pg_ ? &*shard_pg_ : pg_ ? &*pg_ : nullptr;
  }
  int world() const { return pg() ? pg()->world_size() : 1; }
  int rank() const { return pg() ? pg()->rank() : 0; }
  // Under hybrid sharding, which replica (node) this rank belongs to; 0 otherwise.
  int replica() const { return replica_pg_ ? replica_pg_->rank() : 0; }
  std::vector<at::Tensor> Shards() const;
  // The shards' gradients made so far (a shard has none before its first reduction).
  std::vector<at::Tensor> ShardGradients() const;
  // FSDP's hybrid sharding (hybrid_group_size below the world size): shard_pg_ over this
  // node's ranks, replica_pg_ over this local rank on every node; nothing otherwise.
  absl::Status SetUpHybridGroups();
  absl::Status LoadOwnState(const std::string& folder);
  absl::Status LoadPieces(const std::string& folder, const std::vector<size_t>& pieces,
                          int* saved_world_size);
  // fn(pieces) for each sub-group of the optimizer state in turn, its state in memory and the
  // optimizer narrowed to it (offload_optimizer nvme: OptimizerSwapper::ForEachSubGroup);
  // otherwise once for every piece.
  absl::Status ForEachStateGroup(
      const std::function<absl::Status(const std::vector<size_t>& pieces)>& fn, bool dirty);
  std::map<size_t, int64_t> OptimizerIndexOf(const std::vector<size_t>& pieces) const;
  // This rank's optimizer file; `failed_already` (an earlier file's error) skips the writes
  // but not the gathers every rank takes part in.
  absl::Status SaveOptimizerFile(const std::string& path, const ZeroFilesInfo& files,
                                 const absl::Status& failed_already);
  // Every shard in `shards` fetched from / evicted to the parameter swapper (no-op without).
  absl::Status FetchShards(const std::vector<at::Tensor>& shards);
  absl::Status EvictShards(const std::vector<at::Tensor>& shards, bool dirty);

  ParamShardOptions options_;
  std::optional<distributed::ProcessGroup> pg_;  // a handle on the caller's group (every rank)
  std::optional<distributed::ProcessGroup> shard_pg_;    // hybrid: this node's ranks
  std::optional<distributed::ProcessGroup> replica_pg_;  // hybrid: this local rank on every node
  // offload_param "nvme": the wrapped units' shards in swap files (declared before runner_,
  // whose units use it, so that it outlives them).
  std::unique_ptr<ParamSwapper> param_swapper_;
  std::unique_ptr<FullShardRunner> runner_;
  // offload_optimizer "nvme": the optimizer state in swap files (ZeRO-Infinity).
  std::unique_ptr<OptimizerSwapper> swapper_;
  std::vector<ZeroGroupLayout> layout_;
  std::vector<at::Tensor> unsharded_;  // model parameters outside every piece (frozen ones)
};

}  // namespace loom::sharding

#endif  // LOOM_SHARDING_PARAM_SHARD_PARAM_SHARD_H_
