// HF Trainer's parameter grouping for weight decay (transformers 4.38–4.41,
// Trainer.get_decay_parameter_names and the two groups built by Trainer.create_optimizer;
// TrainingArguments `weight_decay`).
//
// Contract:
//   DecayParameterNames(model): every parameter name of `model` (dotted, as
//     named_parameters() spells it) except
//       - parameters of torch::nn::LayerNorm modules (and of anything nested inside one),
//       - names that contain the substring "bias" anywhere.
//     Custom layer-norm modules that are not torch::nn::LayerNormImpl still get decay,
//     as in HF (ALL_LAYERNORM_LAYERS = [nn.LayerNorm]). Order: HF's traversal (children
//     first, in registration order, then the module's own parameters). A parameter that
//     is reachable under several names (tied weights) appears under each of them.
//   HfParamGroups(model, weight_decay): exactly two groups, always in this order:
//       [0] parameters whose name is in DecayParameterNames, weight_decay = weight_decay
//       [1] every other parameter,                          weight_decay = 0.0
//     in named_parameters() order, skipping requires_grad() == false parameters and
//     listing each tensor once (under its first name, as Python's named_parameters()
//     removes duplicates). A group may be empty; it is still present (HF does the same).
//
// Example:
//   std::vector<ParamGroup> groups = HfParamGroups(*model, args.weight_decay());
//   for (const ParamGroup& g : groups) { ... g.params ... g.weight_decay ... }
#ifndef LOOM_OPTIM_PARAM_GROUPS_H_
#define LOOM_OPTIM_PARAM_GROUPS_H_

#include <ATen/ATen.h>
#include <torch/nn/module.h>

#include <string>
#include <vector>

namespace loom::optim {

std::vector<std::string> DecayParameterNames(const torch::nn::Module& model);

struct ParamGroup {
  std::vector<std::string> names;  // parallel to `params`
  std::vector<at::Tensor> params;
  double weight_decay = 0.0;
};

std::vector<ParamGroup> HfParamGroups(const torch::nn::Module& model, double weight_decay);

}  // namespace loom::optim

#endif  // LOOM_OPTIM_PARAM_GROUPS_H_
