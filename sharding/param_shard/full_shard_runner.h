// FullShardRunner: the life cycle of a model's wrap units under parameter sharding (FSDP's
// full_shard / shard_grad_op, DeepSpeed's ZeRO-3), as a modeling::UnitRunner the model
// runs each repeating layer through.
//
// Contract:
//   - Create(units, pg, options): each unit's parameters, per optimizer group, become one
//     FlatParamUnit (flat_param.h) — a "piece" — sharded over the group (null: one process).
//     A unit with `module` null is persistent (FSDP's root unit, DeepSpeed's persistent
//     parameters): its pieces stay gathered, their gradients are reduced by FinishBackward.
//     The others are released: between uses each rank holds only their shards. Deferred
//     parameters (modeling/deferred_init.h) get their values from options.fill as their unit
//     is flattened, and such a unit is released at once: construction holds one unit's full
//     parameters at a time (DeepSpeed's zero.Init). Each piece's shard is a leaf whose .grad()
//     is the shard's gradient, undefined until the first reduction makes it (so evaluation
//     holds no gradients, as ZeRO-3 inference; ParamShardStrategy gives a shard still without
//     one zeros before the optimizer steps): the optimizer steps on the shards.
//   - Run(unit, forward) (the model calls it per unit): the unit's pieces are gathered, forward()
//     runs, and the unit is released again when options.reshard_after_forward (full_shard) or
//     when the result needs no gradient (evaluation); otherwise it stays gathered until its
//     backward is done (shard_grad_op). When the result requires grad, a hook on it gathers the
//     unit again before the unit's backward (FSDP's pre-backward), and once every parameter of
//     the unit has its gradient (hooks after gradient accumulation), each piece's flat gradient
//     is averaged over the ranks and reduce-scattered into its shard's gradient (accumulated
//     across backward passes), the full gradients dropped and the unit released (FSDP's
//     post-backward). A module that is not a unit runs as it is.
//   - Prefetch (options): the next unit's all-gather runs while this unit computes (forward:
//     units in model order; backward: in reverse), into the next unit's storage; the unit waits
//     for it when its turn comes. The results are the same as without prefetch.
//   - peak_gathered_bytes(): the most bytes of full parameters held at once since the last
//     ResetPeak() (the root and the units gathered or being prefetched).
//   - FinishBackward() after each backward: units whose parameters got only some gradients on
//     any rank (the ranks agree with one small all-reduce, so a data-dependent graph cannot
//     make them issue different collectives) are reduced now, the missing gradients counting as
//     zero; the persistent units' gradients are reduced every time; every unit is released.
//     Returns the first error any hook met.
//   - GatherAll() / ReleaseAll(write_back): every parameter full (a collective: every rank
//     calls it), e.g. to save or load the model; ReleaseAll first copies each rank's slice of the
//     full parameters into its shards when write_back (so weights loaded into the full
//     parameters reach the shards), then releases the non-persistent units.
//   - Every collective is issued in the same order on every rank (the same graph runs
//     everywhere). The caller owns the modules; the runner must outlive every forward and
//     backward run through it.
//
// Example:
//   ASSIGN_OR_RETURN(auto runner, FullShardRunner::Create(units, &pg, {}));
//   RETURN_IF_ERROR(model.SetUnitRunner(runner.get()));
//   loss.backward();
//   RETURN_IF_ERROR(runner->FinishBackward());
#ifndef LOOM_SHARDING_PARAM_SHARD_FULL_SHARD_RUNNER_H_
#define LOOM_SHARDING_PARAM_SHARD_FULL_SHARD_RUNNER_H_

#include <ATen/ATen.h>

#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "distributed/grad_ready_hooks.h"
#include "distributed/process_group.h"
#include "modeling/unit_runner.h"
#include "sharding/param_shard/flat_param.h"

namespace loom::sharding {

// One wrap unit: its module (null: persistent) and its trainable parameters per optimizer
// group (a group may be empty).
struct ShardUnitSpec {
  std::string name;
  torch::nn::Module* module = nullptr;
  std::vector<std::vector<at::Tensor>> params_by_group;
};

enum class BackwardPrefetch { kNone, kPre, kPost };

struct FullShardRunnerOptions {
  bool reshard_after_forward = true;  // false: FSDP's SHARD_GRAD_OP
  // FSDP's forward_prefetch: when a unit's forward starts, the next unit's all-gather starts.
  bool forward_prefetch = false;
  // FSDP's backward_prefetch: the all-gather of the unit whose backward comes next starts when
  // this unit's backward starts (kPre) or once its gradients are reduced (kPost).
  BackwardPrefetch backward_prefetch = BackwardPrefetch::kNone;
  // Only units of at most this many elements are prefetched (DeepSpeed's
  // stage3_prefetch_bucket_size); at most one prefetch is in flight (FSDP's limit_all_gathers).
  int64_t prefetch_limit = std::numeric_limits<int64_t>::max();
  // A prefetch that would take the full parameter elements held past this is skipped
  // (DeepSpeed's stage3_max_live_parameters; the unit about to run is always gathered).
  int64_t max_live_elements = std::numeric_limits<int64_t>::max();
  // Where the shards (the optimizer's parameters) and their gradients live; unset: with the
  // parameters. Offload (offload.h) puts them in host memory.
  std::optional<at::TensorOptions> shard_options;
  // Makes the values of deferred parameters (required when there are some).
  DeferredFill fill;
};

class FullShardRunner : public modeling::UnitRunner {
 public:
  // One piece: a unit's parameters of one optimizer group.
  struct Piece {
    size_t unit = 0;
    size_t group = 0;
    std::unique_ptr<FlatParamUnit> flat;
  };

  // `replicas` (may be null): FSDP's hybrid sharding — the group of ranks holding the same
  // shards (one per node); each shard's gradient is also summed over it, and averaged over
  // every rank of both groups.
  static absl::StatusOr<std::unique_ptr<FullShardRunner>> Create(
      std::vector<ShardUnitSpec> units, distributed::ProcessGroup* pg,
      FullShardRunnerOptions options, distributed::ProcessGroup* replicas = nullptr);
  ~FullShardRunner() override;

  at::Tensor Run(torch::nn::Module& unit, const std::function<at::Tensor()>& forward) override;
  absl::Status FinishBackward();
  absl::Status GatherAll();
  absl::Status ReleaseAll(bool write_back);

  size_t unit_count() const { return units_.size(); }
  const std::string& unit_name(size_t u) const { return units_[u].name; }
  bool persistent(size_t u) const { return units_[u].module == nullptr; }
  std::vector<Piece>& pieces() { return pieces_; }
  const std::vector<Piece>& pieces() const { return pieces_; }
  // The pieces of unit u, in group order.
  const std::vector<size_t>& unit_pieces(size_t u) const { return units_[u].pieces; }
  // The first error a hook met (hooks cannot return one); OK otherwise.
  const absl::Status& status() const { return status_; }
  int64_t peak_gathered_bytes() const { return peak_gathered_bytes_; }
  // Units whose all-gather a prefetch started, since Create.
  int64_t prefetches() const { return prefetches_; }
  void ResetPeak() { peak_gathered_bytes_ = GatheredBytes(); }

 private:
  struct Unit {
    std::string name;
    torch::nn::Module* module = nullptr;  // null: persistent
    std::vector<size_t> pieces;
    int64_t params = 0;   // trainable parameters in the unit
    int64_t numel = 0;    // their elements
    int64_t pending = 0;  // of them, those whose gradient has not arrived in this backward
  };

  FullShardRunner() = default;
  void OnGradReady(size_t u);
  absl::Status GatherUnit(size_t u);
  // Starts unit u's all-gather without waiting (no-op for a gathered or persistent unit, one
  // over the prefetch limit, or u out of range).
  void Prefetch(int64_t u);
  int64_t GatheredBytes() const;
  int64_t GatheredElements() const;
  void NotePeak();
  void ReleaseUnit(size_t u);
  // Each piece's flat gradient averaged and reduce-scattered into its shard's gradient; the
  // parameters' gradients dropped.
  absl::Status ReduceUnit(size_t u);
  void Fail(const absl::Status& s) {
    if (status_.ok()) status_ = s;
  }

  distributed::ProcessGroup* pg_ = nullptr;
  distributed::ProcessGroup* replicas_ = nullptr;
  FullShardRunnerOptions options_;
  std::vector<Unit> units_;
  std::vector<Piece> pieces_;
  std::map<const torch::nn::Module*, size_t> index_;
  absl::Status status_;
  int64_t peak_gathered_bytes_ = 0;
  int64_t prefetches_ = 0;
  distributed::GradReadyHooks hooks_;  // declared last: its hooks go first
};

}  // namespace loom::sharding

#endif  // LOOM_SHARDING_PARAM_SHARD_FULL_SHARD_RUNNER_H_
