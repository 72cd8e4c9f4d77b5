// ParamShardStrategy::SaveState / LoadState: the ZeRO-3 checkpoint files in DeepSpeed's layout
// (model states + per-rank optimizer partitions), read back whatever world size wrote them.
#include "sharding/param_shard.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "absl/memory/memory.h"
#include "absl/strings/str_cat.h"
#include "base/file_util.h"
#include "base/status_macros.h"
#include "base/torch_status.h"
#include "checkpoint/module_state.h"
#include "checkpoint/optimizer_state.h"
#include "distributed/collectives.h"
#include "glog/logging.h"
#include "modeling/model.h"
#include "sharding/replicated.h"

namespace loom::sharding {
namespace {

using c10::IValue;

c10::impl::GenericDict StrDict() {
  return c10::impl::GenericDict(c10::StringType::get(), c10::AnyType::get());
}

// DeepSpeed's ZeRO-3 partition of a parameter of `numel` elements: ceil(numel / world).
int64_t Zero3PartNumel(int64_t numel, int world) { return (numel + world - 1) / world; }

}  // namespace

absl::Status ParamShardStrategy::SaveState(const std::string& folder,
                                           const StrategySaveInfo& info) {
  // What is on NVMe is read back to be saved, and goes back after.
  if (swapper_ != nullptr) {
    RETURN_IF_ERROR_CTX(swapper_->SwapInAll(), "reading the optimizer state back from NVMe");
  }
  absl::Status saved = FetchShards(Shards());
  if (saved.ok()) saved = SaveOwnState(folder, info);
  saved.Update(EvictShards(Shards(), /*dirty=*/false));
  if (swapper_ != nullptr) saved.Update(swapper_->SwapOutAll());
  return saved;
}

absl::Status ParamShardStrategy::SaveOwnState(const std::string& folder,
                                              const StrategySaveInfo& info) {
  // Under hybrid sharding the other nodes hold copies of the first node's shards.
  if (replica() != 0) return absl::OkStatus();
  const ZeroFilesInfo files =
      MakeZeroFilesInfo(3, rank(), world(), info.global_step, info.global_samples,
                        info.lr_scheduler, options_.ds_config, options_.gradient_clipping);
  const std::string tag = ZeroTagName(info.global_step);
  const std::string dir = folder + "/" + tag;
  RETURN_IF_ERROR(base::MakeDirs(dir));
  const int w = world();
  const int r = rank();
  ASSIGN_OR_RETURN(IValue ours, checkpoint::OptimizerStateDict(*options_.optimizer));
  std::vector<at::Tensor> fp32_groups;
  c10::impl::GenericDict ds_state(c10::IntType::get(), c10::AnyType::get());
  c10::impl::GenericList ds_groups(c10::AnyType::get());
  try {
    at::NoGradGuard no_grad;
    const c10::impl::GenericDict state = ours.toGenericDict().at("state").toGenericDict();
    const c10::List<IValue> groups = ours.toGenericDict().at("param_groups").toList();
    // This rank's DeepSpeed partitions of every parameter of a piece, from `shard` (a tensor
    // laid out as the piece's shard) gathered over the ranks.
    auto partitions = [&](const FullShardRunner::Piece& piece, const at::Tensor& shard,
                          std::vector<at::Tensor>& out) -> absl::Status {
      at::Tensor full = at::empty({piece.flat->padded_numel()}, shard.options());
      if (w > 1) {
        at::Tensor input = shard.detach().contiguous();
        RETURN_IF_ERROR(distributed::AllGatherInto(*pg(), input, full));
      } else {
        full.copy_(shard.detach());
      }
      int64_t offset = 0;
      for (const at::Tensor& p : piece.flat->params()) {
        const int64_t n = p.numel();
        const int64_t part = Zero3PartNumel(n, w);
        at::Tensor mine = at::zeros({part}, shard.options());
        const int64_t begin = std::min(n, r * part);
        const int64_t end = std::min(n, (r + 1) * part);
        if (end > begin) {
          mine.slice(0, 0, end - begin).copy_(full.slice(0, offset + begin, offset + end));
        }
        out.push_back(mine);
        offset += n;
      }
      return absl::OkStatus();
    };
    int64_t index = 0;  // the optimizer's parameter index (pieces in group order)
    std::vector<std::vector<size_t>> pieces_of(layout_.size());
    for (size_t k = 0; k < runner_->pieces().size(); ++k) {
      pieces_of[runner_->pieces()[k].group].push_back(k);
    }
    for (size_t g = 0; g < layout_.size(); ++g) {
      std::vector<at::Tensor> fp32;
      std::map<std::string, std::vector<at::Tensor>> parted;
      c10::impl::GenericDict entry = StrDict();
      for (size_t k : pieces_of[g]) {
        const FullShardRunner::Piece& piece = runner_->pieces()[k];
        RETURN_IF_ERROR(partitions(piece, piece.flat->shard(), fp32));
        auto it = state.find(index++);
        if (it == state.end()) continue;
        for (const auto& kv : it->value().toGenericDict()) {
          const std::string key = kv.key().toStringRef();
          const IValue& v = kv.value();
          if (v.isTensor() && v.toTensor().numel() == piece.flat->shard().numel() &&
              v.toTensor().dim() == 1) {
            RETURN_IF_ERROR(partitions(piece, v.toTensor().to(at::kFloat), parted[key]));
          } else if (!entry.contains(key)) {
            entry.insert(key, v);
          }
        }
      }
      fp32_groups.push_back(fp32.empty() ? at::zeros({0}) : at::cat(fp32));
      for (auto& [key, pieces] : parted) entry.insert_or_assign(key, at::cat(pieces));
      if (entry.size() > 0) ds_state.insert(static_cast<int64_t>(g), entry);
      c10::impl::GenericDict group = StrDict();
      for (const auto& kv : groups.get(g).toGenericDict()) {
        if (kv.key().toStringRef() == "params") {
          c10::impl::GenericList params(c10::AnyType::get());
          params.push_back(static_cast<int64_t>(g));
          group.insert("params", params);
        } else {
          group.insert(kv.key(), kv.value());
        }
      }
      ds_groups.push_back(group);
    }
  } catch (const std::exception& e) {
    return base::TorchErrorToStatus(e, absl::StatusCode::kInternal, "laying out ZeRO-3 state");
  }
  c10::impl::GenericDict base = StrDict();
  base.insert("state", ds_state);
  base.insert("param_groups", ds_groups);
  // The model states: the module's parameters as empty placeholders (they are partitioned),
  // its buffers whole; frozen parameters are whole on every rank (partitioned in the file).
  checkpoint::NamedTensors module;
  checkpoint::NamedTensors frozen;
  std::vector<std::string> buffer_names;
  std::set<const void*> sharded;
  for (const FullShardRunner::Piece& piece : runner_->pieces()) {
    for (const at::Tensor& p : piece.flat->params()) sharded.insert(p.unsafeGetTensorImpl());
  }
  for (const auto& p : options_.model->named_parameters()) {
    module.push_back({p.key(), at::zeros({0}, p.value().options().requires_grad(false))});
    if (sharded.count(p.value().unsafeGetTensorImpl()) == 0) {
      frozen.push_back({p.key(), p.value()});
    }
  }
  for (const auto& b : options_.model->named_buffers()) {
    module.push_back({b.key(), b.value()});
    buffer_names.push_back(b.key());
  }
  RETURN_IF_ERROR(WriteZeroModelStates(dir + "/" + ZeroModelStatesFile(3, r), module, buffer_names,
                                       layout_, frozen, files));
  RETURN_IF_ERROR(WriteZeroOptimStates(dir + "/" + ZeroOptimStatesFile(r, false), fp32_groups,
                                       layout_, base, files));
  if (r == 0) {
    RETURN_IF_ERROR(base::WriteFileAtomically(folder + "/latest", tag));
    RETURN_IF_ERROR(WriteZeroToFp32Pointer(folder));
  }
  return absl::OkStatus();
}

absl::Status ParamShardStrategy::LoadOwnState(const std::string& folder) {
  const int w = world();
  const int r = rank();
  // Where each parameter of each group lands: its piece and offset in the piece's flat buffer.
  struct Place {
    size_t piece;
    int64_t offset;
  };
  std::vector<std::vector<Place>> places(layout_.size());
  std::vector<int64_t> optimizer_index(runner_->pieces().size());
  {
    int64_t index = 0;
    for (size_t g = 0; g < layout_.size(); ++g) {
      for (size_t k = 0; k < runner_->pieces().size(); ++k) {
        const FullShardRunner::Piece& piece = runner_->pieces()[k];
        if (piece.group != g) continue;
        optimizer_index[k] = index++;
        int64_t offset = 0;
        for (const at::Tensor& p : piece.flat->params()) {
          places[g].push_back({k, offset});
          offset += p.numel();
        }
      }
    }
  }
  std::vector<at::Tensor> fp32(runner_->pieces().size());
  std::vector<std::map<std::string, at::Tensor>> states(runner_->pieces().size());
  for (size_t k = 0; k < fp32.size(); ++k)
    fp32[k] = at::zeros_like(runner_->pieces()[k].flat->shard().detach());
  const Zero3Sink sink = [&](size_t g, size_t i, const std::string& what, int64_t begin,
                             const at::Tensor& values) -> absl::Status {
    const Place& place = places[g][i];
    const FlatParamUnit& flat = *runner_->pieces()[place.piece].flat;
    const int64_t part = flat.padded_numel() / w;
    const int64_t lo = std::max(place.offset + begin, r * part);
    const int64_t hi = std::min(place.offset + begin + values.numel(), (r + 1) * part);
    if (lo >= hi) return absl::OkStatus();
    at::Tensor* dst = &fp32[place.piece];
    if (what != kZero3Fp32) {
      at::Tensor& t = states[place.piece][what];
      if (!t.defined()) t = at::zeros({part}, at::kFloat);
      dst = &t;
    }
    dst->slice(0, lo - r * part, hi - r * part)
        .copy_(values.slice(0, lo - place.offset - begin, hi - place.offset - begin));
    return absl::OkStatus();
  };
  ASSIGN_OR_RETURN(Zero3Read read, ReadZero3Partitions(folder, layout_, sink));
  if (read.saved_world_size != w && r == 0) {
    LOG(WARNING) << "Resuming a ZeRO-3 checkpoint of " << read.saved_world_size << " ranks on " << w
                 << ": the weights and the optimizer state are repartitioned";
  }
  // The optimizer state in torch's layout over this rank's shards.
  try {
    const c10::impl::GenericDict base = read.base_optimizer_state.toGenericDict();
    const c10::impl::GenericDict saved_state = base.at("state").toGenericDict();
    const c10::List<IValue> saved_groups = base.at("param_groups").toList();
    if (saved_groups.size() != layout_.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat(folder, ": the checkpoint's optimizer has ", saved_groups.size(),
                       " parameter groups but this one has ", layout_.size()));
    }
    c10::impl::GenericDict state(c10::IntType::get(), c10::AnyType::get());
    c10::impl::GenericList groups(c10::AnyType::get());
    for (size_t g = 0; g < layout_.size(); ++g) {
      c10::impl::GenericList params(c10::AnyType::get());
      auto saved = saved_state.find(static_cast<int64_t>(g));
      for (size_t k = 0; k < runner_->pieces().size(); ++k) {
        if (runner_->pieces()[k].group != g) continue;
        params.push_back(optimizer_index[k]);
        if (saved == saved_state.end()) continue;
        c10::impl::GenericDict entry = StrDict();
        for (const auto& kv : saved->value().toGenericDict()) {
          auto t = states[k].find(kv.key().toStringRef());
          if (t != states[k].end()) {
            entry.insert(kv.key(), t->second);
          } else if (kv.value().isTensor() && kv.value().toTensor().dim() == 1) {
            // A partitioned state tensor none of whose elements fall in this shard (all
            // padding): zeros.
            entry.insert(kv.key(), at::zeros_like(fp32[k]));
          } else {
            entry.insert(kv.key(), kv.value());
          }
        }
        state.insert(optimizer_index[k], entry);
      }
      c10::impl::GenericDict group = StrDict();
      for (const auto& kv : saved_groups.get(g).toGenericDict()) {
        group.insert(kv.key(), kv.key().toStringRef() == "params" ? IValue(params) : kv.value());
      }
      groups.push_back(group);
    }
    c10::impl::GenericDict sd = StrDict();
    sd.insert("state", state);
    sd.insert("param_groups", groups);
    RETURN_IF_ERROR_CTX(checkpoint::LoadOptimizerStateDict(*options_.optimizer, sd),
                        absl::StrCat(folder, "/", read.tag));
    at::NoGradGuard no_grad;
    for (size_t k = 0; k < fp32.size(); ++k) {
      runner_->pieces()[k].flat->mutable_shard().copy_(fp32[k]);
    }
  } catch (const std::exception& e) {
    return base::TorchErrorToStatus(e, absl::StatusCode::kInvalidArgument, folder);
  }
  return absl::OkStatus();
}

absl::Status ParamShardStrategy::LoadState(const std::string& folder) {
  if (swapper_ != nullptr) RETURN_IF_ERROR(swapper_->SwapInAll());
  RETURN_IF_ERROR(FetchShards(Shards()));
  absl::Status loaded = LoadOwnState(folder);
  loaded.Update(EvictShards(Shards(), /*dirty=*/true));
  if (swapper_ != nullptr) loaded.Update(swapper_->SwapOutAll());
  if (pg_ && pg_->world_size() > 1) {
    at::Tensor failed = at::full({}, loaded.ok() ? 0 : 1, at::kInt);
    RETURN_IF_ERROR_CTX(distributed::AllReduce(*pg_, failed), "resuming ZeRO-3 state");
    if (loaded.ok() && failed.item<int>() > 0) {
      return absl::AbortedError(absl::StrCat(
          folder, ": another rank could not load its sharded state (its log says why)"));
    }
  }
  RETURN_IF_ERROR(loaded);
  for (FullShardRunner::Piece& piece : runner_->pieces()) {
    if (piece.flat->gathered()) RETURN_IF_ERROR(piece.flat->Gather(pg()));
  }
  return absl::OkStatus();
}

}  // namespace loom::sharding
