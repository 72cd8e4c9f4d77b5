#include "sharding/param_shard/full_shard_runner.h"

#include <algorithm>

#include "absl/memory/memory.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "base/torch_status.h"
#include "distributed/collectives.h"
#include "modeling/deferred_init.h"

namespace loom::sharding {

absl::StatusOr<std::unique_ptr<FullShardRunner>> FullShardRunner::Create(
    std::vector<ShardUnitSpec> specs, distributed::ProcessGroup* pg, FullShardRunnerOptions options,
    distributed::ProcessGroup* replicas) {
  auto runner = absl::WrapUnique(new FullShardRunner());
  runner->pg_ = pg;
  runner->replicas_ = replicas != nullptr && replicas->world_size() > 1 ? replicas : nullptr;
  runner->options_ = options;
  const int world = pg != nullptr ? pg->world_size() : 1;
  const int rank = pg != nullptr ? pg->rank() : 0;
  for (ShardUnitSpec& spec : specs) {
    bool built_deferred = false;  // its parameters had no bytes before
    Unit u;
    u.name = spec.name;
    u.module = spec.module;
    for (size_t g = 0; g < spec.params_by_group.size(); ++g) {
      if (spec.params_by_group[g].empty()) continue;
      Piece piece;
      piece.unit = runner->units_.size();
      piece.group = g;
      u.params += static_cast<int64_t>(spec.params_by_group[g].size());
      for (const at::Tensor& p : spec.params_by_group[g]) u.numel += p.numel();
      for (const at::Tensor& p : spec.params_by_group[g]) built_deferred |= modeling::IsDeferred(p);
      ASSIGN_OR_RETURN(piece.flat,
                       FlatParamUnit::Create(std::move(spec.params_by_group[g]), rank, world,
                                             options.shard_options, options.fill),
                       absl::StrCat("wrap unit ", spec.name));
      // Its gradient is made by the first reduction (none for evaluation, as ZeRO-3 inference).
      piece.flat->mutable_shard().set_requires_grad(true);
      u.pieces.push_back(runner->pieces_.size());
      runner->pieces_.push_back(std::move(piece));
    }
    if (u.pieces.empty()) continue;  // nothing trainable in it
    if (u.module != nullptr) runner->index_[u.module] = runner->units_.size();
    u.pending = u.params;
    runner->units_.push_back(std::move(u));
    // Nothing of it existed before: only its shards stay (the others are released below, once
    // nothing can fail any more, so that a failure leaves their parameters whole).
    if (built_deferred) runner->ReleaseUnit(runner->units_.size() - 1);
  }
  for (size_t i = 0; i < runner->units_.size(); ++i) {
    Unit& u = runner->units_[i];
    if (u.module == nullptr) continue;  // persistent: reduced by FinishBackward
    FullShardRunner* self = runner.get();
    for (size_t p : u.pieces) {
      for (const at::Tensor& param : runner->pieces_[p].flat->params()) {
        RETURN_IF_ERROR_CTX(runner->hooks_.Add(param, [self, i] { self->OnGradReady(i); }),
                            "FullShardRunner");
      }
    }
  }
  // Released only once nothing can fail any more.
  for (size_t i = 0; i < runner->units_.size(); ++i) runner->ReleaseUnit(i);
  runner->options_.fill = nullptr;  // what it holds (a checkpoint's tensors) is not needed now
  runner->ResetPeak();
  return runner;
}

FullShardRunner::~FullShardRunner() = default;

absl::Status FullShardRunner::GatherUnit(size_t u) {
  for (size_t p : units_[u].pieces) {
    FlatParamUnit& flat = *pieces_[p].flat;
    // Gather() also finishes a prefetch in flight.
    if (!flat.gathered() || flat.prefetching()) RETURN_IF_ERROR(flat.Gather(pg_));
  }
  NotePeak();
  return absl::OkStatus();
}

void FullShardRunner::Prefetch(int64_t u) {
  if (u < 0 || u >= static_cast<int64_t>(units_.size())) return;
  const Unit& unit = units_[u];
  if (unit.module == nullptr || unit.numel > options_.prefetch_limit) return;
  if (GatheredElements() + unit.numel > options_.max_live_elements) return;
  bool started = false;
  for (size_t p : unit.pieces) {
    FlatParamUnit& flat = *pieces_[p].flat;
    if (flat.gathered()) continue;
    if (absl::Status s = flat.StartGather(pg_); !s.ok()) Fail(s);
    started = true;
  }
  if (started) ++prefetches_;
  NotePeak();
}

int64_t FullShardRunner::GatheredBytes() const {
  int64_t bytes = 0;
  for (const Piece& piece : pieces_) {
    if (piece.flat->gathered()) bytes += piece.flat->full_bytes();
  }
  return bytes;
}

int64_t FullShardRunner::GatheredElements() const {
  int64_t elements = 0;
  for (const Piece& piece : pieces_) {
    if (piece.flat->gathered()) elements += piece.flat->numel();
  }
  return elements;
}

void FullShardRunner::NotePeak() {
  peak_gathered_bytes_ = std::max(peak_gathered_bytes_, GatheredBytes());
}

void FullShardRunner::ReleaseUnit(size_t u) {
  if (units_[u].module == nullptr) return;  // persistent
  for (size_t p : units_[u].pieces) pieces_[p].flat->Release();
}

at::Tensor FullShardRunner::Run(torch::nn::Module& module,
                                const std::function<at::Tensor()>& forward) {
  auto it = index_.find(&module);
  if (it == index_.end()) return forward();
  const size_t u = it->second;
  if (absl::Status s = GatherUnit(u); !s.ok()) {
    Fail(s);
    throw std::runtime_error(std::string(s.message()));
  }
  if (options_.forward_prefetch) Prefetch(static_cast<int64_t>(u) + 1);
  at::Tensor out = forward();
  if (options_.reshard_after_forward || !out.requires_grad()) ReleaseUnit(u);
  if (out.requires_grad()) {
    // Before the unit's backward: its parameters again (FSDP's pre-backward unshard).
    out.register_hook([this, u](const at::Tensor& grad) {
      if (absl::Status s = GatherUnit(u); !s.ok()) {
        Fail(s);
        throw std::runtime_error(std::string(s.message()));
      }
      if (options_.backward_prefetch == BackwardPrefetch::kPre) {
        Prefetch(static_cast<int64_t>(u) - 1);
      }
      return grad;
    });
  }
  return out;
}

absl::Status FullShardRunner::ReduceUnit(size_t i) {
  const int world = pg_ != nullptr ? pg_->world_size() : 1;
  try {
    at::NoGradGuard no_grad;
    for (size_t p : units_[i].pieces) {
      FlatParamUnit& flat = *pieces_[p].flat;
      at::Tensor& shard_grad = flat.mutable_shard().mutable_grad();
      // Reduced on the parameters' device; the shard's gradient may live elsewhere (offload).
      at::Tensor full = at::empty({flat.padded_numel()},
                                 flat.params().front().options().requires_grad(false));
      int64_t offset = 0;
      for (const at::Tensor& param : flat.params()) {
        at::Tensor dst = full.slice(0, offset, offset + param.numel());
        if (param.grad().defined()) {
          dst.copy_(param.grad().reshape({-1}));
        } else {
          dst.zero_();
        }
        offset += param.numel();
      }
      if (offset < flat.padded_numel()) full.slice(0, offset).zero_();
      at::Tensor reduced = full;
      if (world > 1) {
        reduced = at::empty({flat.padded_numel() / world}, full.options());
        RETURN_IF_ERROR(distributed::ReduceScatterSum(*pg_, full, reduced));
      }
      if (replicas_ != nullptr) RETURN_IF_ERROR(distributed::AllReduce(*replicas_, reduced));
      const int total = world * (replicas_ != nullptr ? replicas_->world_size() : 1);
      if (total > 1) reduced.div_(static_cast<double>(total));
      if (!shard_grad.defined()) shard_grad = at::zeros_like(flat.shard());
      shard_grad.add_(reduced.to(shard_grad.device()));  // no copy on the same device
      for (at::Tensor param : flat.params()) param.mutable_grad().reset();  // a handle
    }
  } catch (const std::exception& e) {
    return base::TorchErrorToStatus(e, absl::StatusCode::kInternal,
                                    absl::StrCat("reducing the gradients of ", units_[i].name));
  }
  return absl::OkStatus();
}

void FullShardRunner::OnGradReady(size_t i) {
  Unit& u = units_[i];
  if (--u.pending > 0) return;
  u.pending = u.params;
  // FSDP's post-backward: the unit's gradients reduced into the shards, the unit released.
  // As FSDP's post-backward hook: reshard, prefetch (BACKWARD_POST), then reduce — the next
  // unit's all-gather runs during this unit's reduce-scatter.
  ReleaseUnit(i);
  if (options_.backward_prefetch == BackwardPrefetch::kPost) {
    Prefetch(static_cast<int64_t>(i) - 1);
  }
  if (absl::Status s = ReduceUnit(i); !s.ok()) Fail(s);
}

absl::Status FullShardRunner::FinishBackward() {
  // Which units got only some of their gradients: every rank must reduce the same ones, and a
  // data-dependent graph could differ between ranks, so they agree first (one small sum).
  at::Tensor partial = at::zeros({static_cast<int64_t>(units_.size())}, at::kInt);
  for (size_t i = 0; i < units_.size(); ++i) {
    if (units_[i].module != nullptr && units_[i].pending != units_[i].params) {
      partial[static_cast<int64_t>(i)] = 1;
    }
  }
  if (pg_ != nullptr && pg_->world_size() > 1) {
    if (absl::Status s = distributed::AllReduce(*pg_, partial); !s.ok()) Fail(s);
  }
  if (replicas_ != nullptr) {
    if (absl::Status s = distributed::AllReduce(*replicas_, partial); !s.ok()) Fail(s);
  }
  for (size_t i = 0; i < units_.size(); ++i) {
    Unit& u = units_[i];
    // The persistent units are reduced after every backward (missing gradients count as zero).
    if (u.module == nullptr || partial[static_cast<int64_t>(i)].item<int>() > 0) {
      u.pending = u.params;
      if (absl::Status s = ReduceUnit(i); !s.ok()) Fail(s);
    }
    ReleaseUnit(i);
  }
  return status_;
}

absl::Status FullShardRunner::GatherAll() {
  for (size_t u = 0; u < units_.size(); ++u) RETURN_IF_ERROR(GatherUnit(u));
  return absl::OkStatus();
}

absl::Status FullShardRunner::ReleaseAll(bool write_back) {
  if (write_back) {
    for (Piece& piece : pieces_) RETURN_IF_ERROR(piece.flat->WriteBack());
  }
  for (size_t u = 0; u < units_.size(); ++u) ReleaseUnit(u);
  return absl::OkStatus();
}

}  // namespace loom::sharding
