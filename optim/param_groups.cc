#include "optim/param_groups.h"

#include <torch/nn/modules/normalization.h>

#include <string>
#include <unordered_set>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace loom::optim {
namespace {

// HF's get_parameter_names(model, [nn.LayerNorm]): the children's names first (prefixed
// with the child's name; nothing from a LayerNorm child), then the module's own parameters.
void CollectNamesOutsideLayerNorm(const torch::nn::Module& module, std::vector<std::string>* out) {
  for (const auto& child : module.named_children()) {
    if (dynamic_cast<const torch::nn::LayerNormImpl*>(child.value().get()) != nullptr) continue;
    std::vector<std::string> nested;
    CollectNamesOutsideLayerNorm(*child.value(), &nested);
    for (const std::string& name : nested) out->push_back(absl::StrCat(child.key(), ".", name));
  }
  for (const auto& param : module.named_parameters(/*recurse=*/false)) {
    out->push_back(param.key());
  }
}

}  // namespace

std::vector<std::string> DecayParameterNames(const torch::nn::Module& model) {
  std::vector<std::string> all;
  CollectNamesOutsideLayerNorm(model, &all);
  std::vector<std::string> decay;
  for (std::string& name : all) {
    if (!absl::StrContains(name, "bias")) decay.push_back(std::move(name));
  }
  return decay;
}

std::vector<ParamGroup> HfParamGroups(const torch::nn::Module& model, double weight_decay) {
  const std::vector<std::string> decay_names = DecayParameterNames(model);
  const std::unordered_set<std::string> decay(decay_names.begin(), decay_names.end());
  std::vector<ParamGroup> groups(2);
  groups[0].weight_decay = weight_decay;
  groups[1].weight_decay = 0.0;
  std::unordered_set<const void*> seen;
  for (const auto& param : model.named_parameters(/*recurse=*/true)) {
    const at::Tensor& p = param.value();
    if (!seen.insert(p.unsafeGetTensorImpl()).second) continue;
    if (!p.requires_grad()) continue;
    ParamGroup& group = decay.count(param.key()) ? groups[0] : groups[1];
    group.names.push_back(param.key());
    group.params.push_back(p);
  }
  return groups;
}

}  // namespace loom::optim
