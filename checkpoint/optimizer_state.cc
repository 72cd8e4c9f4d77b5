#include "checkpoint/optimizer_state.h"

#include <ATen/ATen.h>

#include <cmath>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "base/torch_status.h"
#include "checkpoint/optimizer_state_internal.h"
#include "checkpoint/torch_pickle.h"
#include "optim/param_state.h"

namespace loom::checkpoint {
namespace {

using c10::IValue;
using c10::impl::GenericDict;
using optimizer_state_internal::Codec;
using optimizer_state_internal::Codecs;
using optimizer_state_internal::DictView;
using optimizer_state_internal::NewDict;
using torch::optim::OptimizerOptions;
using torch::optim::OptimizerParamState;

absl::StatusOr<const Codec*> CodecFor(const torch::optim::Optimizer& optimizer) {
  if (optimizer.param_groups().empty()) {
    return absl::InvalidArgumentError("the optimizer has no parameter groups");
  }
  const OptimizerOptions& options = optimizer.param_groups()[0].options();
  std::vector<std::string> known;
  for (const Codec& c : Codecs()) {
    if (c.matches(options)) return &c;
    known.push_back(c.name);
  }
  return absl::InvalidArgumentError(absl::StrCat("optimizer.pt supports the optimizers ",
                                                 absl::StrJoin(known, ", "),
                                                 "; this optimizer's options are of another type"));
}

}  // namespace

absl::StatusOr<c10::IValue> OptimizerStateDict(const torch::optim::Optimizer& optimizer) {
  ASSIGN_OR_RETURN(const Codec* codec, CodecFor(optimizer));
  GenericDict state(c10::IntType::get(), c10::AnyType::get());
  c10::impl::GenericList groups(c10::AnyType::get());
  int64_t index = 0;
  try {
    for (const auto& group : optimizer.param_groups()) {
      GenericDict g = NewDict();
      codec->write_group(group.options(), g);
      c10::List<int64_t> params;
      for (const at::Tensor& p : group.params()) {
        auto it = optimizer.state().find(optim::ParamStateKey(p));
        if (it != optimizer.state().end()) {
          if (std::optional<GenericDict> s = codec->write_state(*it->second)) {
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
  ASSIGN_OR_RETURN(const Codec* codec, CodecFor(optimizer));
  if (!state_dict.isGenericDict()) {
    return absl::InvalidArgumentError(
        absl::StrCat("optimizer state is a ", state_dict.tagKind(), ", not a dict"));
  }
  const DictView top(state_dict.toGenericDict(), "optimizer state");
  ASSIGN_OR_RETURN(const IValue* groups_value, top.Required("param_groups"));
  ASSIGN_OR_RETURN(const IValue* state_value, top.Required("state"));
  if (!groups_value->isList()) return top.Error("param_groups", "is not a list");
  if (!state_value->isGenericDict()) return top.Error("state", "is not a dict");
  const c10::List<IValue> saved_groups = groups_value->toList();
  auto& groups = optimizer.param_groups();
  if (saved_groups.size() != groups.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("loaded state dict has a different number of parameter groups (",
                     saved_groups.size(), " in the file, ", groups.size(), " in the optimizer)"));
  }
  try {
    // Validate and build everything first.
    std::vector<std::unique_ptr<OptimizerOptions>> new_options;
    std::vector<std::pair<int64_t, at::Tensor>> id_map;  // saved index -> parameter
    std::unordered_map<int64_t, at::Tensor> by_id;
    for (size_t i = 0; i < groups.size(); ++i) {
      const IValue saved = saved_groups.get(i);
      if (!saved.isGenericDict()) {
        return absl::InvalidArgumentError(absl::StrCat("param_groups[", i, "] is not a dict"));
      }
      const DictView g(saved.toGenericDict(), absl::StrCat("param_groups[", i, "]"));
      ASSIGN_OR_RETURN(const IValue* params, g.Required("params"));
      if (!params->isList()) return g.Error("params", "is not a list");
      const c10::List<IValue> ids = params->toList();
      if (ids.size() != groups[i].params().size()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "loaded state dict contains a parameter group that doesn't match the size of "
            "optimizer's group (param_groups[",
            i, "] has ", ids.size(), " parameters in the file, ", groups[i].params().size(),
            " in the optimizer)"));
      }
      for (size_t j = 0; j < ids.size(); ++j) {
        if (!ids.get(j).isInt()) return g.Error("params", "holds a non-integer");
        id_map.emplace_back(ids.get(j).toInt(), groups[i].params()[j]);
        by_id.emplace(ids.get(j).toInt(), groups[i].params()[j]);
      }
      if (const IValue* maximize = g.Find("maximize");
          maximize != nullptr && !(maximize->isBool() && !maximize->toBool())) {
        return g.Error("maximize", "must be False: LibTorch's optimizers do not maximize");
      }
      std::unique_ptr<OptimizerOptions> options = groups[i].options().clone();
      RETURN_IF_ERROR_CTX(codec->read_group(g, *options),
                          absl::StrCat("loading ", codec->name, " hyperparameters"));
      new_options.push_back(std::move(options));
    }
    std::vector<std::pair<at::Tensor, std::unique_ptr<OptimizerParamState>>> new_state;
    for (const auto& entry : state_value->toGenericDict()) {
      if (!entry.key().isInt()) {
        return absl::InvalidArgumentError(absl::StrCat("state has a ", entry.key().tagKind(),
                                                       " key; keys are parameter indices"));
      }
      const int64_t id = entry.key().toInt();
      auto it = by_id.find(id);
      if (it == by_id.end()) continue;  // Python keeps it unused; loom has nowhere to put it
      if (!entry.value().isGenericDict()) {
        return absl::InvalidArgumentError(absl::StrCat("state[", id, "] is not a dict"));
      }
      const DictView s(entry.value().toGenericDict(), absl::StrCat("state[", id, "]"));
      ASSIGN_OR_RETURN(std::unique_ptr<OptimizerParamState> param_state,
                       codec->read_state(s, it->second),
                       absl::StrCat("loading ", codec->name, " state"));
      if (param_state != nullptr) new_state.emplace_back(it->second, std::move(param_state));
    }
    // Commit.
    for (size_t i = 0; i < groups.size(); ++i) groups[i].set_options(std::move(new_options[i]));
    for (const auto& [id, param] : id_map) optimizer.state().erase(optim::ParamStateKey(param));
    for (auto& [param, s] : new_state)
      optimizer.state()[optim::ParamStateKey(param)] = std::move(s);
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
