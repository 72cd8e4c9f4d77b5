#include "modeling/pretrained_weights.h"

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "base/torch_status.h"
#include "checkpoint/module_state.h"

namespace loom::modeling {

std::string WeightsLoadReport::Report() const {
  std::string out;
  if (!newly_initialized_keys.empty()) {
    absl::StrAppend(&out, "Some weights of ", class_name, " were not initialized from ", source,
                    " and are newly initialized: [", absl::StrJoin(newly_initialized_keys, ", "),
                    "]");
  }
  if (!unused_keys.empty()) {
    absl::StrAppend(&out, out.empty() ? "" : "\n", "Some weights of ", source,
                    " were not used when initializing ", class_name, ": [",
                    absl::StrJoin(unused_keys, ", "), "]");
  }
  return out;
}

namespace {

// LoadWeightsNonStrict's checks and report; `copy_filter` picks the keys copied now.
absl::StatusOr<WeightsLoadReport> LoadChecked(
    torch::nn::Module& model, const checkpoint::NamedTensors& tensors, const std::string& source,
    const ModelNames& names,
    std::function<bool(const std::string&, const torch::Tensor&)> copy_filter) {
  std::set<std::string> model_keys;
  for (const auto& [name, tensor] : checkpoint::ModuleStateDict(model)) model_keys.insert(name);
  const bool any = std::any_of(tensors.begin(), tensors.end(),
                               [&](const auto& kv) { return model_keys.count(kv.first) > 0; });
  if (!any) {
    return absl::InvalidArgumentError(absl::StrCat(source, " holds none of ", names.class_name,
                                                   "'s weights (e.g. ", names.example_keys,
                                                   "); is it a ", names.family, " checkpoint?"));
  }
  checkpoint::LoadStateDictOptions non_strict;
  non_strict.strict = false;
  non_strict.copy_filter = std::move(copy_filter);
  ASSIGN_OR_RETURN(checkpoint::LoadStateDictResult result,
                   checkpoint::LoadStateDict(model, tensors, non_strict), "loading " + source);
  WeightsLoadReport report;
  report.class_name = names.class_name;
  report.source = source;
  report.newly_initialized_keys = result.missing_keys;
  report.unused_keys = result.unexpected_keys;
  std::sort(report.newly_initialized_keys.begin(), report.newly_initialized_keys.end());
  std::sort(report.unused_keys.begin(), report.unused_keys.end());
  return report;
}

}  // namespace

absl::StatusOr<WeightsLoadReport> LoadWeightsNonStrict(torch::nn::Module& model,
                                                       const checkpoint::NamedTensors& tensors,
                                                       const std::string& source,
                                                       const ModelNames& names) {
  return LoadChecked(model, tensors, source, names, nullptr);
}

absl::StatusOr<DeferredWeights> LoadWeightsDeferred(torch::nn::Module& model,
                                                    checkpoint::NamedTensors tensors,
                                                    const std::string& source,
                                                    const ModelNames& names, ParameterFill init) {
  DeferredWeights out;
  ASSIGN_OR_RETURN(out.report, LoadChecked(model, tensors, source, names,
                                           [](const std::string&, const torch::Tensor& target) {
                                             return !IsDeferred(target);
                                           }));
  auto by_name = std::make_shared<std::map<std::string, at::Tensor>>();
  for (auto& [name, tensor] : tensors) (*by_name)[name] = std::move(tensor);
  out.fill = [by_name, init = std::move(init)](const std::string& name,
                                              at::Tensor& dest) -> absl::Status {
    auto it = by_name->find(name);
    if (it == by_name->end()) return init(name, dest);
    try {
      at::NoGradGuard no_grad;
      dest.copy_(it->second);
    } catch (const std::exception& e) {
      return base::TorchErrorToStatus(e, absl::StatusCode::kInvalidArgument,
                                      absl::StrCat("loading ", name));
    }
    return absl::OkStatus();
  };
  return out;
}

}  // namespace loom::modeling
