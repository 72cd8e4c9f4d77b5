// One file (about 670 lines) on purpose: it is the one reading and writing of DeepSpeed's ZeRO
// files for resuming, and the readers of stages 1-2 and of stage 3 share the file checks
// (ResolveTag, CheckLayout, CheckOptimFile, ZeroEntry); splitting them by stage would need an
// internal header for those helpers and separate the two readers from the layout they check.
#include "sharding/deepspeed_checkpoint/zero_checkpoint.h"

#include <algorithm>
#include <filesystem>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/file_util.h"
#include "base/json_ivalue.h"
#include "base/status_macros.h"
#include "base/torch_status.h"
#include "checkpoint/lazy_torch_save.h"
#include "checkpoint/torch_pickle.h"

namespace loom::sharding {
namespace {

namespace fs = std::filesystem;
using c10::IValue;

c10::impl::GenericDict StrDict() {
  return c10::impl::GenericDict(c10::StringType::get(), c10::AnyType::get());
}
c10::impl::GenericList AnyList() { return c10::impl::GenericList(c10::AnyType::get()); }

IValue IntList(const std::vector<int64_t>& values) {
  c10::impl::GenericList l = AnyList();
  for (int64_t v : values) l.push_back(v);
  return l;
}

absl::Status Invalid(const std::string& path, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": ", what));
}

// The optimizer files of a tag folder, by DeepSpeed data-parallel rank (every rank 0..N-1 once).
absl::StatusOr<std::vector<std::string>> OptimFiles(const std::string& tag_dir) {
  const std::vector<std::string> names = ListZeroFiles(tag_dir, kZeroOptimStatesSuffix);
  if (names.empty()) {
    return absl::NotFoundError(
        absl::StrCat("Can't find *_optim_states.pt files in directory ", tag_dir,
                     " (is it a ZeRO checkpoint written by DeepSpeed or loom?)"));
  }
  std::vector<std::string> files;
  for (const std::string& name : names) {
    const int r = static_cast<int>(files.size());
    if (name != ZeroOptimStatesFile(r, false) && name != ZeroOptimStatesFile(r, true)) {
      return absl::InvalidArgumentError(absl::StrCat(
          tag_dir, ": the optimizer states of rank ", r, " are missing (found ", name, ")"));
    }
    files.push_back(tag_dir + "/" + name);
  }
  return files;
}

// The checkpoint's param_shapes against this model's groups: the same parameters with the same
// shapes, in the same order — or, with `any_order` (ZeRO-1/2, whose order round_robin_gradients
// and the world size change), in any order. Returns the checkpoint's order of names per group.
absl::StatusOr<std::vector<std::vector<std::string>>> CheckLayout(
    const std::string& path, const IValue& model_states,
    const std::vector<ZeroGroupLayout>& groups, bool any_order) {
  ASSIGN_OR_RETURN(IValue shapes, ZeroEntry(model_states, "param_shapes", path));
  if (!shapes.isList() || shapes.toListRef().size() != groups.size()) {
    return Invalid(
        path, absl::StrCat("param_shapes has ", shapes.isList() ? shapes.toListRef().size() : 0,
                           " parameter groups but the optimizer has ", groups.size(),
                           " (a checkpoint of another model or optimizer setup)"));
  }
  std::vector<std::vector<std::string>> saved_order(groups.size());
  for (size_t g = 0; g < groups.size(); ++g) {
    const IValue& group = shapes.toListRef()[g];
    if (!group.isGenericDict()) return Invalid(path, "param_shapes holds a non-dict");
    std::map<std::string, std::vector<int64_t>> saved;
    for (const auto& entry : group.toGenericDict()) {
      if (!entry.key().isString()) return Invalid(path, "param_shapes holds a non-string name");
      const std::string& name = entry.key().toStringRef();
      ASSIGN_OR_RETURN(saved[name], ZeroShape(entry.value(), absl::StrCat(path, ": ", name)));
      saved_order[g].push_back(name);
    }
    const std::vector<std::string>& names = groups[g].names;
    const bool same_set =
        saved.size() == names.size() &&
        std::all_of(names.begin(), names.end(), [&](const auto& n) { return saved.count(n); });
    if (!same_set || (!any_order && saved_order[g] != names)) {
      return Invalid(path, absl::StrCat("parameter group ", g, " holds [",
                                        absl::StrJoin(saved_order[g], ", "),
                                        "] but this model's holds [", absl::StrJoin(names, ", "),
                                        "]: the checkpoint is of another model"));
    }
    for (size_t i = 0; i < names.size(); ++i) {
      if (saved[names[i]] != groups[g].shapes[i]) {
        return Invalid(path, absl::StrCat("parameter '", names[i], "' has shape [",
                                          absl::StrJoin(saved[names[i]], ", "),
                                          "] in the checkpoint but [",
                                          absl::StrJoin(groups[g].shapes[i], ", "),
                                          "] in this model: the checkpoint is of another model"));
      }
    }
  }
  return saved_order;
}

// `full` (a group's flat values with the parameters in `saved` order) with the parameters in
// the group's own order.
at::Tensor InLayoutOrder(const at::Tensor& full, const std::vector<std::string>& saved,
                         const ZeroGroupLayout& layout) {
  std::map<std::string, int64_t> numel, offset;
  for (size_t i = 0; i < layout.names.size(); ++i) {
    int64_t n = 1;
    for (int64_t d : layout.shapes[i]) n *= d;
    numel[layout.names[i]] = n;
  }
  int64_t at = 0;
  for (const std::string& name : saved) {
    offset[name] = at;
    at += numel[name];
  }
  at::Tensor out = at::empty({layout.numel}, full.options());
  at = 0;
  for (const std::string& name : layout.names) {
    out.slice(0, at, at + numel[name]).copy_(full.slice(0, offset[name], offset[name] + numel[name]));
    at += numel[name];
  }
  return out;
}

// `latest` read and its tag folder checked: the tag, or NotFound naming the file / folder.
absl::StatusOr<std::string> ResolveTag(const std::string& folder) {
  absl::StatusOr<std::string> tag = ReadZeroLatestTag(folder);
  if (!tag.ok()) {
    return absl::NotFoundError(absl::StrCat(
        tag.status().message(),
        ": the folder holds no DeepSpeed ZeRO checkpoint (saved without ZeRO or parameter "
        "sharding?); resume it with the sharding that wrote it or start a new run"));
  }
  RETURN_IF_ERROR(ZeroTagFolder(folder, *tag).status());
  return *tag;
}

// An optimizer file's zero_stage (checked against `stage_ok`) and partition_count (equal to the
// number of files found, DeepSpeed's check).
absl::Status CheckOptimFile(const IValue& osd, const std::string& path, const std::string& tag_dir,
                            int saved, bool stage3) {
  ASSIGN_OR_RETURN(IValue stage_v, ZeroEntry(osd, "zero_stage", path));
  if (stage3 != (stage_v.isInt() && stage_v.toInt() == 3)) {
    return Invalid(path, stage3 ? "not a ZeRO stage 3 optimizer file"
                                : "a ZeRO stage 3 checkpoint; loom resumes stages 1 and 2");
  }
  ASSIGN_OR_RETURN(IValue count_v, ZeroEntry(osd, "partition_count", path));
  ASSIGN_OR_RETURN(const int64_t count, ZeroIntOrMax(count_v, "partition_count", path));
  if (count != saved) {
    return Invalid(path, absl::StrCat("Expected ", count, " of '*_optim_states.pt' under '",
                                      tag_dir, "' but found ", saved, " files"));
  }
  return absl::OkStatus();
}

// One stage 1-2 rank's optimizer file read and checked: its optimizer_state_dict and its
// single_partition_of_fp32_groups (one tensor per group expected). Stage 3 files are read
// lazily (ReadZero3RankFile).
struct OptimFile {
  IValue osd;
  IValue groups;
};
absl::StatusOr<OptimFile> ReadOptimFile(const std::string& path, const std::string& tag_dir,
                                        int saved, size_t num_groups) {
  OptimFile out;
  ASSIGN_OR_RETURN(IValue file, checkpoint::LoadPickle(path));
  ASSIGN_OR_RETURN(out.osd, ZeroEntry(file, "optimizer_state_dict", path));
  RETURN_IF_ERROR(CheckOptimFile(out.osd, path, tag_dir, saved, /*stage3=*/false));
  const std::string key = "single_partition_of_fp32_groups";
  ASSIGN_OR_RETURN(out.groups, ZeroEntry(out.osd, key, path));
  if (!out.groups.isList() || out.groups.toListRef().size() != num_groups) {
    return Invalid(path, key + " does not hold one tensor per group");
  }
  return out;
}


int64_t NumelOf(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// The elements of a group's stage-3 partition (every parameter's piece) at `saved` ranks.
int64_t Zero3PartsTotal(const ZeroGroupLayout& group, int saved) {
  int64_t total = 0;
  for (const auto& shape : group.shapes) total += Zero3PartitionNumel(NumelOf(shape), saved);
  return total;
}

// A partitioned optimizer state tensor of a stage-3 group (laid out as fp32_flat_groups).
bool IsZero3Partitioned(const IValue& v, int64_t part_total) {
  return v.isTensor() && v.toTensor().dim() == 1 && v.toTensor().numel() >= part_total;
}

// Every wanted parameter's piece of `flat` (group `g`'s values of `what` in saved rank `r`'s
// file of `saved`: the parameters' pieces one after the other, a placeholder of `file`), read
// from the file and handed to `sink`.
absl::Status SinkZero3Pieces(const checkpoint::LazyTorchSave& file, const ZeroGroupLayout& group,
                             size_t g, int saved, int r, const std::string& what,
                             const at::Tensor& flat, const Zero3Sink& sink,
                             const Zero3Wanted& wanted) {
  int64_t offset = 0;
  for (size_t i = 0; i < group.shapes.size(); ++i) {
    const int64_t n = NumelOf(group.shapes[i]);
    const int64_t part = Zero3PartitionNumel(n, saved);
    const int64_t valid = ZeroValidInPartition(n, part, r);
    if (valid > 0 && (!wanted || wanted(g, i))) {
      at::Tensor values = at::empty({valid}, at::TensorOptions().dtype(flat.scalar_type()));
      RETURN_IF_ERROR(file.ReadElements(flat, offset, valid, values.data_ptr()));
      RETURN_IF_ERROR(sink(g, i, what, r * part, values.to(at::kFloat)));
    }
    offset += part;
  }
  return absl::OkStatus();
}

// Group `g`'s flat tensors in a stage-3 rank file (`flats`: its fp32_flat_groups; `state`: its
// optimizer state; placeholders of the lazily read file): the fp32 weights, then each
// partitioned optimizer state tensor — each holding at least the group's pieces.
absl::StatusOr<std::vector<std::pair<std::string, at::Tensor>>> Zero3GroupTensors(
    const IValue& flats, const IValue& state, const ZeroGroupLayout& group, size_t g, int saved,
    const std::string& path) {
  const int64_t part_total = Zero3PartsTotal(group, saved);
  const IValue& flat_v = flats.toListRef()[g];
  if (!flat_v.isTensor() || flat_v.toTensor().numel() < part_total) {
    return Invalid(path, absl::StrCat("fp32_flat_groups[", g, "] holds fewer than the ",
                                      part_total, " elements its parameters need"));
  }
  std::vector<std::pair<std::string, at::Tensor>> tensors;
  tensors.push_back({kZero3Fp32, flat_v.toTensor().reshape({-1})});
  auto it = state.toGenericDict().find(static_cast<int64_t>(g));
  if (it == state.toGenericDict().end() || !it->value().isGenericDict()) return tensors;
  for (const auto& entry : it->value().toGenericDict()) {
    if (IsZero3Partitioned(entry.value(), part_total)) {
      tensors.push_back({entry.key().toStringRef(), entry.value().toTensor().reshape({-1})});
    }
  }
  return tensors;
}

// The base optimizer state of a lazily read file with its small tensors (e.g. "step") read:
// the partitioned ones stay placeholders (callers read those piece by piece).
absl::StatusOr<IValue> WithSmallTensorsRead(const checkpoint::LazyTorchSave& file,
                                            const IValue& base,
                                            const std::vector<ZeroGroupLayout>& groups,
                                            int saved) {
  c10::impl::GenericDict out = StrDict();
  for (const auto& kv : base.toGenericDict()) {
    if (kv.key().toStringRef() != "state" || !kv.value().isGenericDict()) {
      out.insert(kv.key(), kv.value());
      continue;
    }
    c10::impl::GenericDict state(c10::IntType::get(), c10::AnyType::get());
    for (const auto& entry : kv.value().toGenericDict()) {
      const int64_t g = entry.key().isInt() ? entry.key().toInt() : -1;
      const int64_t part_total = g >= 0 && static_cast<size_t>(g) < groups.size()
                                     ? Zero3PartsTotal(groups[g], saved)
                                     : 0;
      if (!entry.value().isGenericDict()) {
        state.insert(entry.key(), entry.value());
        continue;
      }
      c10::impl::GenericDict values = StrDict();
      for (const auto& v : entry.value().toGenericDict()) {
        if (v.value().isTensor() && !IsZero3Partitioned(v.value(), part_total)) {
          ASSIGN_OR_RETURN(at::Tensor t, file.Materialize(v.value().toTensor()));
          values.insert(v.key(), t);
        } else {
          values.insert(v.key(), v.value());
        }
      }
      state.insert(entry.key(), values);
    }
    out.insert(kv.key(), state);
  }
  return IValue(out);
}

// Saved rank `r`'s stage-3 optimizer file `path` (of `saved`) opened without its tensor data
// and each wanted piece read and handed to `sink`; returns its base optimizer state. Throws
// what torch throws.
absl::StatusOr<IValue> ReadZero3RankFile(const std::string& path, const std::string& tag_dir,
                                         const std::vector<ZeroGroupLayout>& groups, int saved,
                                         int r, const Zero3Sink& sink, const Zero3Wanted& wanted) {
  ASSIGN_OR_RETURN(std::unique_ptr<checkpoint::LazyTorchSave> file,
                   checkpoint::LazyTorchSave::Open(path));
  ASSIGN_OR_RETURN(IValue osd, ZeroEntry(file->value(), "optimizer_state_dict", path));
  RETURN_IF_ERROR(CheckOptimFile(osd, path, tag_dir, saved, /*stage3=*/true));
  ASSIGN_OR_RETURN(IValue flats, ZeroEntry(osd, "fp32_flat_groups", path));
  if (!flats.isList() || flats.toListRef().size() != groups.size()) {
    return Invalid(path, "fp32_flat_groups does not hold one tensor per group");
  }
  ASSIGN_OR_RETURN(IValue base, ZeroEntry(osd, "optimizer_state_dict", path));
  ASSIGN_OR_RETURN(IValue state, ZeroEntry(base, "state", path));
  if (!state.isGenericDict()) return Invalid(path, "optimizer_state_dict.state is not a dict");
  for (size_t g = 0; g < groups.size(); ++g) {
    ASSIGN_OR_RETURN(auto tensors, Zero3GroupTensors(flats, state, groups[g], g, saved, path));
    for (const auto& [what, flat] : tensors) {
      RETURN_IF_ERROR(SinkZero3Pieces(*file, groups[g], g, saved, r, what, flat, sink, wanted));
    }
  }
  return WithSmallTensorsRead(*file, base, groups, saved);
}

// The zero_to_fp32.py pointer (WriteZeroLatest).
absl::Status WriteZeroToFp32Pointer(const std::string& folder) {
  const std::string path = folder + "/" + kZeroToFp32Pointer;
  RETURN_IF_ERROR(base::WriteFileAtomically(
      path,
      "raise SystemExit(\"This ZeRO checkpoint was written by loom: consolidate it with `bazel "
      "run //tools:zero_to_fp32 -- CHECKPOINT_DIR OUTPUT` (OUTPUT: a .bin / .safetensors file, or "
      "a directory)\")\n"));
  std::error_code ec;
  fs::permissions(path, fs::perms::owner_exec | fs::perms::group_exec, fs::perm_options::add, ec);
  if (ec) return absl::InternalError(absl::StrCat(path, ": ", ec.message()));
  return absl::OkStatus();
}

}  // namespace

ZeroFilesInfo MakeZeroFilesInfo(int stage, int rank, int world_size, int64_t global_step,
                                int64_t global_samples, const c10::IValue& lr_scheduler,
                                const nlohmann::ordered_json& ds_config, double clip_grad) {
  ZeroFilesInfo files;
  files.stage = stage;
  files.rank = rank;
  files.world_size = world_size;
  files.global_step = global_step;
  files.global_samples = global_samples;
  files.lr_scheduler = lr_scheduler;
  files.ds_config = ds_config;
  files.clip_grad = clip_grad;
  return files;
}


absl::StatusOr<std::string> MakeZeroTagFolder(const std::string& folder, int64_t global_step) {
  const std::string dir = absl::StrCat(folder, "/", ZeroTagName(global_step));
  RETURN_IF_ERROR(base::MakeDirs(dir));
  return dir;
}

absl::Status WriteZeroLatest(const std::string& folder, int64_t global_step) {
  RETURN_IF_ERROR(base::WriteFileAtomically(absl::StrCat(folder, "/", kZeroLatestFile),
                                            ZeroTagName(global_step)));
  return WriteZeroToFp32Pointer(folder);
}

absl::Status WriteZeroModelStates(const std::string& path, const checkpoint::NamedTensors& module,
                                  const std::vector<std::string>& buffer_names,
                                  const std::vector<ZeroGroupLayout>& groups,
                                  const checkpoint::NamedTensors& frozen,
                                  const ZeroFilesInfo& info) {
  try {
    c10::impl::GenericDict d = StrDict();
    c10::impl::GenericDict mod = StrDict();
    for (const auto& [name, t] : module) mod.insert(name, t.detach().cpu());
    d.insert("module", mod);
    c10::impl::GenericList buffers = AnyList();
    for (const std::string& b : buffer_names) buffers.push_back(b);
    d.insert("buffer_names", buffers);
    d.insert("optimizer", IValue());
    c10::impl::GenericList param_shapes = AnyList();
    for (const ZeroGroupLayout& g : groups) {
      c10::impl::GenericDict shapes = StrDict();
      for (size_t i = 0; i < g.names.size(); ++i)
        shapes.insert(g.names[i], checkpoint::PythonTorchSize(g.shapes[i]));
      param_shapes.push_back(shapes);
    }
    d.insert("param_shapes", param_shapes);
    if (info.stage >= 2) {
      c10::impl::GenericDict frozen_shapes = StrDict();
      c10::impl::GenericDict fragments = StrDict();
      for (const auto& [name, t] : frozen) {
        frozen_shapes.insert(name, checkpoint::PythonTorchSize(t.sizes().vec()));
        at::Tensor whole = t.detach().cpu();
        if (info.stage == 3) {
          // DeepSpeed's ds_tensor: this rank's piece, zero-padded.
          whole = Zero3Piece(whole.reshape({-1}), info.rank, info.world_size);
        }
        fragments.insert(name, whole);
      }
      d.insert("frozen_param_shapes", frozen_shapes);
      d.insert("shared_params", StrDict());
      d.insert("frozen_param_fragments", fragments);
    } else {
      d.insert("frozen_param_shapes", IValue());
      d.insert("shared_params", StrDict());
      d.insert("frozen_param_fragments", IValue());
    }
    d.insert("lr_scheduler", info.lr_scheduler);
    d.insert("data_sampler", IValue());
    d.insert("random_ltd", IValue());
    d.insert("sparse_tensor_module_names", AnyList());
    d.insert("skipped_steps", int64_t{0});
    d.insert("global_steps", info.global_step);
    d.insert("global_samples", info.global_samples);
    d.insert("dp_world_size", int64_t{info.world_size});
    d.insert("mp_world_size", int64_t{1});
    d.insert("ds_config", base::JsonToIValue(info.ds_config));
    d.insert("ds_version", std::string(kZeroLayoutVersion));
    return checkpoint::SavePickle(path, d);
  } catch (const std::exception& e) {
    return base::TorchErrorToStatus(e, absl::StatusCode::kInternal, path);
  }
}

absl::StatusOr<IValue> ZeroOptimStatesValue(const std::vector<at::Tensor>& partitions,
                                            const std::vector<ZeroGroupLayout>& groups,
                                            const IValue& base_optimizer_state,
                                            const ZeroFilesInfo& info) {
  if (partitions.size() != groups.size()) {
    return absl::InternalError("WriteZeroOptimStates: one partition per group expected");
  }
  try {
    c10::impl::GenericList fp32 = AnyList();
    c10::impl::GenericDict osd = StrDict();
    if (info.stage == 3) {
      // DeepSpeed's stage3 optimizer: fp32_flat_groups as they are, the base state under
      // "optimizer_state_dict".
      for (const at::Tensor& t : partitions) fp32.push_back(t.detach().cpu().contiguous());
      osd.insert("zero_stage", int64_t{3});
      osd.insert("dynamic_loss_scale", false);
      osd.insert("overflow", false);
      osd.insert("partition_count", int64_t{info.world_size});
      osd.insert("optimizer_state_dict", base_optimizer_state);
      osd.insert("fp32_flat_groups", fp32);
    } else {
      std::vector<int64_t> paddings;
      for (size_t g = 0; g < groups.size(); ++g) {
        const int64_t part = partitions[g].numel();
        const int64_t valid = ZeroValidInPartition(groups[g].numel, part, info.rank);
        fp32.push_back(partitions[g].detach().cpu().slice(0, 0, valid).clone());
        paddings.push_back(part - valid);
      }
      osd.insert("dynamic_loss_scale", false);
      osd.insert("overflow", false);
      osd.insert("clip_grad", info.clip_grad);
      osd.insert("base_optimizer_state", base_optimizer_state);
      osd.insert("single_partition_of_fp32_groups", fp32);
      osd.insert("zero_stage", int64_t{info.stage});
      osd.insert("group_paddings", IntList(paddings));
      osd.insert("partition_count", IntList(std::vector<int64_t>(groups.size(), info.world_size)));
      osd.insert("ds_version", std::string(kZeroLayoutVersion));
    }
    c10::impl::GenericDict d = StrDict();
    d.insert("optimizer_state_dict", osd);
    d.insert("ds_config", base::JsonToIValue(info.ds_config));
    d.insert("ds_version", std::string(kZeroLayoutVersion));
    return IValue(d);
  } catch (const std::exception& e) {
    return base::TorchErrorToStatus(e, absl::StatusCode::kInternal, "the ZeRO optimizer states");
  }
}

absl::Status WriteZeroOptimStates(const std::string& path,
                                  const std::vector<at::Tensor>& partitions,
                                  const std::vector<ZeroGroupLayout>& groups,
                                  const c10::IValue& base_optimizer_state,
                                  const ZeroFilesInfo& info) {
  ASSIGN_OR_RETURN(const IValue value,
                   ZeroOptimStatesValue(partitions, groups, base_optimizer_state, info), path);
  return checkpoint::SavePickle(path, value);
}

namespace {

// What ReadZeroRankState gathers from the saved ranks' files, per group: the concatenation
// over saved ranks of the fp32 partitions and of each partitioned state tensor; rank 0's (the
// first file read) base optimizer state for the other values and param_groups.
struct SavedPartitions {
  std::vector<std::vector<at::Tensor>> fp32;
  std::vector<std::map<std::string, std::vector<at::Tensor>>> parted;
  IValue first_base;
};

// The stage 1/2 files `files` (of `saved` ranks): every one, or with `own_only` this rank's
// alone. Throws what torch throws.
absl::StatusOr<SavedPartitions> ReadSavedPartitions(const std::vector<std::string>& files,
                                                    const std::string& tag_dir,
                                                    const std::vector<ZeroGroupLayout>& groups,
                                                    int saved, bool own_only, int rank) {
  SavedPartitions out;
  out.fp32.resize(groups.size());
  out.parted.resize(groups.size());
  for (int r = 0; r < saved; ++r) {
    if (own_only && r != rank) continue;
    const std::string& path = files[r];
    ASSIGN_OR_RETURN(OptimFile read,
                     ReadOptimFile(path, tag_dir, saved, groups.size()));
    const IValue& osd = read.osd;
    const IValue& singles = read.groups;
    ASSIGN_OR_RETURN(IValue base, ZeroEntry(osd, "base_optimizer_state", path));
    if (!out.first_base.isGenericDict()) out.first_base = base;
    ASSIGN_OR_RETURN(IValue state, ZeroEntry(base, "state", path));
    if (!state.isGenericDict()) return Invalid(path, "base_optimizer_state.state is not a dict");
    const c10::impl::GenericDict state_d = state.toGenericDict();
    for (size_t g = 0; g < groups.size(); ++g) {
      const IValue& t = singles.toListRef()[g];
      if (!t.isTensor()) return Invalid(path, "single_partition_of_fp32_groups holds a non-tensor");
      const at::Tensor part_t = t.toTensor().to(at::kFloat).reshape({-1});
      out.fp32[g].push_back(part_t);
      auto it = state_d.find(static_cast<int64_t>(g));
      if (it == state_d.end() || !it->value().isGenericDict()) continue;
      const int64_t part_numel = ZeroAlignedNumel(groups[g].numel, saved) / saved;
      for (const auto& entry : it->value().toGenericDict()) {
        if (entry.value().isTensor() && entry.value().toTensor().numel() == part_numel &&
            part_numel > 1) {
          out.parted[g][entry.key().toStringRef()].push_back(
              entry.value().toTensor().reshape({-1}));
        }
      }
    }
  }
  return out;
}

// How one group is repartitioned: group `g` of `layout`, saved in `saved_order`, for rank
// `rank` of `world_size`; `same_world`: the pieces are this rank's own.
struct GroupRepartition {
  const std::string& tag_dir;
  size_t g;
  const ZeroGroupLayout& layout;
  const std::vector<std::string>& saved_order;
  bool same_world;
  int rank;
  int world_size;
};

// This rank's partition of the group's values `pieces` (of `what`), padded. Throws what torch
// throws.
absl::StatusOr<at::Tensor> Repartition(const GroupRepartition& gr,
                                       const std::vector<at::Tensor>& pieces,
                                       const std::string& what) {
  const int64_t numel = gr.layout.numel;
  const int64_t padded = ZeroAlignedNumel(numel, gr.world_size);
  const int64_t part = padded / gr.world_size;
  if (gr.same_world) {
    // This rank's own piece, its cut-off padding (the last rank's fp32) zeroed again.
    if (pieces.size() != 1 || pieces[0].numel() > part) {
      return Invalid(gr.tag_dir, absl::StrCat(what, " of group ", gr.g, " is not a partition of ",
                                              part, " elements"));
    }
    at::Tensor own = at::zeros({part}, pieces[0].options());
    own.slice(0, 0, pieces[0].numel()).copy_(pieces[0]);
    return own;
  }
  at::Tensor full = at::cat(pieces);
  if (full.numel() < numel) {
    return Invalid(gr.tag_dir, absl::StrCat(what, " of group ", gr.g, " holds ", full.numel(),
                                            " elements for ", numel, " parameters"));
  }
  if (gr.saved_order != gr.layout.names) {
    full = InLayoutOrder(full.slice(0, 0, numel), gr.saved_order, gr.layout);
  }
  at::Tensor padded_full = at::zeros({padded}, full.options());
  padded_full.slice(0, 0, numel).copy_(full.slice(0, 0, numel));
  return padded_full.slice(0, gr.rank * part, (gr.rank + 1) * part).clone();
}

// The group's saved state `saved_entry` with each partitioned tensor (`parted`, which must hold
// `expected_pieces` per key) repartitioned. Throws what torch throws.
absl::StatusOr<c10::impl::GenericDict> RepartitionState(
    const GroupRepartition& gr, const IValue& saved_entry,
    const std::map<std::string, std::vector<at::Tensor>>& parted, int expected_pieces) {
  c10::impl::GenericDict entry = StrDict();
  for (const auto& kv : saved_entry.toGenericDict()) {
    const std::string key = kv.key().toStringRef();
    auto p = parted.find(key);
    if (p != parted.end()) {
      if (static_cast<int>(p->second.size()) != expected_pieces) {
        return Invalid(gr.tag_dir, absl::StrCat("optimizer state '", key, "' of group ", gr.g,
                                                " is not partitioned on every rank"));
      }
      ASSIGN_OR_RETURN(at::Tensor slice, Repartition(gr, p->second, key));
      entry.insert(key, slice);
    } else {
      entry.insert(key, kv.value());
    }
  }
  return entry;
}

}  // namespace

absl::StatusOr<ZeroRankRestore> ReadZeroRankState(const std::string& folder,
                                                  const std::vector<ZeroGroupLayout>& groups,
                                                  int rank, int world_size) {
  ZeroRankRestore out;
  ASSIGN_OR_RETURN(out.tag, ResolveTag(folder));
  const std::string tag_dir = folder + "/" + out.tag;
  const std::string model_path = tag_dir + "/" + kZeroModelStatesFile;
  ASSIGN_OR_RETURN(IValue model_states, checkpoint::LoadPickle(model_path));
  ASSIGN_OR_RETURN(const std::vector<std::vector<std::string>> saved_order,
                   CheckLayout(model_path, model_states, groups, /*any_order=*/true));
  ASSIGN_OR_RETURN(std::vector<std::string> files, OptimFiles(tag_dir));
  const int saved = static_cast<int>(files.size());
  out.saved_world_size = saved;
  bool same_order = true;
  for (size_t g = 0; g < groups.size(); ++g) same_order &= saved_order[g] == groups[g].names;
  // The same world size and order: this rank's file alone holds its partitions (no other
  // rank's is read). Otherwise (another world size, or round_robin_gradients changing the
  // order) every rank's file is read and the group's values laid out again.
  const bool same_world = saved == world_size && same_order;
  const int expected_pieces = same_world ? 1 : saved;
  try {
    ASSIGN_OR_RETURN(SavedPartitions read,
                     ReadSavedPartitions(files, tag_dir, groups, saved, same_world, rank));
    // Repartitioned for this world size.
    const c10::impl::GenericDict old_state =
        read.first_base.toGenericDict().at("state").toGenericDict();
    c10::impl::GenericDict new_state(c10::IntType::get(), c10::AnyType::get());
    for (size_t g = 0; g < groups.size(); ++g) {
      const GroupRepartition gr{tag_dir,    g,    groups[g], saved_order[g],
                                same_world, rank, world_size};
      ASSIGN_OR_RETURN(at::Tensor mine,
                       Repartition(gr, read.fp32[g], "single_partition_of_fp32_groups"));
      out.partitions.push_back(mine);
      auto it = old_state.find(static_cast<int64_t>(g));
      if (it == old_state.end()) continue;
      ASSIGN_OR_RETURN(c10::impl::GenericDict entry,
                       RepartitionState(gr, it->value(), read.parted[g], expected_pieces));
      new_state.insert(static_cast<int64_t>(g), entry);
    }
    c10::impl::GenericDict sd = StrDict();
    sd.insert("state", new_state);
    sd.insert("param_groups", read.first_base.toGenericDict().at("param_groups"));
    out.optimizer_state = sd;
  } catch (const std::exception& e) {
    return base::TorchErrorToStatus(e, absl::StatusCode::kInvalidArgument, tag_dir);
  }
  return out;
}

absl::StatusOr<Zero3Read> ReadZero3Partitions(const std::string& folder,
                                              const std::vector<ZeroGroupLayout>& groups,
                                              const Zero3Sink& sink, const Zero3Wanted& wanted) {
  Zero3Read out;
  ASSIGN_OR_RETURN(out.tag, ResolveTag(folder));
  const std::string tag_dir = folder + "/" + out.tag;
  const std::string model_path = tag_dir + "/" + ZeroModelStatesFile(3, 0);
  if (!fs::exists(model_path)) {
    return absl::InvalidArgumentError(absl::StrCat(
        tag_dir, " holds no ", ZeroModelStatesFile(3, 0),
        ": not a ZeRO stage 3 checkpoint (a stage 1 or 2 one resumes with that stage)"));
  }
  ASSIGN_OR_RETURN(IValue model_states, checkpoint::LoadPickle(model_path));
  RETURN_IF_ERROR(CheckLayout(model_path, model_states, groups, /*any_order=*/false).status());
  ASSIGN_OR_RETURN(std::vector<std::string> files, OptimFiles(tag_dir));
  out.saved_world_size = static_cast<int>(files.size());
  try {
    for (int r = 0; r < out.saved_world_size; ++r) {
      ASSIGN_OR_RETURN(IValue base, ReadZero3RankFile(files[r], tag_dir, groups,
                                                      out.saved_world_size, r, sink, wanted));
      if (r == 0) out.base_optimizer_state = base;
    }
  } catch (const std::exception& e) {
    return base::TorchErrorToStatus(e, absl::StatusCode::kInvalidArgument, tag_dir);
  }
  return out;
}

}  // namespace loom::sharding
