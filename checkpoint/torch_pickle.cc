#include "checkpoint/torch_pickle.h"

#include <torch/csrc/jit/serialization/pickle.h>

#include <unordered_set>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/file_util.h"
#include "base/status_macros.h"
#include "base/torch_status.h"
#include "checkpoint/python_unpickler.h"

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
  std::string libtorch_error;
  try {
    return torch::jit::pickle_load(std::vector<char>(bytes.begin(), bytes.end()));
  } catch (const std::exception& e) {
    libtorch_error = base::TorchErrorMessage(e);
  }
  absl::StatusOr<c10::IValue> value = UnpickleTorchSave(bytes);
  if (value.ok()) return value;
  return absl::InvalidArgumentError(absl::StrCat(
      path, ": cannot read this torch pickle: ", value.status().message(),
      " (LibTorch's torch::pickle_load said: ", libtorch_error,
      "). loom reads torch.save files of plain state dicts; save weights as safetensors "
      "(safetensors.torch.save_file) or re-save the file holding only dicts, lists, tuples, "
      "numbers, strings and tensors"));
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
