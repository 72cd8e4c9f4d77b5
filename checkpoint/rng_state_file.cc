#include "checkpoint/rng_state_file.h"

#include <ATen/core/Dict.h>
#include <ATen/core/List.h>
#include <ATen/core/ivalue.h>

#include <cstring>
#include <exception>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/file_util.h"
#include "base/status_macros.h"
#include "base/torch_status.h"
#include "checkpoint/python_unpickler.h"
#include "checkpoint/torch_pickle.h"
#include "rng/python_rng.h"

namespace loom::checkpoint {
namespace {

using rng::kMt19937Words;
using rng::Mt19937State;
using rng::NumpyRandomState;
using rng::PythonRandomState;
using rng::RngState;

constexpr char kFormatKey[] = "format";
constexpr char kVersionKey[] = "version";
constexpr char kCpuKey[] = "cpu";
constexpr char kCudaKey[] = "cuda";
constexpr char kHostKey[] = "loom_host";
constexpr char kBaseSeedKey[] = "loom_host_base_seed";
constexpr char kPythonKey[] = "python";
constexpr char kNumpyKey[] = "numpy";
// accelerate 0.27 `save_accelerator_state`'s names for the same states.
constexpr char kAccelerateRandomKey[] = "random_state";
constexpr char kAccelerateNumpyKey[] = "numpy_random_seed";
constexpr char kAccelerateCpuKey[] = "torch_manual_seed";
constexpr char kAccelerateCudaKey[] = "torch_cuda_manual_seed";

// The 624 words of an MT19937 state as Python ints.
std::vector<int64_t> Words(const Mt19937State& s) { return {s.key.begin(), s.key.end()}; }

// random.getstate(): (3, (w0, ..., w623, pos), gauss_next).
c10::IValue PythonEntry(const PythonRandomState& s) {
  std::vector<c10::IValue> internal;
  internal.reserve(kMt19937Words + 1);
  for (int64_t w : Words(s.mt)) internal.emplace_back(w);
  internal.emplace_back(int64_t{s.mt.pos});
  return c10::ivalue::Tuple::create({c10::IValue(int64_t{3}),
                                     c10::ivalue::Tuple::create(std::move(internal)),
                                     s.gauss_next ? c10::IValue(*s.gauss_next) : c10::IValue()});
}

// np.random.get_state(), with the key as a list instead of an ndarray (np.random.set_state
// accepts both): ('MT19937', [w0, ..., w623], pos, has_gauss, cached_gaussian).
c10::IValue NumpyEntry(const NumpyRandomState& s) {
  return c10::ivalue::Tuple::create(
      {c10::IValue(std::string("MT19937")), c10::IValue(c10::List<int64_t>(Words(s.mt))),
       c10::IValue(int64_t{s.mt.pos}), c10::IValue(int64_t{s.has_gauss}),
       c10::IValue(s.cached_gaussian)});
}

// The Python states to write: as recorded, else as HF's set_seed(host_base_seed) leaves them.
std::optional<PythonRandomState> PythonToWrite(const RngState& state) {
  if (state.python) return state.python;
  if (!state.host_base_seed) return std::nullopt;
  return PythonRandomState{rng::PythonRandomStateAfterSeed(*state.host_base_seed), std::nullopt};
}
std::optional<NumpyRandomState> NumpyToWrite(const RngState& state) {
  if (state.numpy) return state.numpy;
  if (!state.host_base_seed) return std::nullopt;
  std::optional<Mt19937State> mt = rng::NumpyStateAfterSeed(*state.host_base_seed);
  if (!mt) return std::nullopt;
  return NumpyRandomState{*mt, 0, 0.0};
}

absl::Status BadKey(const std::string& path, absl::string_view key, absl::string_view problem) {
  return absl::InvalidArgumentError(
      absl::StrCat("rng state file ", path, ": key \"", key, "\" ", problem));
}

// A generator state must be a defined 1-D uint8 CPU tensor (torch.get_rng_state() format).
absl::Status CheckStateTensor(const at::Tensor& t, const std::string& path, absl::string_view key) {
  if (!t.defined()) return BadKey(path, key, "holds an undefined tensor");
  if (t.scalar_type() != at::kByte || t.dim() != 1 || !t.device().is_cpu()) {
    return BadKey(
        path, key,
        absl::StrCat("must be a 1-D uint8 CPU tensor, got ", c10::toString(t.scalar_type()),
                     " with ", t.dim(), " dims on ", t.device().str()));
  }
  return absl::OkStatus();
}

absl::StatusOr<at::Tensor> StateTensor(const c10::IValue& v, const std::string& path,
                                       absl::string_view key) {
  if (!v.isTensor()) {
    return BadKey(path, key, absl::StrCat("must be a uint8 tensor, got ", v.tagKind()));
  }
  at::Tensor t = v.toTensor();
  RETURN_IF_ERROR(CheckStateTensor(t, path, key));
  return t;
}

absl::StatusOr<std::map<std::string, c10::IValue>> StringKeyedDict(const c10::IValue& v,
                                                                   const std::string& path,
                                                                   absl::string_view what) {
  if (!v.isGenericDict()) {
    return absl::InvalidArgumentError(
        absl::StrCat("rng state file ", path, ": ", what, " must be a dict, got ", v.tagKind()));
  }
  std::map<std::string, c10::IValue> out;
  for (const auto& entry : v.toGenericDict()) {
    if (!entry.key().isString()) {
      return absl::InvalidArgumentError(absl::StrCat("rng state file ", path, ": ", what,
                                                     " has a non-string key of type ",
                                                     entry.key().tagKind()));
    }
    out.emplace(entry.key().toStringRef(), entry.value());
  }
  return out;
}

using Entries = std::map<std::string, c10::IValue>;

const c10::IValue* Find(const Entries& entries, const std::string& key) {
  auto it = entries.find(key);
  return it == entries.end() ? nullptr : &it->second;
}

// "cuda": a list of states (get_rng_state_all()) or one tensor (HF's non-distributed layout,
// device 0).
absl::Status DecodeCuda(const c10::IValue& cuda, const std::string& path, const std::string& key,
                        RngState* state) {
  if (cuda.isTensor()) {
    ASSIGN_OR_RETURN(at::Tensor t, StateTensor(cuda, path, key));
    state->cuda.push_back(std::move(t));
    return absl::OkStatus();
  }
  if (!cuda.isList()) {
    return BadKey(path, key, absl::StrCat("must be a list of uint8 tensors, got ", cuda.tagKind()));
  }
  const c10::ArrayRef<c10::IValue> items = cuda.toListRef();
  for (size_t i = 0; i < items.size(); ++i) {
    ASSIGN_OR_RETURN(at::Tensor t, StateTensor(items[i], path, absl::StrCat(key, "[", i, "]")));
    state->cuda.push_back(std::move(t));
  }
  return absl::OkStatus();
}

absl::Status DecodeLoomHost(const Entries& entries, const std::string& path, RngState* state) {
  if (const c10::IValue* host = Find(entries, kHostKey)) {
    ASSIGN_OR_RETURN(auto host_entries,
                     StringKeyedDict(*host, path, absl::StrCat("key \"", kHostKey, "\"")));
    for (auto& [name, value] : host_entries) {
      if (!value.isString()) {
        return BadKey(path, absl::StrCat(kHostKey, "[\"", name, "\"]"),
                      absl::StrCat("must be a string, got ", value.tagKind()));
      }
      state->host.emplace(name, value.toStringRef());
    }
  }
  if (const c10::IValue* seed = Find(entries, kBaseSeedKey)) {
    if (!seed->isInt()) {
      return BadKey(path, kBaseSeedKey, absl::StrCat("must be an int, got ", seed->tagKind()));
    }
    state->host_base_seed = static_cast<uint64_t>(seed->toInt());
  }
  return absl::OkStatus();
}

// loom's own layout: "format" and "version" checked, "python" / "numpy" ignored (derived from
// loom_host_base_seed when written).
absl::StatusOr<RngState> DecodeLoom(const Entries& entries, const std::string& path) {
  const c10::IValue& format = *Find(entries, kFormatKey);
  if (!format.isString() || format.toStringRef() != kRngStateFormat) {
    return BadKey(path, kFormatKey,
                  absl::StrCat("must be the string \"", kRngStateFormat, "\", got ",
                               format.isString() ? "\"" + format.toStringRef() + "\""
                                                 : std::string(format.tagKind())));
  }
  const c10::IValue* version = Find(entries, kVersionKey);
  if (version == nullptr) return BadKey(path, kVersionKey, "is missing");
  if (!version->isInt()) {
    return BadKey(path, kVersionKey, absl::StrCat("must be an int, got ", version->tagKind()));
  }
  if (version->toInt() != kRngStateVersion) {
    return BadKey(
        path, kVersionKey,
        absl::StrCat("is ", version->toInt(), " but this build reads version ", kRngStateVersion));
  }
  RngState state;
  const c10::IValue* cpu = Find(entries, kCpuKey);
  if (cpu == nullptr) return BadKey(path, kCpuKey, "is missing");
  ASSIGN_OR_RETURN(state.cpu, StateTensor(*cpu, path, kCpuKey));
  if (const c10::IValue* cuda = Find(entries, kCudaKey)) {
    RETURN_IF_ERROR(DecodeCuda(*cuda, path, kCudaKey, &state));
  }
  RETURN_IF_ERROR(DecodeLoomHost(entries, path, &state));
  return state;
}

// A Python int that must be an MT19937 word (0 <= w < 2^32) or a position (0 <= pos <= 624).
absl::StatusOr<int64_t> IntIn(const c10::IValue& v, int64_t end, const std::string& path,
                              const std::string& key) {
  if (!v.isInt() || v.toInt() < 0 || v.toInt() >= end) {
    return BadKey(path, key,
                  absl::StrCat("must hold an int in [0, ", end, "), got ",
                               v.isInt() ? absl::StrCat(v.toInt()) : v.tagKind()));
  }
  return v.toInt();
}

// random.getstate(): (3, (624 words, pos), gauss_next None or float).
absl::StatusOr<PythonRandomState> DecodePythonRandom(const c10::IValue& v, const std::string& path,
                                                     const std::string& key) {
  if (!v.isTuple() || v.toTupleRef().elements().size() != 3) {
    return BadKey(path, key, "must be random.getstate()'s (3, (625 ints), gauss_next)");
  }
  const auto& e = v.toTupleRef().elements();
  if (!e[0].isInt() || e[0].toInt() != 3) {
    return BadKey(path, key, "must be a version-3 random.getstate() (Python 3)");
  }
  if (!e[1].isTuple() || e[1].toTupleRef().elements().size() != kMt19937Words + 1) {
    return BadKey(path, key, absl::StrCat("must hold a tuple of ", kMt19937Words + 1, " ints"));
  }
  const auto& internal = e[1].toTupleRef().elements();
  PythonRandomState out;
  for (int i = 0; i < kMt19937Words; ++i) {
    ASSIGN_OR_RETURN(int64_t w, IntIn(internal[i], int64_t{1} << 32, path, key));
    out.mt.key[i] = static_cast<uint32_t>(w);
  }
  ASSIGN_OR_RETURN(int64_t pos, IntIn(internal[kMt19937Words], kMt19937Words + 1, path, key));
  out.mt.pos = static_cast<int>(pos);
  if (e[2].isDouble()) {
    out.gauss_next = e[2].toDouble();
  } else if (!e[2].isNone()) {
    return BadKey(path, key, absl::StrCat("has a gauss_next of type ", e[2].tagKind()));
  }
  return out;
}

// np.random.get_state()'s key: a uint32 ndarray of 624 (python_unpickler.h's numpy dict) or,
// as loom writes it, a list of 624 ints.
absl::Status DecodeNumpyKey(const c10::IValue& v, const std::string& path, const std::string& key,
                            Mt19937State* mt) {
  if (v.isList() && v.toListRef().size() == kMt19937Words) {
    for (int i = 0; i < kMt19937Words; ++i) {
      ASSIGN_OR_RETURN(int64_t w, IntIn(v.toListRef()[i], int64_t{1} << 32, path, key));
      mt->key[i] = static_cast<uint32_t>(w);
    }
    return absl::OkStatus();
  }
  if (v.isGenericDict()) {
    const c10::impl::GenericDict array = v.toGenericDict();
    auto field = [&](const char* name) {
      auto it = array.find(c10::IValue(name));
      return it == array.end() ? c10::IValue() : it->value();
    };
    const c10::IValue dtype = field("dtype"), data = field("data");
    // Little-endian uint32 ('=' is the native order, little on every machine loom runs on).
    if (dtype.isString() && (dtype.toStringRef() == "<u4" || dtype.toStringRef() == "=u4") &&
        data.isString() && data.toStringRef().size() == kMt19937Words * 4) {
      std::memcpy(mt->key.data(), data.toStringRef().data(), kMt19937Words * 4);
      return absl::OkStatus();
    }
  }
  return BadKey(path, key,
                absl::StrCat("must hold a key of ", kMt19937Words, " uint32 (an ndarray or list)"));
}

// np.random.get_state(): ('MT19937', key, pos[, has_gauss, cached_gaussian]).
absl::StatusOr<NumpyRandomState> DecodeNumpyRandom(const c10::IValue& v, const std::string& path,
                                                   const std::string& key) {
  const size_t n = v.isTuple() ? v.toTupleRef().elements().size() : 0;
  if (n != 3 && n != 5) {
    return BadKey(path, key, "must be np.random.get_state()'s ('MT19937', key, pos, ...)");
  }
  const auto& e = v.toTupleRef().elements();
  if (!e[0].isString() || e[0].toStringRef() != "MT19937") {
    return BadKey(path, key, "must be the state of numpy's 'MT19937'");
  }
  NumpyRandomState out;
  RETURN_IF_ERROR(DecodeNumpyKey(e[1], path, key, &out.mt));
  ASSIGN_OR_RETURN(int64_t pos, IntIn(e[2], kMt19937Words + 1, path, key));
  out.mt.pos = static_cast<int>(pos);
  if (n == 5) {
    if (!e[3].isInt() || !(e[4].isDouble() || e[4].isInt())) {
      return BadKey(path, key, "must have an int has_gauss and a float cached_gaussian");
    }
    out.has_gauss = e[3].toInt() != 0 ? 1 : 0;
    out.cached_gaussian = e[4].isDouble() ? e[4].toDouble() : static_cast<double>(e[4].toInt());
  }
  return out;
}

// The key names of a layout Python writes.
struct PythonLayout {
  const char* python;
  const char* numpy;
  const char* cpu;
  const char* cuda;
};
// transformers 4.38 `Trainer._save_rng_state`.
constexpr PythonLayout kHfLayout = {kPythonKey, kNumpyKey, kCpuKey, kCudaKey};
// accelerate 0.27 `save_accelerator_state`.
constexpr PythonLayout kAccelerateLayout = {kAccelerateRandomKey, kAccelerateNumpyKey,
                                            kAccelerateCpuKey, kAccelerateCudaKey};

bool HasAll(const Entries& entries, const PythonLayout& layout) {
  return Find(entries, layout.python) && Find(entries, layout.numpy) && Find(entries, layout.cpu);
}

// A file Python wrote: every key its loader reads must be there; others (xla, npu, ...) are
// ignored. The host generators stay empty: Python has none of loom's.
absl::StatusOr<RngState> DecodePythonLayout(const Entries& entries, const std::string& path,
                                            const PythonLayout& layout) {
  RngState state;
  ASSIGN_OR_RETURN(PythonRandomState python,
                   DecodePythonRandom(*Find(entries, layout.python), path, layout.python));
  state.python = python;
  ASSIGN_OR_RETURN(NumpyRandomState numpy,
                   DecodeNumpyRandom(*Find(entries, layout.numpy), path, layout.numpy));
  state.numpy = numpy;
  ASSIGN_OR_RETURN(state.cpu, StateTensor(*Find(entries, layout.cpu), path, layout.cpu));
  if (const c10::IValue* cuda = Find(entries, layout.cuda)) {
    RETURN_IF_ERROR(DecodeCuda(*cuda, path, layout.cuda, &state));
  }
  return state;
}

absl::StatusOr<RngState> Decode(const c10::IValue& root, const std::string& path) {
  ASSIGN_OR_RETURN(const Entries entries, StringKeyedDict(root, path, "the top level"));
  if (Find(entries, kFormatKey) != nullptr) return DecodeLoom(entries, path);
  if (HasAll(entries, kHfLayout)) return DecodePythonLayout(entries, path, kHfLayout);
  if (HasAll(entries, kAccelerateLayout)) {
    return DecodePythonLayout(entries, path, kAccelerateLayout);
  }
  return BadKey(path, kFormatKey,
                "is missing (not a loom rng state), and the file lacks the keys of HF Trainer's "
                "rng_state.pth (python, numpy, cpu) and of accelerate's random_states_<i>.pkl "
                "(random_state, numpy_random_seed, torch_manual_seed)");
}

c10::List<at::Tensor> CudaList(const RngState& state) {
  c10::List<at::Tensor> cuda;
  for (const at::Tensor& t : state.cuda) cuda.push_back(t.contiguous());
  return cuda;
}

// The dict SaveRngState pickles; see the header comment for the keys.
c10::impl::GenericDict FileDict(const RngState& state, const RngFileOptions& options) {
  c10::impl::GenericDict dict(c10::StringType::get(), c10::AnyType::get());
  dict.insert(kFormatKey, std::string(kRngStateFormat));
  dict.insert(kVersionKey, kRngStateVersion);
  dict.insert(kCpuKey, state.cpu.contiguous());
  if (!state.cuda.empty()) dict.insert(kCudaKey, CudaList(state));
  c10::Dict<std::string, std::string> host;
  for (const auto& [name, text] : state.host) host.insert(name, text);
  dict.insert(kHostKey, std::move(host));
  if (state.host_base_seed) {
    dict.insert(kBaseSeedKey, static_cast<int64_t>(*state.host_base_seed));
  }
  const std::optional<PythonRandomState> python = PythonToWrite(state);
  const std::optional<NumpyRandomState> numpy = NumpyToWrite(state);
  if (python) dict.insert(kPythonKey, PythonEntry(*python));
  if (numpy) dict.insert(kNumpyKey, NumpyEntry(*numpy));
  if (options.accelerate_keys) {
    // Every key accelerate 0.27's save_accelerator_state writes on a machine without XPU or
    // TPU; torch_cuda_manual_seed is get_rng_state_all(), an empty list without CUDA.
    if (python) dict.insert(kAccelerateRandomKey, PythonEntry(*python));
    if (numpy) dict.insert(kAccelerateNumpyKey, NumpyEntry(*numpy));
    dict.insert(kAccelerateCpuKey, state.cpu.contiguous());
    dict.insert(kAccelerateCudaKey, CudaList(state));
  }
  return dict;
}

}  // namespace

absl::Status SaveRngState(const RngState& state, const std::string& path) {
  return SaveRngState(state, path, RngFileOptions());
}

absl::Status SaveRngState(const RngState& state, const std::string& path,
                          const RngFileOptions& options) {
  RETURN_IF_ERROR(CheckStateTensor(state.cpu, path, kCpuKey));
  for (size_t i = 0; i < state.cuda.size(); ++i) {
    RETURN_IF_ERROR(CheckStateTensor(state.cuda[i], path, absl::StrCat(kCudaKey, "[", i, "]")));
  }
  absl::StatusOr<std::vector<char>> bytes = TorchSaveBytes(c10::IValue(FileDict(state, options)));
  if (!bytes.ok()) {
    return absl::InternalError(absl::StrCat("rng state file ", path, ": ", bytes.status().message()));
  }
  return base::WriteFileAtomically(path, absl::string_view(bytes->data(), bytes->size()));
}

absl::StatusOr<RngState> LoadRngState(const std::string& path) {
  ASSIGN_OR_RETURN(const std::string bytes, base::ReadFile(path));
  absl::StatusOr<c10::IValue> root =
      UnpickleTorchSave(bytes, UnpickleOptions{.numpy_arrays = true});
  if (!root.ok()) {
    return absl::DataLossError(absl::StrCat(
        "rng state file ", path, ": not a readable torch pickle: ", root.status().message()));
  }
  return Decode(*root, path);
}

std::string RngStateFileName(int process_index, int world_size) {
  if (world_size <= 1) return "rng_state.pth";
  return absl::StrCat("rng_state_", process_index, ".pth");
}

}  // namespace loom::checkpoint
