// Loading a checkpoint's tensors into a model the way transformers 4.41's
// `_load_pretrained_model` does for the models whose checkpoints map one to one onto their
// state dict (after the model folds its tied aliases): non-strict, with HF's warnings.
//
// Contract:
//   LoadWeightsNonStrict(model, tensors, source, names):
//     - a checkpoint none of whose tensors is a model key is InvalidArgument "<source> holds
//       none of <class>'s weights (e.g. <example keys>); is it a <family> checkpoint?";
//     - a shape mismatch is InvalidArgument naming `source` (torch's "size mismatch" lines);
//     - otherwise the tensors are copied in; model keys the checkpoint lacks keep their values
//       and are listed (sorted) in newly_initialized_keys, checkpoint keys the model lacks in
//       unused_keys.
//   LoadWeightsDeferred(model, tensors, source, names, init): the same checks and report for a
//     model built with deferred parameters (deferred_init.h), without giving them bytes: the
//     buffers and any parameter that has bytes are copied now; the result's `fill` gives each
//     deferred parameter its checkpoint tensor (converted to the parameter's dtype) when the
//     checkpoint has it and init(name, dest) otherwise — what DeepSpeed's zero.Init and FSDP's
//     meta-device loading do, one wrap unit at a time. The fill holds the checkpoint's tensors
//     (memory-mapped safetensors stay mapped, not read) until it is dropped.
//   WeightsLoadReport::Report() words HF's two warnings ("" when every key was loaded and
//   used).
//
// Example:
//   ASSIGN_OR_RETURN(modeling::WeightsLoadReport r,
//                    modeling::LoadWeightsNonStrict(model, folded, source,
//                                                   {"LlamaForCausalLM", "Llama", "model.norm.weight"}));
#ifndef LOOM_MODELING_PRETRAINED_WEIGHTS_H_
#define LOOM_MODELING_PRETRAINED_WEIGHTS_H_

#include <torch/nn/module.h>

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "checkpoint/named_tensors.h"
#include "modeling/deferred_init.h"

namespace loom::modeling {

struct WeightsLoadReport {
  std::string class_name;
  std::string source;
  std::vector<std::string> newly_initialized_keys;
  std::vector<std::string> unused_keys;
  std::string Report() const;
};

struct ModelNames {
  std::string class_name;    // "T5ForConditionalGeneration"
  std::string family;        // "T5"
  std::string example_keys;  // for the not-this-model error
};

absl::StatusOr<WeightsLoadReport> LoadWeightsNonStrict(torch::nn::Module& model,
                                                       const checkpoint::NamedTensors& tensors,
                                                       const std::string& source,
                                                       const ModelNames& names);

struct DeferredWeights {
  WeightsLoadReport report;
  ParameterFill fill;
};

absl::StatusOr<DeferredWeights> LoadWeightsDeferred(torch::nn::Module& model,
                                                    checkpoint::NamedTensors tensors,
                                                    const std::string& source,
                                                    const ModelNames& names, ParameterFill init);

}  // namespace loom::modeling

#endif  // LOOM_MODELING_PRETRAINED_WEIGHTS_H_
