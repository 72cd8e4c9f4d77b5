#include "sharding/full_shard_runner.h"

#include "absl/memory/memory.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "base/torch_status.h"
#include "distributed/collectives.h"

namespace loom::sharding {

absl::StatusOr<std::unique_ptr<FullShardRunner>> FullShardRunner::Create(
    const std::vector<modeling::FoundUnit>& units, distributed::ProcessGroup* pg) {
  auto runner = absl::WrapUnique(new FullShardRunner());
  runner->pg_ = pg;
  const int world = pg != nullptr ? pg->world_size() : 1;
  const int rank = pg != nullptr ? pg->rank() : 0;
  for (const modeling::FoundUnit& found : units) {
    Unit u;
    u.module = found.module.get();
    ASSIGN_OR_RETURN(u.flat, FlatParamUnit::Create(found.module->parameters(), rank, world),
                     absl::StrCat("wrap unit ", found.name));
    u.shard_grad = at::zeros_like(u.flat->shard());
    runner->index_[u.module] = runner->units_.size();
    runner->units_.push_back(std::move(u));
  }
  for (size_t i = 0; i < runner->units_.size(); ++i) {
    Unit& u = runner->units_[i];
    FullShardRunner* self = runner.get();
    for (const at::Tensor& p : u.flat->params()) {
      RETURN_IF_ERROR_CTX(runner->hooks_.Add(p, [self, i] { self->OnGradReady(i); }),
                          "FullShardRunner");
    }
    u.pending = static_cast<int64_t>(u.flat->params().size());
    u.flat->Release();
  }
  return runner;
}

FullShardRunner::~FullShardRunner() = default;

at::Tensor FullShardRunner::Run(torch::nn::Module& module,
                                const std::function<at::Tensor()>& forward) {
  auto it = index_.find(&module);
  if (it == index_.end()) return forward();
  const size_t u = it->second;
  FlatParamUnit& flat = *units_[u].flat;
  if (absl::Status s = flat.Gather(pg_); !s.ok()) {
    Fail(s);
    throw std::runtime_error(std::string(s.message()));
  }
  at::Tensor out = forward();
  flat.Release();
  if (out.requires_grad()) {
    // Before the unit's backward: its parameters again (FSDP's pre-backward unshard).
    out.register_hook([this, u](const at::Tensor& grad) {
      if (absl::Status s = units_[u].flat->Gather(pg_); !s.ok()) {
        Fail(s);
        throw std::runtime_error(std::string(s.message()));
      }
      return grad;
    });
  }
  return out;
}

void FullShardRunner::OnGradReady(size_t i) {
  Unit& u = units_[i];
  if (--u.pending > 0) return;
  u.pending = static_cast<int64_t>(u.flat->params().size());
  // FSDP's post-backward: the unit's flat gradient, averaged and reduce-scattered into the
  // shard's; the full gradients dropped; the parameters released.
  try {
    at::NoGradGuard no_grad;
    at::Tensor flat = at::zeros({u.flat->padded_numel()}, u.shard_grad.options());
    int64_t offset = 0;
    for (const at::Tensor& p : u.flat->params()) {
      if (p.grad().defined()) {
        flat.slice(0, offset, offset + p.numel()).copy_(p.grad().reshape({-1}));
      }
      offset += p.numel();
    }
    const int world = pg_ != nullptr ? pg_->world_size() : 1;
    if (world > 1) {
      at::Tensor reduced = at::empty_like(u.shard_grad);
      if (absl::Status s = distributed::ReduceScatterSum(*pg_, flat, reduced); !s.ok()) {
        Fail(s);
        return;
      }
      u.shard_grad.add_(reduced.div_(static_cast<double>(world)));
    } else {
      u.shard_grad.add_(flat);
    }
    for (at::Tensor p : u.flat->params()) p.mutable_grad().reset();  // a handle of the same tensor
  } catch (const std::exception& e) {
    Fail(base::TorchErrorToStatus(e, absl::StatusCode::kInternal, "reducing a unit's gradients"));
    return;
  }
  u.flat->Release();
}

}  // namespace loom::sharding
