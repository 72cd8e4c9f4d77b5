// Loading a T5ForConditionalGeneration from an HF model folder and saving one, as transformers
// 4.41's from_pretrained / save_pretrained do.
//
// Contract:
//   LoadT5ForConditionalGeneration(folder, options):
//     1. reads <folder>/config.json (T5Config::FromFile);
//     2. builds the model initialised from options.seed (HF's _init_weights);
//     3. reads the weights with checkpoint::LoadModelWeights (model.safetensors, a sharded
//        index, or pytorch_model.bin) and copies them in with LoadT5Weights;
//     4. reads generation_config.json into generation_config() when the folder has one.
//   LoadT5Weights(model, tensors, source) follows _load_pretrained_model for T5:
//     - the tied aliases encoder.embed_tokens.weight and decoder.embed_tokens.weight (and
//       lm_head.weight when tie_word_embeddings) are the `shared` weight: they stand in for
//       shared.weight when a file lacks it and are otherwise not loaded again;
//     - decoder.block.0.layer.1.EncDecAttention.relative_attention_bias.weight, which old
//       checkpoints carry, is ignored (HF's _keys_to_ignore_on_load_unexpected);
//     - model keys the checkpoint lacks keep the model's initialisation and are listed in
//       newly_initialized_keys; checkpoint keys the model lacks in unused_keys;
//     - a shape mismatch is an InvalidArgument naming `source` (torch's "size mismatch" lines);
//       a checkpoint none of whose tensors is a model key is an InvalidArgument (not a T5
//       checkpoint).
//   SaveT5ForConditionalGeneration(model, folder, options) writes config.json (ConfigJson()),
//     generation_config.json and the weights (ModuleStateDict: HF's save keys, model.safetensors by default); returns
//     the names of the files written, relative to `folder`.
//
// Example:
//   ASSIGN_OR_RETURN(LoadedT5 loaded, LoadT5ForConditionalGeneration(dir, {}));
//   if (std::string r = loaded.Report(); !r.empty()) LOG(WARNING) << r;
#ifndef LOOM_MODELS_T5_PRETRAINED_H_
#define LOOM_MODELS_T5_PRETRAINED_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "checkpoint/model_weights.h"
#include "checkpoint/named_tensors.h"
#include "modeling/pretrained_weights.h"
#include "models/t5/t5_for_conditional_generation.h"

namespace loom::models::t5 {

struct T5LoadOptions {
  uint64_t seed = 42;  // initialises the weights the checkpoint does not provide
  bool prefer_safetensors = true;
};

// HF's load warnings (modeling/pretrained_weights.h).
using T5LoadReport = modeling::WeightsLoadReport;

struct LoadedT5 {
  std::shared_ptr<T5ForConditionalGeneration> model;
  T5LoadReport report;
  std::string Report() const { return report.Report(); }
};

absl::StatusOr<LoadedT5> LoadT5ForConditionalGeneration(const std::string& folder,
                                                        const T5LoadOptions& options = {});

absl::StatusOr<T5LoadReport> LoadT5Weights(T5ForConditionalGeneration& model,
                                           const checkpoint::NamedTensors& tensors,
                                           const std::string& source);

absl::StatusOr<std::vector<std::string>> SaveT5ForConditionalGeneration(
    const T5ForConditionalGeneration& model, const std::string& folder,
    const checkpoint::SaveModelWeightsOptions& options = {});

}  // namespace loom::models::t5

#endif  // LOOM_MODELS_T5_PRETRAINED_H_
