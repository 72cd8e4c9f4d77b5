#include "checkpoint/optimizer_state.h"

#include <ATen/ATen.h>

#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "base/torch_compat.h"
#include "base/torch_status.h"
#include "checkpoint/optimizer_state_codec.h"
#include "checkpoint/optimizer_state_internal.h"
#include "checkpoint/torch_pickle.h"
#include "optim/fused_cpu_optim.h"
#include "optim/param_state.h"

namespace loom::checkpoint {
namespace {

using c10::IValue;
using c10::impl::GenericDict;
using optimizer_state_internal::DictView;
using optimizer_state_internal::Layouts;
using optimizer_state_internal::NewDict;
using optimizer_state_internal::OptimizerLayout;
using torch::optim::OptimizerOptions;
using torch::optim::OptimizerParamState;

absl::StatusOr<const OptimizerLayout*> LayoutFor(const torch::optim::Optimizer& optimizer) {
  if (optimizer.param_groups().empty()) {
    return absl::InvalidArgumentError("the optimizer has no parameter groups");
  }
  const OptimizerOptions& options = optimizer.param_groups()[0].options();
  std::vector<std::string> known;
  for (const OptimizerLayout& layout : Layouts()) {
    if (layout.matches(options)) return &layout;
    known.push_back(layout.name);
  }
  return absl::InvalidArgumentError(absl::StrCat("optimizer.pt supports the optimizers ",
                                                 absl::StrJoin(known, ", "),
                                                 "; this optimizer's options are of another type"));
}

// The new options and the parameters a state dict's param_groups give, validated against the
// optimizer's groups.
struct LoadedGroups {
  std::vector<std::unique_ptr<OptimizerOptions>> options;  // one per group
  std::vector<at::Tensor> params;                          // every parameter of every group
  std::unordered_map<int64_t, at::Tensor> by_id;           // saved index -> parameter
};

// Checks the parameter indices of saved group `i` against the optimizer's and records them.
absl::Status ReadGroupParams(const DictView& saved, size_t i,
                             const torch::optim::OptimizerParamGroup& group, LoadedGroups& loaded) {
  ASSIGN_OR_RETURN(const IValue* params, saved.Required("params"));
  if (!params->isList()) return saved.Error("params", "is not a list");
  const c10::List<IValue> ids = params->toList();
  if (ids.size() != group.params().size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("loaded state dict contains a parameter group that doesn't match the size of "
                     "optimizer's group (param_groups[",
                     i, "] has ", ids.size(), " parameters in the file, ", group.params().size(),
                     " in the optimizer)"));
  }
  for (size_t j = 0; j < ids.size(); ++j) {
    if (!ids.get(j).isInt()) return saved.Error("params", "holds a non-integer");
    loaded.params.push_back(group.params()[j]);
    loaded.by_id.emplace(ids.get(j).toInt(), group.params()[j]);
  }
  return absl::OkStatus();
}

// Saved group `i`: its parameters, then its hyperparameters into a copy of the group's options.
absl::Status ReadGroup(const OptimizerLayout& layout, const IValue& saved, size_t i,
                       const torch::optim::OptimizerParamGroup& group, LoadedGroups& loaded) {
  if (!saved.isGenericDict()) {
    return absl::InvalidArgumentError(absl::StrCat("param_groups[", i, "] is not a dict"));
  }
  const DictView g(saved.toGenericDict(), absl::StrCat("param_groups[", i, "]"));
  RETURN_IF_ERROR(ReadGroupParams(g, i, group, loaded));
  if (const IValue* maximize = g.Find("maximize");
      maximize != nullptr && !(maximize->isBool() && !maximize->toBool())) {
    return g.Error("maximize", "must be False: LibTorch's optimizers do not maximize");
  }
  std::unique_ptr<OptimizerOptions> options = group.options().clone();
  RETURN_IF_ERROR_CTX(DecodeGroup(layout, g, *options),
                      absl::StrCat("loading ", layout.name, " hyperparameters"));
  loaded.options.push_back(std::move(options));
  return absl::OkStatus();
}

absl::StatusOr<LoadedGroups> ReadGroups(
    const OptimizerLayout& layout, const c10::List<IValue>& saved_groups,
    const std::vector<torch::optim::OptimizerParamGroup>& groups) {
  if (saved_groups.size() != groups.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("loaded state dict has a different number of parameter groups (",
                     saved_groups.size(), " in the file, ", groups.size(), " in the optimizer)"));
  }
  LoadedGroups loaded;
  for (size_t i = 0; i < groups.size(); ++i) {
    RETURN_IF_ERROR(ReadGroup(layout, saved_groups.get(i), i, groups[i], loaded));
  }
  return loaded;
}

using NewState = std::vector<std::pair<at::Tensor, std::unique_ptr<OptimizerParamState>>>;

// The per-parameter state of "state" for the parameters the groups name; entries for other
// indices are skipped (Python keeps them unused; loom has nowhere to put them).
absl::StatusOr<NewState> ReadState(const OptimizerLayout& layout, const GenericDict& saved,
                                   const std::unordered_map<int64_t, at::Tensor>& by_id) {
  NewState out;
  for (const auto& entry : saved) {
    if (!entry.key().isInt()) {
      return absl::InvalidArgumentError(
          absl::StrCat("state has a ", entry.key().tagKind(), " key; keys are parameter indices"));
    }
    const int64_t id = entry.key().toInt();
    auto it = by_id.find(id);
    if (it == by_id.end()) continue;
    if (!entry.value().isGenericDict()) {
      return absl::InvalidArgumentError(absl::StrCat("state[", id, "] is not a dict"));
    }
    const DictView s(entry.value().toGenericDict(), absl::StrCat("state[", id, "]"));
    ASSIGN_OR_RETURN(std::unique_ptr<OptimizerParamState> param_state,
                     DecodeState(layout, s, it->second),
                     absl::StrCat("loading ", layout.name, " state"));
    if (param_state != nullptr) out.emplace_back(it->second, std::move(param_state));
  }
  return out;
}

// Replaces every group's options and the state of every parameter of the groups.
void Commit(torch::optim::Optimizer& optimizer, LoadedGroups loaded, NewState state) {
  auto& groups = optimizer.param_groups();
  for (size_t i = 0; i < groups.size(); ++i) groups[i].set_options(std::move(loaded.options[i]));
  for (const at::Tensor& param : loaded.params) {
    optimizer.state().erase(optim::ParamStateKey(param));
  }
  for (auto& [param, s] : state) optimizer.state()[optim::ParamStateKey(param)] = std::move(s);
}

// Python torch 2.x writes `fused=True` in the param_groups of a fused optimizer
// (torch.optim.AdamW(fused=True), which transformers' `adamw_torch_fused` builds), and
// load_state_dict takes it back: loom's fused CPU optimizers say so, so that a resumed Python
// run stays fused. torch 1.13 had no fused CPU step; its layout keeps its False.
void MarkFused(const torch::optim::Optimizer& optimizer, GenericDict& group) {
  if (!LOOM_TORCH_AT_LEAST(2, 0) || !group.contains("fused")) return;
  if (dynamic_cast<const optim::FusedCpuExtras*>(&optimizer) == nullptr) return;
  group.insert_or_assign("fused", true);
}

}  // namespace

absl::StatusOr<c10::IValue> OptimizerStateDict(const torch::optim::Optimizer& optimizer) {
  ASSIGN_OR_RETURN(const OptimizerLayout* layout, LayoutFor(optimizer));
  GenericDict state(c10::IntType::get(), c10::AnyType::get());
  c10::impl::GenericList groups(c10::AnyType::get());
  int64_t index = 0;
  try {
    for (const auto& group : optimizer.param_groups()) {
      GenericDict g = EncodeGroup(*layout, group.options());
      MarkFused(optimizer, g);
      c10::List<int64_t> params;
      for (const at::Tensor& p : group.params()) {
        auto it = optimizer.state().find(optim::ParamStateKey(p));
        if (it != optimizer.state().end()) {
          if (std::optional<GenericDict> s = EncodeState(*layout, *it->second)) {
            state.insert(index, *s);
          }
        }
        params.push_back(index++);
      }
      g.insert("params", params);
      groups.push_back(g);
    }
  } catch (const std::exception& e) {
    return base::TorchErrorToStatus(e, absl::StatusCode::kInternal, "packing optimizer state");
  }
  GenericDict out = NewDict();
  out.insert("state", state);
  out.insert("param_groups", groups);
  return IValue(out);
}

absl::Status LoadOptimizerStateDict(torch::optim::Optimizer& optimizer,
                                    const c10::IValue& state_dict) {
  ASSIGN_OR_RETURN(const OptimizerLayout* layout, LayoutFor(optimizer));
  if (!state_dict.isGenericDict()) {
    return absl::InvalidArgumentError(
        absl::StrCat("optimizer state is a ", state_dict.tagKind(), ", not a dict"));
  }
  const DictView top(state_dict.toGenericDict(), "optimizer state");
  ASSIGN_OR_RETURN(const IValue* groups_value, top.Required("param_groups"));
  ASSIGN_OR_RETURN(const IValue* state_value, top.Required("state"));
  if (!groups_value->isList()) return top.Error("param_groups", "is not a list");
  if (!state_value->isGenericDict()) return top.Error("state", "is not a dict");
  try {  // validate and build everything, then commit
    ASSIGN_OR_RETURN(LoadedGroups loaded,
                     ReadGroups(*layout, groups_value->toList(), optimizer.param_groups()));
    ASSIGN_OR_RETURN(NewState state,
                     ReadState(*layout, state_value->toGenericDict(), loaded.by_id));
    Commit(optimizer, std::move(loaded), std::move(state));
  } catch (const std::exception& e) {
    return base::TorchErrorToStatus(e, absl::StatusCode::kInvalidArgument,
                                    "loading optimizer state");
  }
  return absl::OkStatus();
}

absl::Status SaveOptimizerState(const std::string& path, const torch::optim::Optimizer& optimizer) {
  ASSIGN_OR_RETURN(const c10::IValue state, OptimizerStateDict(optimizer),
                   absl::StrCat("writing ", path));
  return SavePickle(path, state);
}

absl::Status LoadOptimizerState(const std::string& path, torch::optim::Optimizer& optimizer) {
  ASSIGN_OR_RETURN(const c10::IValue state, LoadPickle(path));
  RETURN_IF_ERROR_CTX(LoadOptimizerStateDict(optimizer, state), path);
  return absl::OkStatus();
}

}  // namespace loom::checkpoint
