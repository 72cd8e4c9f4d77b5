#include "sharding/param_shard/flat_param.h"

#include <c10/core/StorageImpl.h>

#include <utility>

#include "absl/memory/memory.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "base/torch_status.h"
#include "distributed/collectives.h"
#include "modeling/deferred_init.h"

namespace loom::sharding {

absl::StatusOr<std::unique_ptr<FlatParamUnit>> FlatParamUnit::Create(
    std::vector<at::Tensor> params, int rank, int world,
    std::optional<at::TensorOptions> shard_options, const DeferredFill& fill) {
  if (params.empty()) return absl::InvalidArgumentError("FlatParamUnit: a unit without parameters");
  if (world < 1 || rank < 0 || rank >= world) {
    return absl::InvalidArgumentError(
        absl::StrCat("FlatParamUnit: rank ", rank, " of world size ", world));
  }
  for (const at::Tensor& p : params) {
    if (p.scalar_type() != params.front().scalar_type() || p.device() != params.front().device()) {
      return absl::InvalidArgumentError(
          "FlatParamUnit: a unit's parameters must share one dtype and device");
    }
  }
  for (const at::Tensor& p : params) {
    if (modeling::IsDeferred(p) && !fill) {
      return absl::FailedPreconditionError(
          "FlatParamUnit: a deferred parameter (no bytes yet) and no fill to make its values");
    }
  }
  auto unit = absl::WrapUnique(new FlatParamUnit());
  unit->rank_ = rank;
  unit->world_ = world;
  for (const at::Tensor& p : params) unit->numel_ += p.numel();
  unit->padded_numel_ = (unit->numel_ + world - 1) / world * world;
  try {
    at::NoGradGuard no_grad;
    unit->flat_ = at::zeros({unit->padded_numel_}, params.front().options().requires_grad(false));
    int64_t offset = 0;
    for (at::Tensor& p : params) {
      at::Tensor view = unit->flat_.slice(0, offset, offset + p.numel()).view(p.sizes());
      if (modeling::IsDeferred(p)) {
        RETURN_IF_ERROR(fill(p, view));
      } else {
        view.copy_(p.detach());
      }
      p.set_data(view);
      offset += p.numel();
    }
    const int64_t part = unit->padded_numel_ / world;
    at::Tensor own = unit->flat_.slice(0, rank * part, (rank + 1) * part);
    unit->shard_ = shard_options ? own.to(*shard_options, /*non_blocking=*/false, /*copy=*/true)
                                 : own.clone();
  } catch (const std::exception& e) {
    return base::TorchErrorToStatus(e, absl::StatusCode::kInternal, "flattening a unit");
  }
  unit->params_ = std::move(params);
  return unit;
}

void FlatParamUnit::Release() {
  if (!gathered_) return;
  // A prefetch still writing into the storage finishes first; its error is reported by the
  // next Gather().
  if (absl::Status s = WaitPending(); !s.ok() && prefetch_error_.ok()) prefetch_error_ = s;
  // FSDP's _free_storage: the views stay, their storage holds no bytes.
  c10::StorageImpl* storage = flat_.storage().unsafeGetStorageImpl();
  storage->set_data_ptr_noswap(at::DataPtr(nullptr, flat_.device()));
  storage->set_nbytes(0);
  gathered_ = false;
}

absl::Status FlatParamUnit::StartGather(distributed::ProcessGroup* pg) {
  if (gathered_) return absl::OkStatus();
  // Tensors the backend cannot take as they are (off its device) gather synchronously.
  if (pg == nullptr || world_ == 1 || flat_.device() != pg->comm_device()) return Gather(pg);
  absl::Status started = absl::OkStatus();
  try {
    at::NoGradGuard no_grad;
    if (store_ != nullptr) {
      if (absl::Status fetched = store_->Fetch(shard_); !fetched.ok()) return fetched;
      evict_after_pending_ = true;
    }
    AllocateStorage();
    absl::StatusOr<distributed::PendingCollective> pending =
        distributed::StartAllGatherInto(*pg, ShardOnDevice(), flat_);
    if (pending.ok()) {
      pending_ = std::move(*pending);
    } else {
      started = pending.status();
    }
  } catch (const std::exception& e) {
    started = base::TorchErrorToStatus(e, absl::StatusCode::kInternal, "prefetching a unit");
  }
  if (!started.ok()) {
    if (evict_after_pending_) started.Update(store_->Evict(shard_, /*dirty=*/false));
    evict_after_pending_ = false;
    Release();  // nothing in flight: a later Gather() gathers normally
  }
  return started;
}

absl::Status FlatParamUnit::WaitPending() {
  absl::Status s = pending_.Wait();
  if (evict_after_pending_) {
    evict_after_pending_ = false;
    s.Update(store_->Evict(shard_, /*dirty=*/false));
  }
  return s;
}

at::Tensor FlatParamUnit::ShardOnDevice() const {
  return shard_.detach().to(flat_.options());  // the shard's own storage when they agree
}

void FlatParamUnit::AllocateStorage() {
  // FSDP's _alloc_storage: the same storage object gets its bytes back, so every view of it
  // (the parameters, autograd's saved references) sees them.
  c10::StorageImpl* storage = flat_.storage().unsafeGetStorageImpl();
  const size_t nbytes = static_cast<size_t>(padded_numel_) * flat_.element_size();
  storage->set_data_ptr_noswap(storage->allocator()->allocate(nbytes));
  storage->set_nbytes(nbytes);
  gathered_ = true;
}

absl::Status FlatParamUnit::Gather(distributed::ProcessGroup* pg) {
  if (!prefetch_error_.ok()) return std::exchange(prefetch_error_, absl::OkStatus());
  if (pending_.pending()) return WaitPending();  // a prefetch: the same gather
  if (store_ != nullptr) RETURN_IF_ERROR(store_->Fetch(shard_));
  absl::Status status = absl::OkStatus();
  try {
    at::NoGradGuard no_grad;
    if (!gathered_) AllocateStorage();
    if (pg != nullptr && world_ > 1) {
      status = distributed::AllGatherInto(*pg, ShardOnDevice(), flat_);
    } else {
      flat_.copy_(shard_);
    }
  } catch (const std::exception& e) {
    status = base::TorchErrorToStatus(e, absl::StatusCode::kInternal, "gathering a unit");
  }
  if (store_ != nullptr) status.Update(store_->Evict(shard_, /*dirty=*/false));
  return status;
}

absl::Status FlatParamUnit::WriteBack() {
  RETURN_IF_ERROR(WaitPending());
  if (!gathered_) {
    return absl::FailedPreconditionError("FlatParamUnit::WriteBack: the unit is released");
  }
  if (store_ != nullptr) RETURN_IF_ERROR(store_->Fetch(shard_));
  absl::Status status = absl::OkStatus();
  try {
    at::NoGradGuard no_grad;
    const int64_t part = padded_numel_ / world_;
    shard_.copy_(flat_.slice(0, rank_ * part, (rank_ + 1) * part));
  } catch (const std::exception& e) {
    status = base::TorchErrorToStatus(e, absl::StatusCode::kInternal, "writing a unit back");
  }
  if (store_ != nullptr) status.Update(store_->Evict(shard_, /*dirty=*/status.ok()));
  return status;
}

int64_t FlatParamUnit::full_bytes() const { return padded_numel_ * flat_.element_size(); }

int64_t FlatParamUnit::shard_bytes() const {
  return static_cast<int64_t>(shard_.storage().nbytes());  // 0 while evicted to a store
}

}  // namespace loom::sharding
