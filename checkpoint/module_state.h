// A torch::nn::Module's state dict (parameters and buffers by dotted name) and loading one
// back with torch's load_state_dict rules and error wording (what HF surfaces from
// from_pretrained / Trainer._load_from_checkpoint when keys or shapes do not fit).
//
// Contract:
//   ModuleStateDict(module): for the module and then each child depth first (registration
//     order), its own defined parameters and then its buffers, named "child.grandchild.name"
//     — the keys and order of Python's module.state_dict(). Tensors are detached aliases of the
//     module's (no copy).
//   LoadStateDict(module, state_dict, {strict}): checks keys and shapes before changing anything;
//     then copies each tensor in (converting dtype and device like Tensor.copy_, under no_grad;
//     a copy_ that throws, e.g. between devices, is reported as torch words it and may leave
//     earlier tensors loaded). options.copy_filter, when set, picks the keys copied; the others
//     are only checked.
//     Errors (InvalidArgument) use torch's wording, all problems in one message:
//       Error(s) in loading state_dict for Linear:
//       	Missing key(s) in state_dict: "bias".
//       	Unexpected key(s) in state_dict: "extra".
//       	size mismatch for weight: copying a param with shape torch.Size([3, 2]) from
//       checkpoint, the shape in current model is torch.Size([2, 3]).
//     (each size mismatch on one line; lines joined with "\n\t"; the class name is the C++
//     one without namespaces and a trailing "Impl"). Missing and unexpected keys are errors
//     only when strict (the default); size mismatches always are. A key given twice is an
//     error. The result lists the missing and unexpected keys (sorted like torch: module order
//     for missing, state-dict order for unexpected).
//
// Example:
//   ASSIGN_OR_RETURN(SafetensorsFile file, LoadSafetensors(path));
//   RETURN_IF_ERROR(LoadStateDict(*model, file.tensors).status(), path);
#ifndef LOOM_CHECKPOINT_MODULE_STATE_H_
#define LOOM_CHECKPOINT_MODULE_STATE_H_

#include <torch/nn/module.h>

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "checkpoint/named_tensors.h"

namespace loom::checkpoint {

NamedTensors ModuleStateDict(const torch::nn::Module& module);

struct LoadStateDictOptions {
  bool strict = true;
  // When set, a key for which it returns false is checked (present, shape) but not copied:
  // e.g. parameters built without their bytes, filled later (modeling/deferred_init.h).
  std::function<bool(const std::string& name, const torch::Tensor& target)> copy_filter;
};

struct LoadStateDictResult {
  std::vector<std::string> missing_keys;
  std::vector<std::string> unexpected_keys;
};

absl::StatusOr<LoadStateDictResult> LoadStateDict(torch::nn::Module& module,
                                                  const NamedTensors& state_dict,
                                                  LoadStateDictOptions options = {});

// "torch::nn::LinearImpl" -> "Linear": the name torch's messages show for a module.
std::string ModuleClassName(const torch::nn::Module& module);

}  // namespace loom::checkpoint

#endif  // LOOM_CHECKPOINT_MODULE_STATE_H_
