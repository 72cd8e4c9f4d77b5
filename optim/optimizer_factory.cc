#include "optim/optimizer_factory.h"

#include <glog/logging.h>
#include <torch/optim/adagrad.h>
#include <torch/optim/adamw.h>
#include <torch/optim/rmsprop.h>
#include <torch/optim/sgd.h>

#include <exception>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "base/status_macros.h"
#include "base/torch_status.h"
#include "optim/adafactor.h"
#include "optim/fused_cpu_optim.h"
#include "optim/torch_adamw.h"
#include "optim/hf_adamw.h"
#include "optim/param_groups.h"

namespace loom::optim {
namespace {

using torch::optim::OptimizerOptions;
using torch::optim::OptimizerParamGroup;

absl::Status Invalid(absl::string_view message) { return absl::InvalidArgumentError(message); }

// Checks a value the Python constructor checks; `ok` is false when it would raise.
absl::Status Require(bool ok, absl::string_view flag, double value, absl::string_view rule,
                     absl::string_view optim) {
  if (ok) return absl::OkStatus();
  return Invalid(absl::StrCat("--", flag, " ", value, " is invalid for --optim ", optim,
                              ": it must be ", rule));
}

absl::Status CheckLr(const args::TrainingArguments& a) {
  return Require(a.learning_rate() >= 0.0, "learning_rate", a.learning_rate(), ">= 0", a.optim());
}

absl::Status CheckAdamKwargs(const args::TrainingArguments& a) {
  RETURN_IF_ERROR(CheckLr(a));
  RETURN_IF_ERROR(
      Require(a.adam_epsilon() >= 0.0, "adam_epsilon", a.adam_epsilon(), ">= 0", a.optim()));
  RETURN_IF_ERROR(Require(a.adam_beta1() >= 0.0 && a.adam_beta1() < 1.0, "adam_beta1",
                          a.adam_beta1(), "in [0, 1)", a.optim()));
  return Require(a.adam_beta2() >= 0.0 && a.adam_beta2() < 1.0, "adam_beta2", a.adam_beta2(),
                 "in [0, 1)", a.optim());
}

// HF's groups, each with a copy of `defaults` whose weight decay is the group's.
template <typename Options>
std::vector<OptimizerParamGroup> MakeGroups(torch::nn::Module& model, double weight_decay,
                                            const Options& defaults) {
  std::vector<OptimizerParamGroup> groups;
  for (ParamGroup& g : HfParamGroups(model, weight_decay)) {
    auto options = std::make_unique<Options>(defaults);
    options->weight_decay(g.weight_decay);
    groups.emplace_back(std::move(g.params), std::move(options));
  }
  return groups;
}

absl::StatusOr<std::unique_ptr<torch::optim::Optimizer>> Build(const args::TrainingArguments& a,
                                                               torch::nn::Module& model) {
  const std::string& name = a.optim();
  const double lr = a.learning_rate();
  const double wd = a.weight_decay();
  const auto betas = std::make_tuple(a.adam_beta1(), a.adam_beta2());
  if (name == "adamw_torch" || name == "adamw_torch_fused") {
    RETURN_IF_ERROR(CheckAdamKwargs(a));
    const auto defaults = torch::optim::AdamWOptions(lr).betas(betas).eps(a.adam_epsilon());
    if (name == "adamw_torch_fused") {
      // torch's fused AdamW: one vectorised pass per parameter (fused_cpu_optim.h).
      return std::make_unique<FusedCpuAdamW>(MakeGroups(model, wd, defaults), defaults);
    }
    return std::make_unique<TorchAdamW>(MakeGroups(model, wd, defaults), defaults);
  }
  if (name == "adamw_hf") {
    RETURN_IF_ERROR(CheckAdamKwargs(a));
    const auto defaults = HfAdamWOptions(lr).betas(betas).eps(a.adam_epsilon());
    return std::make_unique<HfAdamW>(MakeGroups(model, wd, defaults), defaults);
  }
  if (name == "adafactor") {
    const auto defaults = AdafactorOptions(lr).scale_parameter(false).relative_step(false);
    return std::make_unique<Adafactor>(MakeGroups(model, wd, defaults), defaults);
  }
  if (name == "sgd") {
    RETURN_IF_ERROR(CheckLr(a));
    const auto defaults = torch::optim::SGDOptions(lr);
    return std::make_unique<torch::optim::SGD>(MakeGroups(model, wd, defaults), defaults);
  }
  if (name == "adagrad") {
    RETURN_IF_ERROR(CheckLr(a));
    const auto defaults = torch::optim::AdagradOptions(lr);
    return std::make_unique<torch::optim::Adagrad>(MakeGroups(model, wd, defaults), defaults);
  }
  if (name == "rmsprop") {
    RETURN_IF_ERROR(CheckLr(a));
    const auto defaults = torch::optim::RMSpropOptions(lr);
    return std::make_unique<torch::optim::RMSprop>(MakeGroups(model, wd, defaults), defaults);
  }
  return Invalid(absl::StrCat("--optim ", name, " is not supported by loom; use one of ",
                              absl::StrJoin(SupportedOptimizerNames(), ", ")));
}

}  // namespace

const std::vector<std::string>& SupportedOptimizerNames() {
  static const auto* const kNames = new std::vector<std::string>{
      "adamw_torch", "adamw_torch_fused", "adamw_hf", "adafactor", "sgd", "adagrad", "rmsprop"};
  return *kNames;
}

absl::StatusOr<std::map<std::string, std::string>> ParseOptimArgs(absl::string_view text) {
  std::map<std::string, std::string> out;
  const std::string compact = absl::StrReplaceAll(text, {{" ", ""}});
  if (compact.empty()) return out;
  for (absl::string_view entry : absl::StrSplit(compact, ',')) {
    std::vector<std::string> kv = absl::StrSplit(entry, '=');
    if (kv.size() != 2) {
      return Invalid(absl::StrCat("--optim_args \"", text, "\": entry \"", entry,
                                  "\" is not key=value; write --optim_args \"k1=v1,k2=v2\""));
    }
    out[kv[0]] = kv[1];
  }
  return out;
}

absl::StatusOr<std::unique_ptr<torch::optim::Optimizer>> CreateOptimizer(
    const args::TrainingArguments& args, torch::nn::Module& model,
    std::vector<std::string>* warnings) {
  ASSIGN_OR_RETURN(const auto optim_args, ParseOptimArgs(args.optim_args()));
  std::unique_ptr<torch::optim::Optimizer> optimizer;
  try {
    ASSIGN_OR_RETURN(optimizer, Build(args, model));
  } catch (const std::exception& e) {
    return base::TorchErrorToStatus(
        e, absl::StatusCode::kInvalidArgument,
        absl::StrCat("creating the --optim ", args.optim(), " optimizer"));
  }
  std::vector<std::string> notes;
  if (args.optim() == "adamw_hf") {
    notes.push_back(
        "--optim adamw_hf: this implementation of AdamW (transformers.AdamW) is deprecated in HF; "
        "--optim adamw_torch (the default) is PyTorch's AdamW");
  }
  if (!optim_args.empty()) {
    notes.push_back(absl::StrCat(
        "--optim_args \"", args.optim_args(),
        "\" is ignored: HF does not pass optim_args to --optim ", args.optim(),
        " (only adamw_anyprecision, GaLore, LOMO and bitsandbytes optimizers read it)"));
  }
  for (std::string& note : notes) {
    if (warnings != nullptr) {
      warnings->push_back(std::move(note));
    } else {
      LOG(WARNING) << note;
    }
  }
  return optimizer;
}

}  // namespace loom::optim
