// ZeroStrategy: DeepSpeed ZeRO stages 1 and 2 for fp32 and bf16 training (DeepSpeed 0.13.5
// stage_1_and_2.py) — the optimizer states (stage 1), and the gradients too (stage 2), partitioned
// over the ranks, laid out as DeepSpeed's stage_1_and_2 optimizer lays them out.
//
// Layout (what DeepSpeed's checkpoints and zero_to_fp32 rely on; deepspeed_checkpoint_layout.md):
//   - Per optimizer parameter group g, its trainable parameters in group order are flattened
//     into one fp32 buffer, zero-padded at the end to a multiple of 2 x world_size (DeepSpeed's
//     nccl_start_alignment_factor x dp size). Rank r owns elements [r * n / W, (r + 1) * n / W):
//     its "single_partition_of_fp32_groups[g]", a separate fp32 copy (master partition).
//   - The optimizer steps on the partitions: each group's params become its one partition
//     tensor (DeepSpeed swaps param_group['params'] the same way), so the optimizer's state
//     covers only this rank's elements. Options (lr, weight decay, betas) stay per group.
//
// Per window (contract of strategy.h):
//   - The model's trainable parameters become views of one flat fp32 buffer per group (their
//     values unchanged); with stage 1 their .grad are views of a flat gradient buffer too, so
//     backward accumulates straight into it (DeepSpeed's contiguous gradients).
//   - AfterBackward on a closing micro-batch: every rank's gradients are divided by the world
//     size and reduce-scattered (distributed/collectives.h: ReduceScatterSum), so each rank
//     gets the average of its partition's slice as the partition's gradient; the full .grad
//     are scratch afterwards — stage 1 keeps the buffer (as DeepSpeed does), stage 2 drops
//     them. Non-closing micro-batches only accumulate locally.
//   - ClipGradients: the 2-norm of the partition gradients, squares accumulated in double and
//     summed over ranks (padding is zero),
//     and DeepSpeed's clip: when (norm + 1e-6) / max_norm > 1 the partition gradients are
//     divided by it.
//   - OptimizerStep: the optimizer steps on the partitions, then the updated partitions are
//     all-gathered straight into the flat parameter buffers (every rank's parameters).
//   - ZeroGrad: partition gradients zeroed; the parameters' gradients zeroed in place (stage 1)
//     or dropped (stage 2).
//   - StateBytes: full parameters, full gradients (stage 1) or the partition (stage 2), the
//     optimizer's state (partition-sized), the fp32 master partitions.
// Communication (ZeroCommOptions): reduction and gathering in buckets of a bounded size,
// reduce-scatter or all-reduce, all-gather or per-rank broadcasts — after backward, or (with
// overlap_comm) the reduction during it.
// bf16 (the precision policy's kHalfWeights, DeepSpeed's bf16 section): Create converts the
// model to bf16 (DeepSpeed's engine calls module.bfloat16()); the flat buffers, the parameters
// and their gradients are bf16; gradients are reduced in the communication dtype (bf16 unless
// communication_data_type says fp32) into a bf16 partition gradient, which the fp32 partition
// gradient copies; the optimizer steps on the fp32 masters; the updated masters are rounded to
// bf16 and gathered. No loss scaling (bf16 needs none).
// Checkpoints: SaveState / LoadState (DeepSpeed's layout, zero_checkpoint.h; bf16_ prefix).
// overlap_comm: the reduction runs bucket by bucket during backward (zero_overlap.h), each
// bucket's pieces reduced to their owners.
// Offload (options.offload.optimizer, DeepSpeed's offload_optimizer): the master
// partitions and their gradients are allocated in host memory (offload.h's HostOptions); the
// averaged gradient is reduced on the device and copied to the host; the optimizer steps
// there; the updated master is copied to the device as it is gathered. The Trainer gives such
// a run loom's fused CPU optimizer.
// Not yet: fp16 weights with DeepSpeed's loss scaler (CUDA only in loom).
//
// Example:
//   ASSIGN_OR_RETURN(auto zero, ZeroStrategy::Create(ZeroOptions().set_stage(2).set_model(m)
//       .set_optimizer(opt).set_precision(precision).set_process_group(&pg)));
//
// zero.cc stays one file (about 600 lines): ZeroStrategy's creation and step share the private
// group layout; the checkpoint files (zero_checkpoint.cc) and overlapped reduction
// (zero_overlap.cc) are already apart.
#ifndef LOOM_SHARDING_ZERO_ZERO_H_
#define LOOM_SHARDING_ZERO_ZERO_H_

#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "distributed/process_group.h"
#include "nlohmann/json.hpp"
#include "precision/training_precision.h"
#include "sharding/offload/offload.h"
#include "sharding/strategy.h"
#include "sharding/strategy_pieces.h"
#include "sharding/deepspeed_checkpoint/zero_checkpoint.h"
#include "sharding/zero/zero_overlap.h"

namespace loom::sharding {

// How the gradients and parameters travel (DeepSpeed 0.13.5's zero_optimization keys, and the
// top-level gradient_predivide_factor / prescale_gradients). Numerically only
// reduce_scatter, gradient_predivide_factor and prescale_gradients matter; the bucket sizes bound
// the extra buffer one collective needs.
struct ZeroCommOptions {
  // Elements reduced per collective: each rank's partition is reduced in chunks of
  // reduce_bucket_size / world elements (the whole partition at once when it is smaller).
  int64_t reduce_bucket_size = 500000000;
  // Elements gathered per collective, likewise.
  int64_t allgather_bucket_size = 500000000;
  // true: DeepSpeed's average_tensor — gradients divided by the world size, then each rank's
  // slice reduced to it (reduce-scatter). false: gradient_reduction_w_predivide — the whole
  // buffer all-reduced (with the predivide factor below), then each rank keeps its slice.
  bool reduce_scatter = true;
  // true: updated partitions shared by one all-gather; false: each rank broadcasts its own.
  bool allgather_partitions = true;
  // Used when reduce_scatter is false, as DeepSpeed: prescale_gradients false multiplies by
  // 1/f before the all-reduce and by f/world after; true divides by world before.
  double gradient_predivide_factor = 1.0;
  bool prescale_gradients = false;
  // The dtype gradients are reduced in (communication_data_type); unset: the training dtype
  // (bf16 gradients reduced in bf16, as DeepSpeed).
  std::optional<at::ScalarType> communication_dtype;
  // DeepSpeed's overlap_comm: buckets reduced while backward runs (zero_overlap.h). Needs
  // reduce_scatter and an fp32 communication dtype (Gloo cannot add bf16).
  bool overlap_comm = false;
};

struct ZeroOptions : StrategyPieces<ZeroOptions> {
  int stage = 2;  // 1 or 2
  ZeroCommOptions comm;
  // Recorded in the checkpoint files (DeepSpeed's ds_config and clip_grad).
  nlohmann::ordered_json ds_config = nlohmann::ordered_json::object();
  double gradient_clipping = 0;
  // offload_optimizer (offload.h): the masters and their gradients in host memory.
  OffloadOptions offload;
  // DeepSpeed's round_robin_gradients: each group's parameters laid out in the flat buffer in
  // round-robin order over the ranks (RoundRobinOrder), so that every rank's partition holds
  // a spread of parameters; the checkpoints' param_shapes follow that order, as DeepSpeed's.
  bool round_robin_gradients = false;

  ZeroOptions& set_round_robin_gradients(bool v) {
    round_robin_gradients = v;
    return *this;
  }

  ZeroOptions& set_offload(const OffloadOptions& v) {
    offload = v;
    return *this;
  }
  ZeroOptions& set_stage(int v) {
    stage = v;
    return *this;
  }
  ZeroOptions& set_comm(const ZeroCommOptions& v) {
    comm = v;
    return *this;
  }
  ZeroOptions& set_ds_config(const nlohmann::ordered_json& v, double clipping) {
    ds_config = v;
    gradient_clipping = clipping;
    return *this;
  }
};

// DeepSpeed's _round_robin_reorder of one group's parameters over `world` ranks: parameter i
// goes to bucket i % world, the buckets concatenated (e.g. 5 over 2: 0, 2, 4, 1, 3).
std::vector<at::Tensor> RoundRobinOrder(const std::vector<at::Tensor>& params, int world);

class ZeroStrategy : public ShardingStrategy {
 public:
  // InvalidArgument for a missing piece, a stage other than 1 or 2, or an optimizer group
  // holding a parameter of another dtype than fp32 or not in the model; Unimplemented for a
  // precision policy other than fp32 and DeepSpeed's bf16; FailedPrecondition when the optimizer
  // already has state. Nothing changes unless it succeeds (the checks come first). Parameters that
  // do not require grad are left out of the partitions and the optimizer (as DeepSpeed does); every
  // rank starts from rank 0's weights (broadcast, as DeepSpeed's engine does). Note that, as in
  // DeepSpeed, a trainable parameter that got no gradient in a window still takes the
  // optimizer step (with a zero gradient), unlike an unsharded optimizer that skips it.
  static absl::StatusOr<std::unique_ptr<ZeroStrategy>> Create(const ZeroOptions& o);

  std::string Name() const override;
  // Stage 1 partitions the optimizer state, stage 2 the gradients too; one replica per rank.
  StrategyCapabilities Capabilities() const override;
  DataParallelTopology Topology() const override {
    return DataParallelTopology::PerRank(world(), rank());
  }
  absl::Status BeforeForward(bool closes_window) override;
  absl::Status AfterBackward() override;
  absl::StatusOr<std::optional<double>> ClipGradients(double max_norm) override;
  absl::StatusOr<bool> OptimizerStep() override;
  void ZeroGrad() override;
  ModelStateBytes StateBytes() const override;
  // DeepSpeed's global_stepN/ layout (zero_checkpoint.h) inside the checkpoint folder;
  // LoadState repartitions a checkpoint of any world size for this one.
  bool OwnsOptimizerState() const override { return true; }
  absl::Status SaveState(const std::string& folder, const StrategySaveInfo& info) override;
  absl::Status LoadState(const std::string& folder) override;
  const std::vector<ZeroGroupLayout>& layout() const { return layout_; }

  // Group g's fp32 master partition on this rank (DeepSpeed's
  // single_partition_of_fp32_groups[g]) and its full padded numel.
  const at::Tensor& master_partition(size_t g) const { return groups_[g].partition; }
  int64_t padded_numel(size_t g) const { return groups_[g].padded_numel; }

 private:
  struct Group {
    std::vector<at::Tensor> params;  // the model's, in group order
    int64_t numel = 0;               // sum of the params' numel
    int64_t padded_numel = 0;        // ZeroAlignedNumel(numel)
    at::Tensor flat_params;          // padded; the params are views of it
    at::Tensor flat_grads;           // stage 1: padded; the params' grads are views of it
    at::Tensor partition;            // this rank's fp32 master slice (the optimizer's param);
                                     // its grad: the averaged gradient of the slice
    at::Tensor grad16;               // the slice's averaged gradient on the device when the
                                     // partition's cannot take it directly: 16-bit weights
                                     // (DeepSpeed's averaged_gradients), or an offloaded
                                     // partition on another device
  };

  explicit ZeroStrategy(const ZeroOptions& o) : options_(o) {
    if (o.process_group != nullptr) pg_ = *o.process_group;
  }
  int world() const;
  int rank() const;
  // Create's steps. Every optimizer group's trainable parameters, checked (in the model, fp32)
  // before anything changes, in round-robin order when asked.
  static absl::StatusOr<std::vector<Group>> CheckedGroups(const ZeroOptions& o, int world);
  // The model cast to bf16 when asked, then every non-empty group partitioned
  // (PartitionGroup).
  absl::Status PartitionGroups(std::vector<Group>& groups, bool bf16);
  // The group's flat buffer (rank 0's weights), its parameters (and at stage 1 their
  // gradients) as views of it, this rank's master partition and its gradient buffers.
  // Throws what torch throws.
  absl::Status PartitionGroup(Group& g, bool bf16);
  // The optimizer's groups become the partitions; layout_ and groups_ take the non-empty ones.
  void AdoptGroups(std::vector<Group> groups);
  // overlap_: the OverlappedReduction over groups_ (overlap_comm at more than one rank).
  absl::Status StartOverlap();
  // LoadState's own part: this rank's partitions and optimizer state from the files.
  absl::Status LoadOwnPartitions(const std::string& folder);
  // The group's full flat buffer of `what` (each param's tensor, zeros where undefined), padded.
  at::Tensor Flatten(const Group& g, bool grads) const;
  // Elements [begin, end) of the group's flat gradient (the parameters' gradients, zeros where
  // one has none, and the zero padding) into `dst`, cast to its dtype.
  void CopyFlatGrads(const Group& g, int64_t begin, int64_t end, at::Tensor dst) const;
  // The averaged gradient of this rank's slice of the group's flat gradient into `out`
  // (partition-sized, in the communication dtype), as options_.comm says. Stage 1's flat
  // gradient buffer is scratch afterwards.
  absl::Status ReduceGradients(Group& g, at::Tensor& out);
  // Every rank's updated partition into `flat_params`, as options_.comm says.
  absl::Status ShareParameters(const at::Tensor& partition, at::Tensor& flat_params);

  ZeroOptions options_;
  at::ScalarType dtype_ = at::kFloat;  // the model's weights: fp32, or bf16 (DeepSpeed's bf16)
  std::optional<distributed::ProcessGroup> pg_;  // a handle on the caller's group
  std::vector<Group> groups_;
  std::vector<ZeroGroupLayout> layout_;           // groups_'s parameter names and shapes
  std::unique_ptr<OverlappedReduction> overlap_;  // with overlap_comm at more than one rank
  bool closing_ = false;
};

}  // namespace loom::sharding

#endif  // LOOM_SHARDING_ZERO_ZERO_H_
