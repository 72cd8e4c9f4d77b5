#include "checkpoint/module_state.h"

#include <torch/types.h>

#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/torch_status.h"

namespace loom::checkpoint {
namespace {

void Collect(const torch::nn::Module& module, const std::string& prefix, NamedTensors* out) {
  for (const auto& p : module.named_parameters(/*recurse=*/false)) {
    if (p.value().defined()) out->emplace_back(prefix + p.key(), p.value().detach());
  }
  for (const auto& b : module.named_buffers(/*recurse=*/false)) {
    if (b.value().defined()) out->emplace_back(prefix + b.key(), b.value().detach());
  }
  for (const auto& child : module.named_children()) {
    Collect(*child.value(), prefix + child.key() + ".", out);
  }
}

// torch.Size([2, 3]) as Python prints it.
std::string TorchSize(c10::IntArrayRef sizes) {
  return absl::StrCat("torch.Size([", absl::StrJoin(sizes, ", "), "])");
}

std::string QuotedList(const std::vector<std::string>& keys) {
  return absl::StrJoin(keys, ", ", [](std::string* out, const std::string& k) {
    absl::StrAppend(out, "\"", k, "\"");
  });
}

// The module's own tensors by name, pointing at the registered tensors (not detached copies),
// so that copy_ writes into the module.
void CollectLive(torch::nn::Module& module, const std::string& prefix,
                 std::vector<std::pair<std::string, torch::Tensor>>* out) {
  for (auto& p : module.named_parameters(/*recurse=*/false)) {
    if (p.value().defined()) out->emplace_back(prefix + p.key(), p.value());
  }
  for (auto& b : module.named_buffers(/*recurse=*/false)) {
    if (b.value().defined()) out->emplace_back(prefix + b.key(), b.value());
  }
  for (auto& child : module.named_children()) {
    CollectLive(*child.value(), prefix + child.key() + ".", out);
  }
}

}  // namespace

NamedTensors ModuleStateDict(const torch::nn::Module& module) {
  NamedTensors out;
  Collect(module, "", &out);
  return out;
}

std::string ModuleClassName(const torch::nn::Module& module) {
  std::string name = module.name();
  if (const size_t colon = name.rfind("::"); colon != std::string::npos) {
    name = name.substr(colon + 2);
  }
  if (absl::EndsWith(name, "Impl") && name.size() > 4) name.resize(name.size() - 4);
  return name;
}

absl::StatusOr<LoadStateDictResult> LoadStateDict(torch::nn::Module& module,
                                                  const NamedTensors& state_dict,
                                                  LoadStateDictOptions options) {
  std::unordered_map<std::string, const torch::Tensor*> given;
  for (const auto& [name, tensor] : state_dict) {
    if (!given.emplace(name, &tensor).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("the state dict has key \"", name, "\" twice"));
    }
  }
  std::vector<std::pair<std::string, torch::Tensor>> targets;
  CollectLive(module, "", &targets);

  LoadStateDictResult result;
  std::vector<std::string> mismatches;
  std::unordered_set<std::string> known;
  for (const auto& [name, target] : targets) {
    known.insert(name);
    auto it = given.find(name);
    if (it == given.end()) {
      result.missing_keys.push_back(name);
      continue;
    }
    const torch::Tensor& source = *it->second;
    if (!source.defined()) {
      mismatches.push_back(absl::StrCat("the checkpoint tensor for ", name, " is undefined."));
    } else if (source.sizes() != target.sizes()) {
      mismatches.push_back(absl::StrCat(
          "size mismatch for ", name, ": copying a param with shape ", TorchSize(source.sizes()),
          " from checkpoint, the shape in current model is ", TorchSize(target.sizes()), "."));
    }
  }
  for (const auto& [name, tensor] : state_dict) {
    if (known.count(name) == 0) result.unexpected_keys.push_back(name);
  }

  std::vector<std::string> errors;
  if (options.strict && !result.missing_keys.empty()) {
    errors.push_back(
        absl::StrCat("Missing key(s) in state_dict: ", QuotedList(result.missing_keys), ". "));
  }
  if (options.strict && !result.unexpected_keys.empty()) {
    errors.push_back(absl::StrCat(
        "Unexpected key(s) in state_dict: ", QuotedList(result.unexpected_keys), ". "));
  }
  errors.insert(errors.end(), mismatches.begin(), mismatches.end());
  if (!errors.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("Error(s) in loading state_dict for ",
                                                   ModuleClassName(module), ":\n\t",
                                                   absl::StrJoin(errors, "\n\t")));
  }

  torch::NoGradGuard no_grad;
  for (auto& [name, target] : targets) {
    auto it = given.find(name);
    if (it == given.end()) continue;
    if (options.copy_filter && !options.copy_filter(name, target)) continue;
    try {
      target.copy_(*it->second);
    } catch (const std::exception& e) {
      return absl::InvalidArgumentError(absl::StrCat(
          "While copying the parameter named \"", name, "\", whose dimensions in the model are ",
          TorchSize(target.sizes()), " and whose dimensions in the checkpoint are ",
          TorchSize(it->second->sizes()), ", an exception occurred : ", base::TorchErrorMessage(e),
          "."));
    }
  }
  return result;
}

}  // namespace loom::checkpoint
