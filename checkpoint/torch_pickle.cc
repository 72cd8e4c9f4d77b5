#include "checkpoint/torch_pickle.h"

#include <torch/csrc/jit/serialization/pickle.h>

#include <unordered_set>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/file_util.h"
#include "base/status_macros.h"
#include "base/torch_status.h"

namespace loom::checkpoint {

absl::Status SavePickle(const std::string& path, const c10::IValue& value) {
  std::vector<char> bytes;
  try {
    bytes = torch::jit::pickle_save(value);
  } catch (const std::exception& e) {
    return base::TorchErrorToStatus(e, absl::StatusCode::kInvalidArgument,
                                    absl::StrCat("pickling the value for ", path));
  }
  return base::WriteFileAtomically(path, absl::string_view(bytes.data(), bytes.size()));
}

absl::StatusOr<c10::IValue> LoadPickle(const std::string& path) {
  ASSIGN_OR_RETURN(const std::string bytes, base::ReadFile(path));
  try {
    return torch::jit::pickle_load(std::vector<char>(bytes.begin(), bytes.end()));
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": LibTorch's torch::pickle_load cannot read this file (", base::TorchErrorMessage(e),
        "). It reads files written by loom and simple Python torch.save files; Python objects "
        "such as an OrderedDict (module.state_dict()) or one-element lists are beyond it. Save "
        "weights as safetensors instead (safetensors.torch.save_file), or re-save from Python "
        "with plain dicts, e.g. torch.save(dict(model.state_dict()), path)"));
  }
}

absl::Status SaveTorchStateDict(const std::string& path, const NamedTensors& tensors) {
  c10::impl::GenericDict dict(c10::StringType::get(), c10::TensorType::get());
  std::unordered_set<std::string> names;
  try {
    for (const auto& [name, tensor] : tensors) {
      if (!names.insert(name).second) {
        return absl::InvalidArgumentError(
            absl::StrCat("writing ", path, ": tensor name \"", name, "\" appears twice"));
      }
      if (!tensor.defined()) {
        return absl::InvalidArgumentError(
            absl::StrCat("writing ", path, ": tensor \"", name, "\" is undefined"));
      }
      dict.insert(name, tensor.detach().to(at::kCPU));
    }
  } catch (const std::exception& e) {
    return base::TorchErrorToStatus(e, absl::StatusCode::kInternal, absl::StrCat("writing ", path));
  }
  return SavePickle(path, dict);
}

absl::StatusOr<NamedTensors> LoadTorchStateDict(const std::string& path) {
  ASSIGN_OR_RETURN(const c10::IValue value, LoadPickle(path));
  if (!value.isGenericDict()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": holds a ", value.tagKind(),
                                                   ", not a state dict (a dict of tensors)"));
  }
  NamedTensors out;
  for (const auto& entry : value.toGenericDict()) {
    if (!entry.key().isString()) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": a state dict key is a ", entry.key().tagKind(), ", not a string"));
    }
    const std::string name = entry.key().toStringRef();
    if (!entry.value().isTensor()) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": entry \"", name, "\" is a ",
                                                     entry.value().tagKind(), ", not a tensor"));
    }
    out.emplace_back(name, entry.value().toTensor());
  }
  return out;
}

}  // namespace loom::checkpoint
