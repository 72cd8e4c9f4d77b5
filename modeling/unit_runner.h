// Wrap units: the hook point through which a parameter-sharding strategy (FSDP's auto_wrap
// units, ZeRO-3's fetch units) reaches a model's repeating layers. LibTorch's C++
// modules have no forward hooks, so a model runs each of its units through a UnitRunner the
// strategy installs; the model needs no strategy-specific code, only to declare its repeating
// layer type (what `transformer_layer_cls_to_wrap` names: "BertLayer" for BERT).
//
// Contract:
//   - UnitRunner::Run(unit, forward) must return forward()'s result. A runner may prepare the
//     unit's parameters before calling it (gather them) and release them after, and may attach
//     autograd nodes to the result and the unit's inputs to act before and after the unit's
//     backward. Without a runner (nullptr) RunUnit just calls forward().
//   - Model::UnitClassNames() lists the model's repeating layer types; Model::SetUnitRunner
//     installs a runner (nullptr removes it) and is Unimplemented for models without units.
//   - FindUnits(model, class_names): every submodule whose class name (without namespace or
//     "Impl", as checkpoint::ModuleClassName) is one of `class_names`, in named_modules()
//     order, with its qualified name. InvalidArgument when none matches, naming the classes the
//     model does have (HF/accelerate: "Could not find the transformer layer class to wrap in
//     the model.").
//
// Example (a model's forward):
//   hidden = modeling::RunUnit(unit_runner_, *layer, [&] { return layer->Forward(hidden); });
#ifndef LOOM_MODELING_UNIT_RUNNER_H_
#define LOOM_MODELING_UNIT_RUNNER_H_

#include <ATen/ATen.h>
#include <torch/nn/module.h>

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace loom::modeling {

class UnitRunner {
 public:
  virtual ~UnitRunner();
  virtual at::Tensor Run(torch::nn::Module& unit, const std::function<at::Tensor()>& forward) = 0;
};

inline at::Tensor RunUnit(UnitRunner* runner, torch::nn::Module& unit,
                          const std::function<at::Tensor()>& forward) {
  return runner != nullptr ? runner->Run(unit, forward) : forward();
}

// A module's class name as messages and transformer_layer_cls_to_wrap spell it.
std::string UnitClassName(const torch::nn::Module& module);

struct FoundUnit {
  std::string name;  // qualified, e.g. "bert.encoder.layer.0"
  std::shared_ptr<torch::nn::Module> module;
};

absl::StatusOr<std::vector<FoundUnit>> FindUnits(const torch::nn::Module& model,
                                                 const std::vector<std::string>& class_names);

}  // namespace loom::modeling

#endif  // LOOM_MODELING_UNIT_RUNNER_H_
