#include "sharding/offload/param_swapper.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/memory/memory.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "sharding/offload/swap_space.h"

namespace loom::sharding {
namespace {

void DeleteBuffer(void* ctx) { delete static_cast<aio::AlignedBuffer*>(ctx); }

// The shard's storage becomes `buffer` (page-aligned, owned by the storage from now on).
void Install(const at::Tensor& shard, std::unique_ptr<aio::AlignedBuffer> buffer) {
  c10::StorageImpl* storage = shard.storage().unsafeGetStorageImpl();
  void* data = buffer->data();
  storage->set_data_ptr_noswap(
      c10::DataPtr(data, buffer.release(), &DeleteBuffer, c10::Device(c10::kCPU)));
  storage->set_nbytes(static_cast<size_t>(shard.numel()) * sizeof(float));
}

void Free(const at::Tensor& shard) {
  c10::StorageImpl* storage = shard.storage().unsafeGetStorageImpl();
  storage->set_data_ptr_noswap(c10::DataPtr(nullptr, c10::Device(c10::kCPU)));
  storage->set_nbytes(0);
}

}  // namespace

absl::StatusOr<std::unique_ptr<ParamSwapper>> ParamSwapper::Create(const ParamSwapperOptions& o,
                                                                    std::vector<at::Tensor> shards) {
  auto swapper = absl::WrapUnique(new ParamSwapper());
  swapper->options_ = o;
  if (o.buffer_count < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "zero_optimization.offload_param.buffer_count: ", o.buffer_count, " must be >= 1"));
  }
  int64_t total = 0, largest = 0;
  for (const at::Tensor& s : shards) {
    if (!s.device().is_cpu() || s.scalar_type() != at::kFloat || !s.is_contiguous() ||
        s.storage_offset() != 0) {
      return absl::InvalidArgumentError(
          "ParamSwapper: the shards must be contiguous CPU float32 tensors with their own storage");
    }
    if (s.numel() > o.buffer_size) {
      return absl::InvalidArgumentError(absl::StrCat(
          "zero_optimization.offload_param.buffer_size: a parameter shard of ", s.numel(),
          " elements does not fit a buffer of ", o.buffer_size,
          "; raise buffer_size to at least the largest layer's elements / world size"));
    }
    const int64_t bytes = aio::AlignUp(s.numel() * static_cast<int64_t>(sizeof(float)));
    total += bytes;
    largest = std::max(largest, bytes);
  }
  ASSIGN_OR_RETURN(swapper->space_,
                   OpenSwapSpace("zero_optimization.offload_param.nvme_path", o.nvme_path, o.aio,
                                 total + largest, absl::StrCat("loom-swap-rank", o.rank, "-params")));
  for (size_t k = 0; k < shards.size(); ++k) {
    Entry e;
    e.shard = shards[k];
    e.file = absl::StrCat(swapper->space_.folder->path(), "/param", k, ".swp");
    e.bytes = aio::AlignUp(e.shard.numel() * static_cast<int64_t>(sizeof(float)));
    swapper->index_[e.shard.unsafeGetTensorImpl()] = k;
    swapper->resident_elements_ += e.shard.numel();
    swapper->entries_.push_back(std::move(e));
  }
  for (Entry& e : swapper->entries_) RETURN_IF_ERROR(swapper->Evict(e.shard, /*dirty=*/true));
  return swapper;
}

ParamSwapper::~ParamSwapper() {
  for (Entry& e : entries_) {
    if (e.reading.valid()) e.reading.wait();
  }
}

std::string ParamSwapper::Describe() const {
  int64_t bytes = 0;
  for (const Entry& e : entries_) bytes += e.bytes;
  return absl::StrCat("NVMe swap: ", entries_.size(), " parameter shard(s) (", bytes,
                      " bytes) under ", space_.folder->path(),
                      space_.direct ? " with O_DIRECT" : " with buffered I/O", "; max_in_cpu ",
                      options_.max_in_cpu, ", buffer_count ", options_.buffer_count);
}

ParamSwapper::Entry* ParamSwapper::Find(const at::Tensor& shard) {
  auto it = index_.find(shard.unsafeGetTensorImpl());
  return it == index_.end() ? nullptr : &entries_[it->second];
}

void ParamSwapper::StartReadAhead(size_t k) {
  Entry& e = entries_[k];
  if (e.resident || e.reading.valid()) return;
  absl::StatusOr<std::unique_ptr<aio::AlignedBuffer>> ahead = aio::NewAlignedBuffer(e.bytes);
  if (!ahead.ok()) return;  // no memory to read ahead: the fetch reads it then
  e.ahead = std::move(*ahead);
  e.reading = space_.engine->ReadAsync(e.file, e.ahead->data(), e.bytes);
}

absl::Status ParamSwapper::Fetch(const at::Tensor& shard) {
  Entry* e = Find(shard);
  if (e == nullptr || e->resident) return absl::OkStatus();
  const size_t k = static_cast<size_t>(e - entries_.data());
  std::unique_ptr<aio::AlignedBuffer> buffer;
  if (e->reading.valid()) {
    RETURN_IF_ERROR(e->reading.get());
    buffer = std::make_unique<aio::AlignedBuffer>(std::move(*e->ahead));
    e->ahead.reset();
  } else {
    ASSIGN_OR_RETURN(buffer, aio::NewAlignedBuffer(e->bytes), "swapping parameters in");
    RETURN_IF_ERROR(space_.engine->Read(e->file, buffer->data(), e->bytes));
  }
  Install(e->shard, std::move(buffer));
  e->resident = true;
  resident_elements_ += e->shard.numel();
  // Read-ahead in the direction of travel (forward: increasing units, backward: decreasing).
  if (last_fetched_ >= 0 && static_cast<int64_t>(k) != last_fetched_) {
    direction_ = static_cast<int64_t>(k) > last_fetched_ ? 1 : -1;
  }
  last_fetched_ = static_cast<int64_t>(k);
  for (int64_t d = 1; d < options_.buffer_count; ++d) {
    const int64_t next = static_cast<int64_t>(k) + direction_ * d;
    if (next < 0 || next >= static_cast<int64_t>(entries_.size())) break;
    StartReadAhead(static_cast<size_t>(next));
  }
  return absl::OkStatus();
}

absl::Status ParamSwapper::Write(Entry& e) {
  const void* data = e.shard.storage().data();
  if (reinterpret_cast<uintptr_t>(data) % aio::kAlignment == 0 &&
      static_cast<int64_t>(e.shard.storage().nbytes()) == e.shard.numel() * 4 &&
      e.shard.storage().data_ptr().get_deleter() == &DeleteBuffer) {
    return space_.engine->Write(e.file, data, e.bytes);  // our own page-aligned buffer
  }
  ASSIGN_OR_RETURN(std::unique_ptr<aio::AlignedBuffer> staging, aio::NewAlignedBuffer(e.bytes),
                   "swapping parameters out");
  std::memcpy(staging->data(), data, static_cast<size_t>(e.shard.numel()) * sizeof(float));
  return space_.engine->Write(e.file, staging->data(), e.bytes);
}

absl::Status ParamSwapper::Evict(const at::Tensor& shard, bool dirty) {
  Entry* e = Find(shard);
  if (e == nullptr || !e->resident) return absl::OkStatus();
  if (dirty) {
    if (e->reading.valid()) e->reading.wait();  // a stale read-ahead of the old contents
    e->reading = {};
    e->ahead.reset();
    RETURN_IF_ERROR(Write(*e));
  }
  // Within the budget of max_in_cpu elements the data stays (the file is current).
  if (resident_elements_ <= options_.max_in_cpu) return absl::OkStatus();
  Free(e->shard);
  e->resident = false;
  resident_elements_ -= e->shard.numel();
  return absl::OkStatus();
}

}  // namespace loom::sharding
