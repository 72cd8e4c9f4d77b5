#include "sharding/deepspeed_checkpoint/zero_to_fp32.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "base/file_util.h"
#include "base/status_macros.h"
#include "base/torch_status.h"
#include "checkpoint/lazy_torch_save.h"
#include "checkpoint/python_unpickler.h"
#include "sharding/deepspeed_checkpoint/zero_files.h"

namespace loom::sharding {

using ::loom::checkpoint::LazyTorchSave;
using ::loom::checkpoint::NamedTensors;
using ::loom::checkpoint::LoadStateDict;
using ::loom::checkpoint::LoadStateDictOptions;
using ::loom::checkpoint::LoadStateDictResult;
namespace {

using c10::IValue;

// The newest checkpoint-<N>/ of `dir` that holds a `latest` file, when `dir` is an HF
// output_dir rather than a checkpoint folder ("" when it has none).
std::string NewestCheckpointWithLatest(const std::string& dir) {
  std::error_code ec;
  int64_t best = -1;
  std::string found;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    int64_t step = 0;
    if (!absl::StartsWith(name, "checkpoint-") || !absl::SimpleAtoi(name.substr(11), &step)) {
      continue;
    }
    if (step > best && std::filesystem::exists(entry.path() / kZeroLatestFile, ec)) {
      best = step;
      found = entry.path().string();
    }
  }
  return found;
}

absl::StatusOr<std::string> ReadTag(const std::string& dir) {
  absl::StatusOr<std::string> tag = ReadZeroLatestTag(dir);
  if (tag.ok()) return tag;
  if (const std::string checkpoint = NewestCheckpointWithLatest(dir); !checkpoint.empty()) {
    return absl::NotFoundError(absl::StrCat(
        tag.status().message(), ": ", dir,
        " looks like a training output_dir; pass one of its checkpoint folders instead, e.g. ",
        checkpoint));
  }
  return absl::NotFoundError(
      absl::StrCat(tag.status().message(), " (name the tag instead, e.g. -t global_step3)"));
}

using AddFn = std::function<void(const std::string&, ZeroTensor)>;

// A tensor read already.
ZeroTensor Read(at::Tensor t) {
  ZeroTensor z;
  z.shape = t.sizes().vec();
  z.dtype = t.scalar_type();
  z.read = [t]() -> absl::StatusOr<at::Tensor> { return t; };
  return z;
}

absl::StatusOr<int64_t> Numel(const IValue& shape_value, const std::string& what,
                              std::vector<int64_t>* shape) {
  ASSIGN_OR_RETURN(*shape, ZeroShape(shape_value, what));
  return ZeroNumel(*shape, what);
}

// Calls fn(name, shape, numel) for each entry of a param_shapes group, in order.
absl::Status ForEachParamShape(
    const IValue& group, size_t g, const std::string& mfile,
    const std::function<absl::Status(const std::string&, const std::vector<int64_t>&, int64_t)>&
        fn) {
  if (!group.isGenericDict()) {
    return absl::InvalidArgumentError(absl::StrCat(mfile, ": param_shapes[", g, "] is not a dict"));
  }
  for (const auto& entry : group.toGenericDict()) {
    if (!entry.key().isString()) {
      return absl::InvalidArgumentError(
          absl::StrCat(mfile, ": a parameter name that is not a string"));
    }
    const std::string name = entry.key().toStringRef();
    std::vector<int64_t> shape;
    ASSIGN_OR_RETURN(const int64_t numel,
                     Numel(entry.value(), absl::StrCat(mfile, ": ", name), &shape));
    RETURN_IF_ERROR(fn(name, shape, numel));
  }
  return absl::OkStatus();
}

// Every rank's fp32 groups as placeholders of its optimizer file, read by range on demand (the
// checkpoint is never held in memory: only the consolidated output is).
struct RankPartitions {
  std::unique_ptr<LazyTorchSave> file;
  std::vector<at::Tensor> groups;  // 1-D placeholders, in group order
};

// Elements [begin, begin + count) of `t` (a placeholder of `file`) as float32 into dst.
absl::Status ReadFloat(const LazyTorchSave& file, const at::Tensor& t, int64_t begin, int64_t count,
                       float* dst) {
  if (count == 0) return absl::OkStatus();
  if (t.scalar_type() == at::kFloat) return file.ReadElements(t, begin, count, dst);
  at::Tensor raw = at::empty({count}, at::TensorOptions().dtype(t.scalar_type()));
  RETURN_IF_ERROR(file.ReadElements(t, begin, count, raw.data_ptr()));
  at::Tensor out = at::from_blob(dst, {count}, at::kFloat);
  out.copy_(raw);
  return absl::OkStatus();
}

// Stages 1-2: each group's partitions concatenated (rank order), cut by param_shapes.
using Partitions = std::shared_ptr<const std::vector<RankPartitions>>;

absl::Status AddPartitionedGroups(c10::ArrayRef<IValue> groups, const Partitions& shared,
                                  int64_t world, const std::string& mfile,
                                  const std::string& folder, const AddFn& add) {
  const std::vector<RankPartitions>& partitions = *shared;
  if (groups.size() != partitions[0].groups.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(mfile, ": ", groups.size(), " groups in param_shapes, ",
                     partitions[0].groups.size(), " in the partitions"));
  }
  const auto round_up = [&](int64_t n) { return ZeroAlignedNumel(n, static_cast<int>(world)); };
  for (size_t g = 0; g < groups.size(); ++g) {
    std::vector<int64_t> starts;  // where each rank's partition begins in the group
    int64_t total = 0;
    for (const RankPartitions& rank : partitions) {
      starts.push_back(total);
      total += rank.groups[g].numel();
    }
    int64_t offset = 0;
    RETURN_IF_ERROR(ForEachParamShape(
        groups[g], g, mfile,
        [&](const std::string& name, const std::vector<int64_t>& shape,
            int64_t numel) -> absl::Status {
          if (numel > total - offset) {
            return absl::InvalidArgumentError(
                absl::StrCat(mfile, ": parameter '", name, "' ends at ", offset + numel,
                             " but group ", g, " holds ", total, " elements"));
          }
          ZeroTensor z;
          z.shape = shape;
          z.read = [shared, starts, g, offset, numel, shape]() -> absl::StatusOr<at::Tensor> {
            at::Tensor out = at::empty({numel}, at::kFloat);
            for (size_t r = 0; r < shared->size(); ++r) {
              const at::Tensor& part = (*shared)[r].groups[g];
              const int64_t a = std::max(offset, starts[r]);
              const int64_t b = std::min(offset + numel, starts[r] + part.numel());
              if (a < b) {
                RETURN_IF_ERROR(ReadFloat(*(*shared)[r].file, part, a - starts[r], b - a,
                                          out.data_ptr<float>() + (a - offset)));
              }
            }
            return out.view(shape);
          };
          add(name, std::move(z));
          offset += numel;
          return absl::OkStatus();
        }));
    if (round_up(offset) != round_up(total)) {
      return absl::InvalidArgumentError(
          absl::StrCat("consumed ", round_up(offset), " numels out of ", round_up(total),
                       " - something is wrong (", folder, ", group ", g,
                       ": the partitions do not match param_shapes)"));
    }
  }
  return absl::OkStatus();
}

// Elements [begin, begin + count) of a rank's groups laid end to end, as float32 into dst.
absl::Status ReadFlat(const RankPartitions& rank, int64_t begin, int64_t count, float* dst) {
  int64_t start = 0;
  for (const at::Tensor& g : rank.groups) {
    const int64_t a = std::max(begin, start);
    const int64_t b = std::min(begin + count, start + g.numel());
    if (a < b) RETURN_IF_ERROR(ReadFloat(*rank.file, g, a - start, b - a, dst + (a - begin)));
    start += g.numel();
  }
  return absl::OkStatus();
}

// Stage 3: every parameter is split over the ranks in ceil(numel / world) pieces, laid one
// after the other in each rank's flat groups (concatenated); a parameter is its ranks' pieces
// concatenated, trimmed to its numel.
absl::Status AddZero3Parameters(c10::ArrayRef<IValue> groups, const Partitions& shared,
                                int64_t world, const std::string& mfile,
                                const std::string& folder, const AddFn& add) {
  const std::vector<RankPartitions>& partitions = *shared;
  std::vector<int64_t> flat_numel;
  for (const RankPartitions& rank : partitions) {
    int64_t n = 0;
    for (const at::Tensor& g : rank.groups) n += g.numel();
    flat_numel.push_back(n);
  }
  int64_t offset = 0;
  for (size_t g = 0; g < groups.size(); ++g) {
    RETURN_IF_ERROR(ForEachParamShape(
        groups[g], g, mfile,
        [&](const std::string& name, const std::vector<int64_t>& shape,
            int64_t numel) -> absl::Status {
          const int64_t piece = Zero3PartitionNumel(numel, static_cast<int>(world));
          for (int64_t n : flat_numel) {
            if (piece > n - offset) {
              return absl::InvalidArgumentError(
                  absl::StrCat(mfile, ": parameter '", name, "' needs elements up to ",
                               offset + piece, " of a rank's flat group, which holds ", n));
            }
          }
          ZeroTensor z;
          z.shape = shape;
          z.read = [shared, offset, piece, numel, shape]() -> absl::StatusOr<at::Tensor> {
            at::Tensor out = at::empty({numel}, at::kFloat);
            for (size_t r = 0; r < shared->size(); ++r) {
              const int64_t begin = static_cast<int64_t>(r) * piece;
              const int64_t count = ZeroValidInPartition(numel, piece, static_cast<int>(r));
              RETURN_IF_ERROR(
                  ReadFlat((*shared)[r], offset, count, out.data_ptr<float>() + begin));
            }
            return out.view(shape);
          };
          add(name, std::move(z));
          offset += piece;
          return absl::OkStatus();
        }));
  }
  if (offset * world != flat_numel[0] * world) {
    return absl::InvalidArgumentError(absl::StrCat(
        "consumed ", offset * world, " numels out of ", flat_numel[0] * world,
        " - something is wrong (", folder, ": the partitions do not match param_shapes)"));
  }
  return absl::OkStatus();
}

// Every rank's fp32 partitions (the *_optim_states.pt files), with the stage and world size
// they agree on.
struct OptimStates {
  std::vector<RankPartitions> partitions;  // by rank
  int64_t world = 0;
  int64_t zero_stage = 0;
};

// One rank's optimizer file into `states`, checked against the files before it.
absl::Status ReadRankOptimState(const std::string& file, OptimStates& states) {
  ASSIGN_OR_RETURN(std::unique_ptr<LazyTorchSave> lazy, LazyTorchSave::Open(file));
  const IValue top = lazy->value();
  ASSIGN_OR_RETURN(IValue osd, ZeroEntry(top, "optimizer_state_dict", file));
  ASSIGN_OR_RETURN(IValue stage_v, ZeroEntry(osd, "zero_stage", file));
  ASSIGN_OR_RETURN(int64_t stage, ZeroIntOrMax(stage_v, "zero_stage", file));
  if (stage < 1 || stage > 3 || (states.zero_stage != 0 && stage != states.zero_stage)) {
    return absl::InvalidArgumentError(absl::StrCat(file, ": zero_stage ", stage));
  }
  states.zero_stage = stage;
  ASSIGN_OR_RETURN(IValue count_v, ZeroEntry(osd, "partition_count", file));
  ASSIGN_OR_RETURN(states.world, ZeroIntOrMax(count_v, "partition_count", file));
  const std::string groups_key =
      stage == 3 ? "fp32_flat_groups" : "single_partition_of_fp32_groups";
  ASSIGN_OR_RETURN(IValue groups, ZeroEntry(osd, groups_key, file));
  if (!groups.isList()) {
    return absl::InvalidArgumentError(absl::StrCat(file, ": ", groups_key, " is not a list"));
  }
  RankPartitions mine;
  for (const IValue& g : groups.toListRef()) {
    if (!g.isTensor() || g.toTensor().dim() != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat(file, ": ", groups_key, " holds something other than 1-D tensors"));
    }
    mine.groups.push_back(g.toTensor());
  }
  std::vector<RankPartitions>& partitions = states.partitions;
  if (!partitions.empty() && mine.groups.size() != partitions[0].groups.size()) {
    return absl::InvalidArgumentError(absl::StrCat(file, ": ", mine.groups.size(),
                                                   " parameter groups, the first file ",
                                                   partitions[0].groups.size()));
  }
  mine.file = std::move(lazy);
  partitions.push_back(std::move(mine));
  return absl::OkStatus();
}

absl::StatusOr<OptimStates> ReadOptimStates(const std::string& folder) {
  const std::vector<std::string> optim_files = ListZeroFiles(folder, kZeroOptimStatesSuffix);
  if (optim_files.empty()) {
    return absl::NotFoundError(
        absl::StrCat("can't find '*_optim_states.pt' files in directory '", folder, "'"));
  }
  OptimStates states;
  for (const std::string& name : optim_files) {
    RETURN_IF_ERROR(ReadRankOptimState(folder + "/" + name, states));
  }
  if (states.world != static_cast<int64_t>(optim_files.size())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Expected ", states.world, " of '*_optim_states.pt' under '", folder, "' but found ",
        optim_files.size(),
        " files. Possibly due to an overwrite of an old checkpoint, or a checkpoint didn't get "
        "saved by one or more processes."));
  }
  return states;
}

// Rank 0's model file (names, shapes, buffers) and the names of every rank's.
struct ModelStates {
  std::vector<std::string> files;  // every *_model_states.pt, rank order
  std::string path;                // the first
  std::unique_ptr<LazyTorchSave> file;
  IValue model, buffer_names, module, param_shapes, shared_params;
};

absl::StatusOr<ModelStates> ReadModelStates(const std::string& folder) {
  ModelStates m;
  m.files = ListZeroFiles(folder, kZeroModelStatesSuffix);
  if (m.files.empty()) {
    return absl::NotFoundError(absl::StrCat("no *_model_states.pt in ", folder));
  }
  m.path = folder + "/" + m.files[0];
  ASSIGN_OR_RETURN(m.file, LazyTorchSave::Open(m.path));
  m.model = m.file->value();
  ASSIGN_OR_RETURN(m.buffer_names, ZeroEntry(m.model, "buffer_names", m.path));
  ASSIGN_OR_RETURN(m.module, ZeroEntry(m.model, "module", m.path));
  ASSIGN_OR_RETURN(m.param_shapes, ZeroEntry(m.model, "param_shapes", m.path));
  ASSIGN_OR_RETURN(m.shared_params, ZeroEntry(m.model, "shared_params", m.path));
  if (!m.buffer_names.isList() || !m.module.isGenericDict() || !m.param_shapes.isList() ||
      !m.shared_params.isGenericDict()) {
    return absl::InvalidArgumentError(absl::StrCat(
        m.path, ": buffer_names, module, param_shapes or shared_params has the wrong type"));
  }
  return m;
}

// The module's buffers named in buffer_names, as float32.
absl::Status AddBuffers(const ModelStates& m, const AddFn& add) {
  std::vector<std::string> buffers;
  for (const IValue& b : m.buffer_names.toListRef()) {
    if (b.isString()) buffers.push_back(b.toStringRef());
  }
  for (const auto& entry : m.module.toGenericDict()) {
    if (!entry.key().isString() || !entry.value().isTensor()) continue;
    const std::string name = entry.key().toStringRef();
    if (std::find(buffers.begin(), buffers.end(), name) != buffers.end()) {
      ASSIGN_OR_RETURN(at::Tensor buffer, m.file->Materialize(entry.value().toTensor()),
                       absl::StrCat(m.path, ": buffer ", name));
      add(name, Read(buffer.to(at::kFloat)));
    }
  }
  return absl::OkStatus();
}

// The frozen_param_fragments of ranks 1.. (stage 3 splits each frozen parameter over every
// rank's model file), appended to `fragments` and `files`.
absl::Status ReadOtherFrozenFragments(const std::string& folder, const ModelStates& m,
                                      std::vector<c10::impl::GenericDict>& fragments,
                                      std::vector<std::unique_ptr<LazyTorchSave>>& files) {
  for (size_t r = 1; r < m.files.size(); ++r) {
    const std::string other = folder + "/" + m.files[r];
    ASSIGN_OR_RETURN(std::unique_ptr<LazyTorchSave> other_file, LazyTorchSave::Open(other));
    const IValue model = other_file->value();
    files.push_back(std::move(other_file));
    ASSIGN_OR_RETURN(IValue f, ZeroEntry(model, "frozen_param_fragments", other));
    if (!f.isGenericDict()) {
      return absl::InvalidArgumentError(
          absl::StrCat(other, ": frozen_param_fragments is not a dict"));
    }
    fragments.push_back(f.toGenericDict());
  }
  return absl::OkStatus();
}

// Frozen parameters, as stored: stage 3 concatenates every rank's fragment of each; stages
// 1-2 store the whole in rank 0's file. Takes over m.file.
absl::Status AddFrozenParameters(const std::string& folder, ModelStates& m, int64_t zero_stage,
                                 const AddFn& add) {
  const auto model_dict = m.model.toGenericDict();
  auto frozen_shapes = model_dict.find(IValue("frozen_param_shapes"));
  auto frozen_fragments = model_dict.find(IValue("frozen_param_fragments"));
  if (frozen_shapes == model_dict.end() || !frozen_shapes->value().isGenericDict() ||
      frozen_shapes->value().toGenericDict().empty()) {
    return absl::OkStatus();
  }
  if (frozen_fragments == model_dict.end() || !frozen_fragments->value().isGenericDict()) {
    return absl::InvalidArgumentError(
        absl::StrCat(m.path, ": frozen_param_shapes without frozen_param_fragments"));
  }
  std::vector<c10::impl::GenericDict> fragments = {frozen_fragments->value().toGenericDict()};
  std::vector<std::unique_ptr<LazyTorchSave>> fragment_files;
  fragment_files.push_back(std::move(m.file));
  if (zero_stage == 3)
    RETURN_IF_ERROR(ReadOtherFrozenFragments(folder, m, fragments, fragment_files));
  for (const auto& entry : frozen_shapes->value().toGenericDict()) {
    const std::string name = entry.key().toStringRef();
    std::vector<at::Tensor> pieces;
    for (size_t f = 0; f < fragments.size(); ++f) {
      auto it = fragments[f].find(entry.key());
      if (it == fragments[f].end() || !it->value().isTensor()) {
        return absl::InvalidArgumentError(
            absl::StrCat(m.path, ": frozen parameter '", name, "' has no fragment"));
      }
      ASSIGN_OR_RETURN(at::Tensor piece, fragment_files[f]->Materialize(it->value().toTensor()),
                       absl::StrCat(m.path, ": frozen parameter ", name));
      pieces.push_back(piece);
    }
    if (zero_stage != 3) {
      add(name, Read(pieces[0]));
      continue;
    }
    std::vector<int64_t> shape;
    ASSIGN_OR_RETURN(const int64_t numel,
                     Numel(entry.value(), absl::StrCat(m.path, ": ", name), &shape));
    add(name, Read(at::cat(pieces).narrow(0, 0, numel).view(shape)));
  }
  return absl::OkStatus();
}

// The consolidated tensors in the order they were added.
struct Consolidated {
  std::vector<ZeroTensor> out;
  std::set<std::string> names;
  AddFn Adder() {
    return [this](const std::string& name, ZeroTensor t) {
      t.name = name;
      names.insert(name);
      out.push_back(std::move(t));
    };
  }
};

// shared_params: each alias gets its owner's tensor.
void AddSharedParameters(const IValue& shared_params, Consolidated& c) {
  std::vector<ZeroTensor> aliases;
  for (const auto& entry : shared_params.toGenericDict()) {
    if (!entry.key().isString() || !entry.value().isString()) continue;
    const std::string owner = entry.value().toStringRef();
    for (const ZeroTensor& t : c.out) {
      if (t.name != owner) continue;
      ZeroTensor alias = t;
      alias.name = entry.key().toStringRef();
      alias.same_as = owner;
      aliases.push_back(std::move(alias));
      break;
    }
  }
  for (ZeroTensor& a : aliases) c.out.push_back(std::move(a));
}

// dir/<tag>, the tag from options or from dir/latest; NotFound when it is not a directory.
absl::StatusOr<std::string> CheckpointFolder(const std::string& dir,
                                             const ZeroReadOptions& options) {
  std::string tag;
  if (options.tag) {
    tag = *options.tag;
  } else {
    ASSIGN_OR_RETURN(tag, ReadTag(dir));
  }
  return ZeroTagFolder(dir, tag);
}

// Everything but the folder check, which ReadZeroCheckpoint's error context needs first.
absl::StatusOr<LazyZeroCheckpoint> OpenZeroFolder(const std::string& folder,
                                                  const ZeroReadOptions& options) {
  ASSIGN_OR_RETURN(OptimStates states, ReadOptimStates(folder));
  const Partitions partitions =
      std::make_shared<const std::vector<RankPartitions>>(std::move(states.partitions));
  ASSIGN_OR_RETURN(ModelStates m, ReadModelStates(folder));
  Consolidated c;
  const AddFn add = c.Adder();
  RETURN_IF_ERROR(AddBuffers(m, add));
  const auto model_dict = m.model.toGenericDict();
  if (!options.exclude_frozen_parameters) {
    RETURN_IF_ERROR(AddFrozenParameters(folder, m, states.zero_stage, add));
  }
  const auto groups = m.param_shapes.toListRef();
  if (states.zero_stage == 3) {
    RETURN_IF_ERROR(AddZero3Parameters(groups, partitions, states.world, m.path, folder, add));
  } else {
    RETURN_IF_ERROR(AddPartitionedGroups(groups, partitions, states.world, m.path, folder, add));
  }
  AddSharedParameters(m.shared_params, c);
  LazyZeroCheckpoint result;
  result.tensors = std::move(c.out);
  result.zero_stage = states.zero_stage;
  result.world_size = states.world;
  result.folder = folder;
  auto version = model_dict.find(IValue("ds_version"));
  if (version != model_dict.end() && version->value().isString()) {
    result.ds_version = version->value().toStringRef();
  }
  return result;
}

}  // namespace

absl::StatusOr<NamedTensors> ConsolidateZeroCheckpoint(const std::string& dir,
                                                       const std::optional<std::string>& tag) {
  ZeroReadOptions options;
  options.tag = tag;
  ASSIGN_OR_RETURN(ZeroCheckpoint checkpoint, ReadZeroCheckpoint(dir, options));
  return std::move(checkpoint.state);
}

absl::StatusOr<NamedTensors> GetFp32StateDictFromZeroCheckpoint(
    const std::string& dir, const std::optional<std::string>& tag, bool exclude_frozen_parameters) {
  ZeroReadOptions options;
  options.tag = tag;
  options.exclude_frozen_parameters = exclude_frozen_parameters;
  ASSIGN_OR_RETURN(ZeroCheckpoint checkpoint, ReadZeroCheckpoint(dir, options));
  return std::move(checkpoint.state);
}

absl::StatusOr<LoadStateDictResult> LoadStateDictFromZeroCheckpoint(
    torch::nn::Module& model, const std::string& dir, const std::optional<std::string>& tag) {
  ASSIGN_OR_RETURN(NamedTensors state, GetFp32StateDictFromZeroCheckpoint(dir, tag));
  try {
    model.to(at::kCPU);
  } catch (const std::exception& e) {
    return base::TorchErrorToStatus(e, absl::StatusCode::kInternal, "moving the model to the CPU");
  }
  LoadStateDictOptions options;
  options.strict = false;
  return LoadStateDict(model, state, options);
}

absl::StatusOr<LazyZeroCheckpoint> OpenZeroCheckpoint(const std::string& dir,
                                                      const ZeroReadOptions& options) {
  ASSIGN_OR_RETURN(const std::string folder, CheckpointFolder(dir, options));
  try {
    return OpenZeroFolder(folder, options);
  } catch (const std::exception& e) {
    return base::TorchErrorToStatus(e, absl::StatusCode::kInvalidArgument,
                                    absl::StrCat("reading the ZeRO checkpoint ", folder));
  }
}

absl::StatusOr<at::Tensor> ReadZeroTensor(const ZeroTensor& t, const std::string& folder) {
  try {
    return t.read();
  } catch (const std::exception& e) {
    return base::TorchErrorToStatus(e, absl::StatusCode::kInvalidArgument,
                                    absl::StrCat("reading ", t.name, " from ", folder));
  }
}

absl::StatusOr<NamedTensors> ReadZeroTensors(const LazyZeroCheckpoint& lazy) {
  NamedTensors out;
  std::map<std::string, at::Tensor> by_name;
  for (const ZeroTensor& t : lazy.tensors) {
    auto owner = by_name.find(t.same_as);
    at::Tensor value;
    if (!t.same_as.empty() && owner != by_name.end()) {
      value = owner->second;  // a shared parameter: its owner's tensor
    } else {
      ASSIGN_OR_RETURN(value, ReadZeroTensor(t, lazy.folder));
    }
    by_name[t.name] = value;
    out.emplace_back(t.name, value);
  }
  return out;
}

absl::StatusOr<ZeroCheckpoint> ReadZeroCheckpoint(const std::string& dir,
                                                  const ZeroReadOptions& options) {
  ASSIGN_OR_RETURN(LazyZeroCheckpoint lazy, OpenZeroCheckpoint(dir, options));
  ZeroCheckpoint result;
  ASSIGN_OR_RETURN(result.state, ReadZeroTensors(lazy));
  result.zero_stage = lazy.zero_stage;
  result.world_size = lazy.world_size;
  result.ds_version = lazy.ds_version;
  result.folder = lazy.folder;
  return result;
}

}  // namespace loom::sharding
