#include "rng/rng_state_file.h"

#include <ATen/core/Dict.h>
#include <ATen/core/List.h>
#include <ATen/core/ivalue.h>
#include <torch/serialize.h>

#include <exception>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/file_util.h"
#include "base/status_macros.h"
#include "base/torch_status.h"
#include "rng/python_rng.h"

namespace loom::rng {
namespace {

constexpr char kFormatKey[] = "format";
constexpr char kVersionKey[] = "version";
constexpr char kCpuKey[] = "cpu";
constexpr char kCudaKey[] = "cuda";
constexpr char kHostKey[] = "loom_host";
constexpr char kBaseSeedKey[] = "loom_host_base_seed";
constexpr char kPythonKey[] = "python";
constexpr char kNumpyKey[] = "numpy";

// The 624 words of an MT19937 state as Python ints.
std::vector<int64_t> Words(const Mt19937State& s) { return {s.key.begin(), s.key.end()}; }

// random.getstate() after random.seed(seed): (3, (w0, ..., w623, pos), None).
c10::IValue PythonEntry(uint64_t seed) {
  const Mt19937State s = PythonRandomStateAfterSeed(seed);
  std::vector<c10::IValue> internal;
  internal.reserve(kMt19937Words + 1);
  for (int64_t w : Words(s)) internal.emplace_back(w);
  internal.emplace_back(int64_t{s.pos});
  return c10::ivalue::Tuple::create(
      {c10::IValue(int64_t{3}), c10::ivalue::Tuple::create(std::move(internal)), c10::IValue()});
}

// np.random.get_state() after np.random.seed(seed), with the key as a list instead of an
// ndarray (np.random.set_state accepts both): ('MT19937', [w0, ..., w623], pos, 0, 0.0).
c10::IValue NumpyEntry(const Mt19937State& s) {
  return c10::ivalue::Tuple::create(
      {c10::IValue(std::string("MT19937")), c10::IValue(c10::List<int64_t>(Words(s))),
       c10::IValue(int64_t{s.pos}), c10::IValue(int64_t{0}), c10::IValue(0.0)});
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

absl::StatusOr<RngState> Decode(const c10::IValue& root, const std::string& path) {
  ASSIGN_OR_RETURN(auto entries, StringKeyedDict(root, path, "the top level"));
  auto find = [&](const char* key) -> const c10::IValue* {
    auto it = entries.find(key);
    return it == entries.end() ? nullptr : &it->second;
  };

  const c10::IValue* format = find(kFormatKey);
  if (format == nullptr) return BadKey(path, kFormatKey, "is missing (not a loom rng state)");
  if (!format->isString() || format->toStringRef() != kRngStateFormat) {
    return BadKey(path, kFormatKey,
                  absl::StrCat("must be the string \"", kRngStateFormat, "\", got ",
                               format->isString() ? "\"" + format->toStringRef() + "\""
                                                  : std::string(format->tagKind())));
  }
  const c10::IValue* version = find(kVersionKey);
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
  const c10::IValue* cpu = find(kCpuKey);
  if (cpu == nullptr) return BadKey(path, kCpuKey, "is missing");
  ASSIGN_OR_RETURN(state.cpu, StateTensor(*cpu, path, kCpuKey));

  if (const c10::IValue* cuda = find(kCudaKey)) {
    if (cuda->isTensor()) {  // HF's non-distributed layout: one device's state.
      ASSIGN_OR_RETURN(at::Tensor t, StateTensor(*cuda, path, kCudaKey));
      state.cuda.push_back(std::move(t));
    } else if (cuda->isList()) {
      const c10::ArrayRef<c10::IValue> items = cuda->toListRef();
      for (size_t i = 0; i < items.size(); ++i) {
        ASSIGN_OR_RETURN(at::Tensor t,
                         StateTensor(items[i], path, absl::StrCat(kCudaKey, "[", i, "]")));
        state.cuda.push_back(std::move(t));
      }
    } else {
      return BadKey(path, kCudaKey,
                    absl::StrCat("must be a list of uint8 tensors, got ", cuda->tagKind()));
    }
  }

  if (const c10::IValue* host = find(kHostKey)) {
    ASSIGN_OR_RETURN(auto host_entries,
                     StringKeyedDict(*host, path, absl::StrCat("key \"", kHostKey, "\"")));
    for (auto& [name, value] : host_entries) {
      if (!value.isString()) {
        return BadKey(path, absl::StrCat(kHostKey, "[\"", name, "\"]"),
                      absl::StrCat("must be a string, got ", value.tagKind()));
      }
      state.host.emplace(name, value.toStringRef());
    }
  }

  if (const c10::IValue* seed = find(kBaseSeedKey)) {
    if (!seed->isInt()) {
      return BadKey(path, kBaseSeedKey, absl::StrCat("must be an int, got ", seed->tagKind()));
    }
    state.host_base_seed = static_cast<uint64_t>(seed->toInt());
  }
  return state;
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
  std::vector<char> bytes;
  try {
    c10::impl::GenericDict dict(c10::StringType::get(), c10::AnyType::get());
    dict.insert(kFormatKey, std::string(kRngStateFormat));
    dict.insert(kVersionKey, kRngStateVersion);
    dict.insert(kCpuKey, state.cpu.contiguous());
    if (!state.cuda.empty()) {
      c10::List<at::Tensor> cuda;
      for (const at::Tensor& t : state.cuda) cuda.push_back(t.contiguous());
      dict.insert(kCudaKey, std::move(cuda));
    }
    c10::Dict<std::string, std::string> host;
    for (const auto& [name, text] : state.host) host.insert(name, text);
    dict.insert(kHostKey, std::move(host));
    if (state.host_base_seed.has_value()) {
      const uint64_t seed = *state.host_base_seed;
      dict.insert(kBaseSeedKey, static_cast<int64_t>(seed));
      dict.insert(kPythonKey, PythonEntry(seed));
      if (std::optional<Mt19937State> numpy = NumpyStateAfterSeed(seed)) {
        dict.insert(kNumpyKey, NumpyEntry(*numpy));
        if (options.accelerate_keys) dict.insert("numpy_random_seed", NumpyEntry(*numpy));
      }
      if (options.accelerate_keys) dict.insert("random_state", PythonEntry(seed));
    }
    if (options.accelerate_keys) {
      // accelerate's random_states_<i>.pkl names for the same states.
      dict.insert("torch_manual_seed", state.cpu.contiguous());
      if (!state.cuda.empty()) {
        c10::List<at::Tensor> cuda;
        for (const at::Tensor& t : state.cuda) cuda.push_back(t.contiguous());
        dict.insert("torch_cuda_manual_seed", std::move(cuda));
      }
    }
    bytes = torch::pickle_save(c10::IValue(std::move(dict)));
  } catch (const std::exception& e) {
    return base::TorchErrorToStatus(e, absl::StatusCode::kInternal,
                                    absl::StrCat("rng state file ", path, ": pickling failed"));
  }
  return base::WriteFileAtomically(path, absl::string_view(bytes.data(), bytes.size()));
}

absl::StatusOr<RngState> LoadRngState(const std::string& path) {
  ASSIGN_OR_RETURN(const std::string bytes, base::ReadFile(path));
  c10::IValue root;
  try {
    root = torch::pickle_load(std::vector<char>(bytes.begin(), bytes.end()));
  } catch (const std::exception& e) {
    return base::TorchErrorToStatus(
        e, absl::StatusCode::kDataLoss,
        absl::StrCat("rng state file ", path, ": not a readable torch pickle"));
  }
  return Decode(root, path);
}

std::string RngStateFileName(int process_index, int world_size) {
  if (world_size <= 1) return "rng_state.pth";
  return absl::StrCat("rng_state_", process_index, ".pth");
}

}  // namespace loom::rng
