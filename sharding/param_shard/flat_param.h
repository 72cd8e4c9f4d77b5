// FlatParamUnit: one wrap unit's parameters as FSDP / ZeRO-3 hold them (parameter sharding's
// groundwork) — flattened into one buffer padded to a multiple of the world size, each rank keeping
// only its shard; the full buffer exists only between Gather() and Release().
//
// Contract:
//   - Create(params, rank, world): the unit's parameters (one dtype and device, in unit order)
//     become views of one flat buffer of padded_numel() = numel rounded up to a multiple of
//     `world`; shard() is a separate copy of elements [rank * part, (rank + 1) * part).
//     Parameters keep their values and identities (set_data), so optimizers, autograd and
//     module code see the same tensors. A deferred parameter (modeling/deferred_init.h: shape
//     without bytes) gets its values from `fill` (its view in the full buffer to write), so a
//     unit built deferred never exists twice (FailedPrecondition without a fill).
//   - Release(): the full buffer's storage is freed (FSDP's _free_storage): the parameters stay
//     views of a storage of zero bytes — reading them is an error until the next Gather().
//     Autograd's saved references to them survive and see the gathered data again after
//     Gather(), which is how a unit's backward finds its parameters (FSDP's pre-backward
//     re-gather).
//   - Gather(pg): the storage is allocated again and every rank's shard all-gathered into it
//     (one process: the own shard copied); `gathered()` says which state the unit is in.
//   - StartGather(pg): Gather without waiting (the storage allocated, the all-gather in flight:
//     FSDP's prefetch); gathered() is true from then on, and the next Gather() (or Release())
//     waits for it instead of gathering again. With one process, or tensors off the backend's
//     device, it gathers at once. When it cannot start, the unit stays released (a later
//     Gather() gathers it) and the error is returned; a prefetch that fails in flight is
//     reported by the next Gather().
//   - WriteBack(): while gathered, this rank's slice of the full buffer copied into the shard
//     (e.g. after weights were loaded into the full parameters); FailedPrecondition when
//     released.
//   - full_bytes() / shard_bytes(): what the full buffer and the shard take (the shard: its
//     resident bytes, 0 while a store holds it evicted).
//   - set_store(store): the shard lives in a ShardStore between uses (NVMe offload).
//
// Example:
//   ASSIGN_OR_RETURN(auto unit, FlatParamUnit::Create(layer->parameters(), rank, world));
//   unit->Release();                 // between uses only the shard stays
//   RETURN_IF_ERROR(unit->Gather(&pg));  // before the unit's forward and its backward
#ifndef LOOM_SHARDING_PARAM_SHARD_FLAT_PARAM_H_
#define LOOM_SHARDING_PARAM_SHARD_FLAT_PARAM_H_

#include <ATen/ATen.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "distributed/collectives.h"
#include "distributed/process_group.h"
#include "sharding/offload/shard_store.h"

namespace loom::sharding {

// Writes a deferred parameter's values into `dest` (its view in the unit's full buffer).
using DeferredFill = std::function<absl::Status(const at::Tensor& param, at::Tensor& dest)>;

class FlatParamUnit {
 public:
  // `shard_options` (e.g. offload.h's HostOptions): where and in which dtype the shard lives;
  // unset: as the parameters. A shard on another device than the parameters is staged on
  // their device for each gather.
  static absl::StatusOr<std::unique_ptr<FlatParamUnit>> Create(
      std::vector<at::Tensor> params, int rank, int world,
      std::optional<at::TensorOptions> shard_options = std::nullopt,
      const DeferredFill& fill = nullptr);

  void Release();
  // `pg` may be null for one process.
  absl::Status Gather(distributed::ProcessGroup* pg);
  absl::Status StartGather(distributed::ProcessGroup* pg);
  bool gathered() const { return gathered_; }
  bool prefetching() const { return pending_.pending(); }
  absl::Status WriteBack();

  // `store` (may be null; must outlive the unit): the shard's data is fetched from it for each
  // gather and write-back and evicted after (shard_store.h).
  void set_store(ShardStore* store) { store_ = store; }
  ShardStore* store() const { return store_; }

  const at::Tensor& shard() const { return shard_; }
  at::Tensor& mutable_shard() { return shard_; }
  int64_t numel() const { return numel_; }
  int64_t padded_numel() const { return padded_numel_; }
  int64_t full_bytes() const;
  int64_t shard_bytes() const;
  const std::vector<at::Tensor>& params() const { return params_; }

 private:
  FlatParamUnit() = default;
  void AllocateStorage();
  // The shard on the full buffer's device (itself when it is there).
  at::Tensor ShardOnDevice() const;
  // Waits for the collective in flight; the shard fetched for it is evicted after.
  absl::Status WaitPending();

  std::vector<at::Tensor> params_;
  at::Tensor flat_;   // the full buffer; its storage is freed while released
  at::Tensor shard_;  // this rank's part (kept)
  int64_t numel_ = 0;
  int64_t padded_numel_ = 0;
  int rank_ = 0;
  int world_ = 1;
  bool gathered_ = true;
  distributed::PendingCollective pending_;  // a StartGather not yet waited for
  absl::Status prefetch_error_;             // a prefetch's failure seen by Release()
  ShardStore* store_ = nullptr;
  bool evict_after_pending_ = false;  // the shard was fetched for the collective in flight
};

}  // namespace loom::sharding

#endif  // LOOM_SHARDING_PARAM_SHARD_FLAT_PARAM_H_
