// ParamShardStrategy::SaveState / LoadState: the ZeRO-3 checkpoint files in DeepSpeed's layout
// (model states + per-rank optimizer partitions), read back whatever world size wrote them.
#include "sharding/param_shard/param_shard.h"

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

// Where each parameter of each group lands: its piece and offset in the piece's flat buffer;
// and each piece's index among the optimizer's parameters (pieces in group order).
struct Place {
  size_t piece;
  int64_t offset;
};
struct PiecePlaces {
  std::vector<std::vector<Place>> places;  // per group, per parameter in layout order
  std::vector<int64_t> optimizer_index;    // per piece
};

PiecePlaces PlacesOf(const FullShardRunner& runner, size_t num_groups) {
  PiecePlaces out;
  out.places.resize(num_groups);
  out.optimizer_index.resize(runner.pieces().size());
  int64_t index = 0;
  for (size_t g = 0; g < num_groups; ++g) {
    for (size_t k = 0; k < runner.pieces().size(); ++k) {
      const FullShardRunner::Piece& piece = runner.pieces()[k];
      if (piece.group != g) continue;
      out.optimizer_index[k] = index++;
      int64_t offset = 0;
      for (const at::Tensor& p : piece.flat->params()) {
        out.places[g].push_back({k, offset});
        offset += p.numel();
      }
    }
  }
  return out;
}

// What this rank reads into its shards: per piece, the fp32 values and each partitioned
// optimizer state tensor (zeros where the checkpoint has nothing for them).
struct ShardValues {
  std::vector<at::Tensor> fp32;
  std::vector<std::map<std::string, at::Tensor>> states;
};

// The part of `values` (elements [begin, ...) of parameter `place` of `what`) that falls in
// rank r's shard (of `w`), copied into `out`.
void CopyIntoShard(const FullShardRunner& runner, int w, int r, const Place& place,
                   const std::string& what, int64_t begin, const at::Tensor& values,
                   ShardValues& out) {
  const FlatParamUnit& flat = *runner.pieces()[place.piece].flat;
  const int64_t part = flat.padded_numel() / w;
  const int64_t lo = std::max(place.offset + begin, r * part);
  const int64_t hi = std::min(place.offset + begin + values.numel(), (r + 1) * part);
  if (lo >= hi) return;
  at::Tensor* dst = &out.fp32[place.piece];
  if (what != kZero3Fp32) {
    at::Tensor& t = out.states[place.piece][what];
    if (!t.defined()) t = at::zeros({part}, at::kFloat);
    dst = &t;
  }
  dst->slice(0, lo - r * part, hi - r * part)
      .copy_(values.slice(0, lo - place.offset - begin, hi - place.offset - begin));
}

// The checkpoint's optimizer state (`base_state`, DeepSpeed's layout) in torch's layout over this
// rank's shards: the values read into `shard` for partitioned tensors, the saved ones
// otherwise. Throws what torch throws.
absl::StatusOr<c10::impl::GenericDict> StateOverShards(const std::string& folder,
                                                       const IValue& base_state,
                                                       const FullShardRunner& runner,
                                                       size_t num_groups, const PiecePlaces& placed,
                                                       const ShardValues& shard) {
  const c10::impl::GenericDict base = base_state.toGenericDict();
  const c10::impl::GenericDict saved_state = base.at("state").toGenericDict();
  const c10::List<IValue> saved_groups = base.at("param_groups").toList();
  if (saved_groups.size() != num_groups) {
    return absl::InvalidArgumentError(
        absl::StrCat(folder, ": the checkpoint's optimizer has ", saved_groups.size(),
                     " parameter groups but this one has ", num_groups));
  }
  c10::impl::GenericDict state(c10::IntType::get(), c10::AnyType::get());
  c10::impl::GenericList groups(c10::AnyType::get());
  for (size_t g = 0; g < num_groups; ++g) {
    c10::impl::GenericList params(c10::AnyType::get());
    auto saved = saved_state.find(static_cast<int64_t>(g));
    for (size_t k = 0; k < runner.pieces().size(); ++k) {
      if (runner.pieces()[k].group != g) continue;
      params.push_back(placed.optimizer_index[k]);
      if (saved == saved_state.end()) continue;
      c10::impl::GenericDict entry = StrDict();
      for (const auto& kv : saved->value().toGenericDict()) {
        auto t = shard.states[k].find(kv.key().toStringRef());
        if (t != shard.states[k].end()) {
          entry.insert(kv.key(), t->second);
        } else if (kv.value().isTensor() && kv.value().toTensor().dim() == 1) {
          // A partitioned state tensor none of whose elements fall in this shard (all
          // padding): zeros.
          entry.insert(kv.key(), at::zeros_like(shard.fp32[k]));
        } else {
          entry.insert(kv.key(), kv.value());
        }
      }
      state.insert(placed.optimizer_index[k], entry);
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
  return sd;
}

// This rank's DeepSpeed partitions of every parameter of a piece, from `shard` (a tensor laid
// out as the piece's shard) gathered over the `w` ranks of `pg`, appended to `out`. Throws what
// torch throws.
absl::Status AppendPartitions(distributed::ProcessGroup* pg, int w, int r,
                              const FullShardRunner::Piece& piece, const at::Tensor& shard,
                              std::vector<at::Tensor>& out) {
  at::Tensor full = at::empty({piece.flat->padded_numel()}, shard.options());
  if (w > 1) {
    at::Tensor input = shard.detach().contiguous();
    RETURN_IF_ERROR(distributed::AllGatherInto(*pg, input, full));
  } else {
    full.copy_(shard.detach());
  }
  int64_t offset = 0;
  for (const at::Tensor& p : piece.flat->params()) {
    out.push_back(Zero3Piece(full.slice(0, offset, offset + p.numel()), r, w));
    offset += p.numel();
  }
  return absl::OkStatus();
}

// The optimizer state in DeepSpeed's ZeRO-3 layout: per group, this rank's fp32 partitions
// (fp32_flat_groups) and the base optimizer state with its partitioned tensors laid out the
// same way.
struct Zero3OptimizerLayout {
  std::vector<at::Tensor> fp32_groups;
  c10::impl::GenericDict state{c10::IntType::get(), c10::AnyType::get()};
  c10::impl::GenericList param_groups{c10::AnyType::get()};
};

// Group `g` of `ours` (torch's optimizer state dict over the shards; `index`: the optimizer's
// index of the group's first piece, advanced past its pieces) into `out`. Throws what torch
// throws.
absl::Status LayOutGroup(distributed::ProcessGroup* pg, int w, int r, const FullShardRunner& runner,
                         const std::vector<size_t>& pieces, size_t g,
                         const c10::impl::GenericDict& state, const c10::List<IValue>& groups,
                         int64_t& index, Zero3OptimizerLayout& out) {
  std::vector<at::Tensor> fp32;
  std::map<std::string, std::vector<at::Tensor>> parted;
  c10::impl::GenericDict entry = StrDict();
  for (size_t k : pieces) {
    const FullShardRunner::Piece& piece = runner.pieces()[k];
    RETURN_IF_ERROR(AppendPartitions(pg, w, r, piece, piece.flat->shard(), fp32));
    auto it = state.find(index++);
    if (it == state.end()) continue;
    for (const auto& kv : it->value().toGenericDict()) {
      const std::string key = kv.key().toStringRef();
      const IValue& v = kv.value();
      if (v.isTensor() && v.toTensor().numel() == piece.flat->shard().numel() &&
          v.toTensor().dim() == 1) {
        RETURN_IF_ERROR(
            AppendPartitions(pg, w, r, piece, v.toTensor().to(at::kFloat), parted[key]));
      } else if (!entry.contains(key)) {
        entry.insert(key, v);
      }
    }
  }
  out.fp32_groups.push_back(fp32.empty() ? at::zeros({0}) : at::cat(fp32));
  for (auto& [key, tensors] : parted) entry.insert_or_assign(key, at::cat(tensors));
  if (entry.size() > 0) out.state.insert(static_cast<int64_t>(g), entry);
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
  out.param_groups.push_back(group);
  return absl::OkStatus();
}

// Every one of `num_groups` groups of `ours` laid out (LayOutGroup).
absl::StatusOr<Zero3OptimizerLayout> LayOutOptimizerState(distributed::ProcessGroup* pg, int w,
                                                          int r, const FullShardRunner& runner,
                                                          size_t num_groups, const IValue& ours) {
  Zero3OptimizerLayout out;
  try {
    at::NoGradGuard no_grad;
    const c10::impl::GenericDict state = ours.toGenericDict().at("state").toGenericDict();
    const c10::List<IValue> groups = ours.toGenericDict().at("param_groups").toList();
    int64_t index = 0;  // the optimizer's parameter index (pieces in group order)
    std::vector<std::vector<size_t>> pieces_of(num_groups);
    for (size_t k = 0; k < runner.pieces().size(); ++k) {
      pieces_of[runner.pieces()[k].group].push_back(k);
    }
    for (size_t g = 0; g < num_groups; ++g) {
      RETURN_IF_ERROR(LayOutGroup(pg, w, r, runner, pieces_of[g], g, state, groups, index, out));
    }
  } catch (const std::exception& e) {
    return base::TorchErrorToStatus(e, absl::StatusCode::kInternal, "laying out ZeRO-3 state");
  }
  return out;
}

// The model states: the module's parameters as empty placeholders (they are partitioned), its
// buffers whole; frozen parameters are whole on every rank (partitioned in the file).
struct Zero3ModelStates {
  checkpoint::NamedTensors module;
  checkpoint::NamedTensors frozen;
  std::vector<std::string> buffer_names;
};

Zero3ModelStates ModelStates(const torch::nn::Module& model, const FullShardRunner& runner) {
  Zero3ModelStates out;
  std::set<const void*> sharded;
  for (const FullShardRunner::Piece& piece : runner.pieces()) {
    for (const at::Tensor& p : piece.flat->params()) sharded.insert(p.unsafeGetTensorImpl());
  }
  for (const auto& p : model.named_parameters()) {
    out.module.push_back({p.key(), at::zeros({0}, p.value().options().requires_grad(false))});
    if (sharded.count(p.value().unsafeGetTensorImpl()) == 0) {
      out.frozen.push_back({p.key(), p.value()});
    }
  }
  for (const auto& b : model.named_buffers()) {
    out.module.push_back({b.key(), b.value()});
    out.buffer_names.push_back(b.key());
  }
  return out;
}

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
  ASSIGN_OR_RETURN(const std::string dir, MakeZeroTagFolder(folder, info.global_step));
  const int r = rank();
  ASSIGN_OR_RETURN(IValue ours, checkpoint::OptimizerStateDict(*options_.optimizer));
  ASSIGN_OR_RETURN(Zero3OptimizerLayout optim,
                   LayOutOptimizerState(pg(), world(), r, *runner_, layout_.size(), ours));
  c10::impl::GenericDict base = StrDict();
  base.insert("state", optim.state);
  base.insert("param_groups", optim.param_groups);
  const Zero3ModelStates model = ModelStates(*options_.model, *runner_);
  RETURN_IF_ERROR(WriteZeroModelStates(dir + "/" + ZeroModelStatesFile(3, r), model.module,
                                       model.buffer_names, layout_, model.frozen, files));
  RETURN_IF_ERROR(WriteZeroOptimStates(dir + "/" + ZeroOptimStatesFile(r, false), optim.fp32_groups,
                                       layout_, base, files));
  if (r == 0) {
    RETURN_IF_ERROR(WriteZeroLatest(folder, info.global_step));
  }
  return absl::OkStatus();
}

absl::Status ParamShardStrategy::LoadOwnState(const std::string& folder) {
  const int w = world();
  const int r = rank();
  const PiecePlaces placed = PlacesOf(*runner_, layout_.size());
  ShardValues shard;
  shard.fp32.resize(runner_->pieces().size());
  shard.states.resize(runner_->pieces().size());
  for (size_t k = 0; k < shard.fp32.size(); ++k)
    shard.fp32[k] = at::zeros_like(runner_->pieces()[k].flat->shard().detach());
  const Zero3Sink sink = [&](size_t g, size_t i, const std::string& what, int64_t begin,
                             const at::Tensor& values) -> absl::Status {
    CopyIntoShard(*runner_, w, r, placed.places[g][i], what, begin, values, shard);
    return absl::OkStatus();
  };
  ASSIGN_OR_RETURN(Zero3Read read, ReadZero3Partitions(folder, layout_, sink));
  if (read.saved_world_size != w && r == 0) {
    LOG(WARNING) << "Resuming a ZeRO-3 checkpoint of " << read.saved_world_size << " ranks on " << w
                 << ": the weights and the optimizer state are repartitioned";
  }
  // The optimizer state in torch's layout over this rank's shards, then the shards.
  try {
    ASSIGN_OR_RETURN(c10::impl::GenericDict sd,
                     StateOverShards(folder, read.base_optimizer_state, *runner_, layout_.size(),
                                     placed, shard));
    RETURN_IF_ERROR_CTX(checkpoint::LoadOptimizerStateDict(*options_.optimizer, sd),
                        absl::StrCat(folder, "/", read.tag));
    at::NoGradGuard no_grad;
    for (size_t k = 0; k < shard.fp32.size(); ++k) {
      runner_->pieces()[k].flat->mutable_shard().copy_(shard.fp32[k]);
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
