// ParamShardStrategy::SaveState / LoadState: the ZeRO-3 checkpoint files in DeepSpeed's layout
// (model states + per-rank optimizer partitions), read back whatever world size wrote them.
// Both go one sub-group of the optimizer state at a time (all of it at once without NVMe
// offload) and one piece's parameters at a time, so a rank whose optimizer state lives on NVMe
// saves and resumes without holding it whole: the optimizer file is written piece by piece
// (checkpoint/torch_save_writer.h) and read piece by piece (checkpoint/lazy_torch_save.h).
#include "sharding/param_shard/param_shard.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include "absl/memory/memory.h"
#include "absl/strings/str_cat.h"
#include "base/file_util.h"
#include "base/status_macros.h"
#include "base/torch_status.h"
#include "checkpoint/module_state.h"
#include "checkpoint/optimizer_state.h"
#include "checkpoint/torch_save_writer.h"
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

// Where each parameter of each group lands: its piece and offset in the piece's flat buffer.
struct Place {
  size_t piece;
  int64_t offset;
};
struct PiecePlaces {
  std::vector<std::vector<Place>> places;  // per group, per parameter in layout order
};

PiecePlaces PlacesOf(const FullShardRunner& runner, size_t num_groups) {
  PiecePlaces out;
  out.places.resize(num_groups);
  for (size_t g = 0; g < num_groups; ++g) {
    for (size_t k = 0; k < runner.pieces().size(); ++k) {
      const FullShardRunner::Piece& piece = runner.pieces()[k];
      if (piece.group != g) continue;
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

// The checkpoint's optimizer state (`base_state`, DeepSpeed's layout) in torch's layout over
// `pieces` of this rank's shards (numbered by `index`, as the optimizer narrowed to them numbers
// its parameters): the values read into `shard` for partitioned tensors, the saved ones
// otherwise. Throws what torch throws.
absl::StatusOr<c10::impl::GenericDict> StateOverShards(const std::string& folder,
                                                       const IValue& base_state,
                                                       const FullShardRunner& runner,
                                                       size_t num_groups,
                                                       const std::vector<size_t>& pieces,
                                                       const std::map<size_t, int64_t>& index,
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
    for (size_t k : pieces) {
      if (runner.pieces()[k].group != g) continue;
      params.push_back(index.at(k));
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
      state.insert(index.at(k), entry);
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

// This rank's ZeRO-3 optimizer file in DeepSpeed's layout, written one piece at a time
// (checkpoint/torch_save_writer.h), so that saving holds one piece's tensors, not the rank's
// whole optimizer state: per group, this rank's fp32 partition of every parameter
// (fp32_flat_groups) and of each partitioned optimizer state tensor, in the pieces' order;
// the state's other entries (e.g. "step") from the group's first piece that has them.
class Zero3OptimFile {
 public:
  // Every rank takes part in every gather whatever happens to its own file: a failure to
  // create or write it (a full disk) is kept (local_status()) and the rest of its writes
  // skipped, so that the ranks' collectives stay in step and the save fails on every rank
  // together afterwards (the Trainer agrees on the outcome), never with one rank waiting.
  static Zero3OptimFile Create(const std::string& path, const FullShardRunner& runner,
                               size_t num_groups, int w) {
    Zero3OptimFile f;
    f.path_ = path;
    std::vector<int64_t> totals(num_groups, 0);
    for (const FullShardRunner::Piece& piece : runner.pieces()) {
      for (const at::Tensor& p : piece.flat->params()) {
        totals[piece.group] += Zero3PartitionNumel(p.numel(), w);
      }
    }
    f.groups_.resize(num_groups);
    for (size_t g = 0; g < num_groups; ++g) f.groups_[g].total = totals[g];
    absl::StatusOr<std::unique_ptr<checkpoint::TorchSaveWriter>> out =
        checkpoint::TorchSaveWriter::Create(path);
    if (!out.ok()) {
      f.local_ = out.status();
      return f;
    }
    f.out_ = std::move(*out);
    for (size_t g = 0; g < num_groups && f.local_.ok(); ++g) {
      absl::StatusOr<at::Tensor> placeholder = f.out_->Reserve(at::kFloat, totals[g]);
      if (placeholder.ok()) f.groups_[g].fp32 = *placeholder;
      f.local_.Update(placeholder.status());
    }
    return f;
  }

  const absl::Status& local_status() const { return local_; }
  void Fail(const absl::Status& s) { local_.Update(s); }

  // `piece`'s fp32 shard (`shard`: its values) and its optimizer state entry (`entry`:
  // nullptr when it has none). Returns the gathers' errors only. Throws what torch throws.
  absl::Status AddPiece(distributed::ProcessGroup* pg, int w, int r,
                        const FullShardRunner::Piece& piece, const at::Tensor& shard,
                        const IValue* entry) {
    Group& group = groups_[piece.group];
    std::vector<at::Tensor> parts;
    RETURN_IF_ERROR(AppendPartitions(pg, w, r, piece, shard, parts));
    int64_t at = group.written;
    for (const at::Tensor& t : parts) {
      Put(group.fp32, at, t);
      at += t.numel();
    }
    if (entry != nullptr) {
      for (const auto& kv : entry->toGenericDict()) {
        const std::string key = kv.key().toStringRef();
        const IValue& v = kv.value();
        if (v.isTensor() && v.toTensor().dim() == 1 &&
            v.toTensor().numel() == piece.flat->shard().numel()) {
          RETURN_IF_ERROR(AddPartitioned(pg, w, r, piece, key, v.toTensor()));
        } else if (!group.others.contains(key)) {
          group.others.insert(key, v);
        }
      }
    }
    group.written = at;
    return absl::OkStatus();
  }

  // The file's value (`param_groups`: the optimizer's, whose "params" become [g]) and its
  // commit.
  absl::Status Finish(const c10::List<IValue>& param_groups,
                      const std::vector<ZeroGroupLayout>& layout, const ZeroFilesInfo& files) {
    RETURN_IF_ERROR_CTX(local_, path_);
    c10::impl::GenericDict state(c10::IntType::get(), c10::AnyType::get());
    c10::impl::GenericList groups(c10::AnyType::get());
    std::vector<at::Tensor> fp32;
    for (size_t g = 0; g < groups_.size(); ++g) {
      Group& group = groups_[g];
      fp32.push_back(group.fp32);
      c10::impl::GenericDict entry = group.others.copy();
      for (auto& [key, placeholder] : group.parted) {
        RETURN_IF_ERROR_CTX(out_->WriteZeros(placeholder, group.total), path_);
        entry.insert_or_assign(key, placeholder);
      }
      if (entry.size() > 0) state.insert(static_cast<int64_t>(g), entry);
      c10::impl::GenericDict saved = StrDict();
      if (g < param_groups.size()) {
        for (const auto& kv : param_groups.get(g).toGenericDict()) {
          if (kv.key().toStringRef() == "params") {
            c10::impl::GenericList params(c10::AnyType::get());
            params.push_back(static_cast<int64_t>(g));
            saved.insert("params", params);
          } else {
            saved.insert(kv.key(), kv.value());
          }
        }
      }
      groups.push_back(saved);
    }
    c10::impl::GenericDict base = StrDict();
    base.insert("state", state);
    base.insert("param_groups", groups);
    ASSIGN_OR_RETURN(const IValue value, ZeroOptimStatesValue(fp32, layout, base, files), path_);
    RETURN_IF_ERROR_CTX(out_->Commit(value), path_);
    return absl::OkStatus();
  }

 private:
  struct Group {
    int64_t total = 0;    // elements of each partitioned tensor
    int64_t written = 0;  // of the pieces added so far
    at::Tensor fp32;
    std::map<std::string, at::Tensor> parted;  // state key -> placeholder
    c10::impl::GenericDict others = StrDict();
  };

  // Partitioned state tensor `key` of `piece`; pieces before it without one read as zeros.
  absl::Status AddPartitioned(distributed::ProcessGroup* pg, int w, int r,
                              const FullShardRunner::Piece& piece, const std::string& key,
                              const at::Tensor& value) {
    Group& group = groups_[piece.group];
    std::vector<at::Tensor> parts;
    RETURN_IF_ERROR(AppendPartitions(pg, w, r, piece, value.to(at::kFloat), parts));
    if (!local_.ok()) return absl::OkStatus();
    auto it = group.parted.find(key);
    if (it == group.parted.end()) {
      absl::StatusOr<at::Tensor> placeholder = out_->Reserve(at::kFloat, group.total);
      if (!placeholder.ok()) {
        local_ = placeholder.status();
        return absl::OkStatus();
      }
      it = group.parted.emplace(key, *placeholder).first;
    }
    if (local_.ok()) local_ = out_->WriteZeros(it->second, group.written);
    int64_t at = group.written;
    for (const at::Tensor& t : parts) {
      Put(it->second, at, t);
      at += t.numel();
    }
    return absl::OkStatus();
  }

  // Elements [at, ...) of a placeholder from `values` (on the host, as float32), unless this
  // rank's file has failed already.
  void Put(const at::Tensor& placeholder, int64_t at, const at::Tensor& values) {
    if (!local_.ok()) return;
    local_ = out_->Write(placeholder, at, values.to(at::kCPU, at::kFloat));
  }

  std::string path_;
  absl::Status local_;
  std::unique_ptr<checkpoint::TorchSaveWriter> out_;
  std::vector<Group> groups_;
};

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
  // Under hybrid sharding the other nodes hold copies of the first node's shards.
  if (replica() != 0) return absl::OkStatus();
  const ZeroFilesInfo files =
      MakeZeroFilesInfo(3, rank(), world(), info.global_step, info.global_samples,
                        info.lr_scheduler, options_.ds_config, options_.gradient_clipping);
  // A failure of this rank's files (a full disk) is reported after the optimizer file's
  // gathers, which every rank takes part in (Zero3OptimFile).
  const absl::StatusOr<std::string> made = MakeZeroTagFolder(folder, info.global_step);
  const std::string dir = absl::StrCat(folder, "/", ZeroTagName(info.global_step));
  const int r = rank();
  const Zero3ModelStates model = ModelStates(*options_.model, *runner_);
  absl::Status written = made.status();
  if (written.ok()) {
    written = WriteZeroModelStates(dir + "/" + ZeroModelStatesFile(3, r), model.module,
                                   model.buffer_names, layout_, model.frozen, files);
  }
  absl::Status optimizer = SaveOptimizerFile(dir + "/" + ZeroOptimStatesFile(r, false), files,
                                             written);
  RETURN_IF_ERROR(written);
  RETURN_IF_ERROR(optimizer);
  if (r == 0) {
    RETURN_IF_ERROR(WriteZeroLatest(folder, info.global_step));
  }
  return absl::OkStatus();
}

absl::Status ParamShardStrategy::ForEachStateGroup(
    const std::function<absl::Status(const std::vector<size_t>& pieces)>& fn, bool dirty) {
  if (swapper_ != nullptr) return swapper_->ForEachSubGroup(fn, dirty);
  std::vector<size_t> all(runner_->pieces().size());
  for (size_t k = 0; k < all.size(); ++k) all[k] = k;
  return fn(all);
}

// The optimizer's parameter index of each of `pieces` as OptimizerStateDict numbers them now
// (the optimizer's groups narrowed to a sub-group or not).
std::map<size_t, int64_t> ParamShardStrategy::OptimizerIndexOf(
    const std::vector<size_t>& pieces) const {
  std::map<const c10::TensorImpl*, size_t> piece_of;
  for (size_t k : pieces) piece_of[runner_->pieces()[k].flat->shard().unsafeGetTensorImpl()] = k;
  std::map<size_t, int64_t> index;
  int64_t i = 0;
  for (const auto& group : options_.optimizer->param_groups()) {
    for (const at::Tensor& p : group.params()) {
      auto it = piece_of.find(p.unsafeGetTensorImpl());
      if (it != piece_of.end()) index[it->second] = i;
      ++i;
    }
  }
  return index;
}

absl::Status ParamShardStrategy::SaveOptimizerFile(const std::string& path,
                                                   const ZeroFilesInfo& files,
                                                   const absl::Status& failed_already) {
  Zero3OptimFile file = Zero3OptimFile::Create(path, *runner_, layout_.size(), world());
  file.Fail(failed_already);  // nothing is written then; the gathers still run
  std::optional<c10::List<IValue>> param_groups;
  const auto add_pieces = [&](const std::vector<size_t>& pieces) -> absl::Status {
    ASSIGN_OR_RETURN(IValue sd, checkpoint::OptimizerStateDict(*options_.optimizer));
    if (!param_groups) param_groups = sd.toGenericDict().at("param_groups").toList();
    const c10::impl::GenericDict state = sd.toGenericDict().at("state").toGenericDict();
    const std::map<size_t, int64_t> index = OptimizerIndexOf(pieces);
    for (size_t k : pieces) {
      const FullShardRunner::Piece& piece = runner_->pieces()[k];
      auto it = state.find(index.at(k));
      const IValue entry = it == state.end() ? IValue() : it->value();
      const absl::Status fetched = FetchShards({piece.flat->shard()});
      file.Fail(fetched);
      // A shard that could not be read back still takes its part in the gather.
      const at::Tensor shard =
          fetched.ok() ? piece.flat->shard()
                       : at::zeros({piece.flat->padded_numel() / world()}, at::kFloat);
      absl::Status added =
          file.AddPiece(pg(), world(), rank(), piece, shard, entry.isNone() ? nullptr : &entry);
      if (fetched.ok()) file.Fail(EvictShards({piece.flat->shard()}, /*dirty=*/false));
      RETURN_IF_ERROR(added);
    }
    return absl::OkStatus();
  };
  try {
    at::NoGradGuard no_grad;
    RETURN_IF_ERROR_CTX(ForEachStateGroup(add_pieces, /*dirty=*/false), path);
    if (!param_groups) {
      return absl::InternalError(absl::StrCat(path, ": the optimizer has no state to save"));
    }
    return file.Finish(*param_groups, layout_, files);
  } catch (const std::exception& e) {
    return base::TorchErrorToStatus(e, absl::StatusCode::kInternal,
                                    absl::StrCat("writing ", path));
  }
}

// One sub-group (`pieces`) of this rank's shards and their optimizer state read from the
// checkpoint `folder`: only these pieces' parameters are read.
absl::Status ParamShardStrategy::LoadPieces(const std::string& folder,
                                            const std::vector<size_t>& pieces,
                                            int* saved_world_size) {
  const int w = world();
  const int r = rank();
  const PiecePlaces placed = PlacesOf(*runner_, layout_.size());
  const std::set<size_t> mine(pieces.begin(), pieces.end());
  ShardValues shard;
  shard.fp32.resize(runner_->pieces().size());
  shard.states.resize(runner_->pieces().size());
  for (size_t k : pieces) {
    shard.fp32[k] = at::zeros_like(runner_->pieces()[k].flat->shard().detach());
  }
  const Zero3Wanted wanted = [&](size_t g, size_t i) {
    return mine.count(placed.places[g][i].piece) > 0;
  };
  const Zero3Sink sink = [&](size_t g, size_t i, const std::string& what, int64_t begin,
                             const at::Tensor& values) -> absl::Status {
    CopyIntoShard(*runner_, w, r, placed.places[g][i], what, begin, values, shard);
    return absl::OkStatus();
  };
  ASSIGN_OR_RETURN(Zero3Read read, ReadZero3Partitions(folder, layout_, sink, wanted));
  *saved_world_size = read.saved_world_size;
  // The optimizer state in torch's layout over these shards, then the shards.
  try {
    ASSIGN_OR_RETURN(c10::impl::GenericDict sd,
                     StateOverShards(folder, read.base_optimizer_state, *runner_, layout_.size(),
                                     pieces, OptimizerIndexOf(pieces), shard));
    RETURN_IF_ERROR_CTX(checkpoint::LoadOptimizerStateDict(*options_.optimizer, sd),
                        absl::StrCat(folder, "/", read.tag));
    at::NoGradGuard no_grad;
    for (size_t k : pieces) {
      const at::Tensor s = runner_->pieces()[k].flat->shard();
      RETURN_IF_ERROR(FetchShards({s}));
      runner_->pieces()[k].flat->mutable_shard().copy_(shard.fp32[k]);
      RETURN_IF_ERROR(EvictShards({s}, /*dirty=*/true));
    }
  } catch (const std::exception& e) {
    return base::TorchErrorToStatus(e, absl::StatusCode::kInvalidArgument, folder);
  }
  return absl::OkStatus();
}

absl::Status ParamShardStrategy::LoadOwnState(const std::string& folder) {
  int saved_world_size = world();
  RETURN_IF_ERROR(ForEachStateGroup(
      [&](const std::vector<size_t>& pieces) {
        return LoadPieces(folder, pieces, &saved_world_size);
      },
      /*dirty=*/true));
  if (saved_world_size != world() && rank() == 0) {
    LOG(WARNING) << "Resuming a ZeRO-3 checkpoint of " << saved_world_size << " ranks on "
                 << world() << ": the weights and the optimizer state are repartitioned";
  }
  return absl::OkStatus();
}

absl::Status ParamShardStrategy::LoadState(const std::string& folder) {
  absl::Status loaded = LoadOwnState(folder);
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
