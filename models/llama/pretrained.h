// Loading a LlamaForCausalLM from an HF model folder and saving one, as transformers 4.41's
// from_pretrained / save_pretrained do.
//
// Contract:
//   LoadLlamaForCausalLM(folder, options):
//     1. reads <folder>/config.json (LlamaConfig::FromFile);
//     2. builds the model initialised from options.seed (InitLlamaWeights) — or, with
//        options.deferred, its parameters deferred (CreateDeferred) and the weights checked but
//        left in the (memory-mapped) files: the model's parameter_fill() copies each tensor in
//        when a strategy materialises its wrap unit (modeling::LoadWeightsDeferred);
//     3. reads the weights with checkpoint::LoadModelWeights (model.safetensors, a sharded
//        index — whose shards must all exist, else NotFound naming the missing file — or
//        pytorch_model.bin) and copies them in with LoadLlamaWeights;
//     4. reads generation_config.json into generation_config() when the folder has one.
//   LoadLlamaWeights(model, tensors, source) follows _load_pretrained_model:
//     - with tie_word_embeddings, lm_head.weight is the embedding's alias: it stands in for
//       model.embed_tokens.weight when a file lacks that, and is otherwise not loaded again;
//     - model keys the checkpoint lacks keep the model's initialisation and are listed in
//       newly_initialized_keys; checkpoint keys the model lacks in unused_keys;
//     - a shape mismatch is an InvalidArgument naming `source`; a checkpoint none of whose
//       tensors is a model key is an InvalidArgument (not a Llama checkpoint).
//   SaveLlamaForCausalLM(model, folder, options) writes config.json, generation_config.json and
//     the weights (HF's keys; model.safetensors, sharded with an index past
//     options.max_shard_size); returns the names of the files written, relative to `folder`.
//
// Example:
//   ASSIGN_OR_RETURN(LoadedLlama loaded, LoadLlamaForCausalLM(dir, {}));
//   if (std::string r = loaded.Report(); !r.empty()) LOG(WARNING) << r;
#ifndef LOOM_MODELS_LLAMA_PRETRAINED_H_
#define LOOM_MODELS_LLAMA_PRETRAINED_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "checkpoint/model_weights.h"
#include "checkpoint/named_tensors.h"
#include "modeling/pretrained_weights.h"
#include "models/llama/llama_for_causal_lm.h"

namespace loom::models::llama {

struct LlamaLoadOptions {
  uint64_t seed = 42;  // initialises the weights the checkpoint does not provide
  bool prefer_safetensors = true;
  // Sharded construction (DeepSpeed's zero.Init, FSDP's cpu_ram_efficient_loading): no
  // parameter gets its bytes here.
  bool deferred = false;
};

// HF's load warnings (modeling/pretrained_weights.h).
using LlamaLoadReport = modeling::WeightsLoadReport;

struct LoadedLlama {
  std::shared_ptr<LlamaForCausalLM> model;
  LlamaLoadReport report;
  std::string Report() const { return report.Report(); }
};

absl::StatusOr<LoadedLlama> LoadLlamaForCausalLM(const std::string& folder,
                                                 const LlamaLoadOptions& options = {});

absl::StatusOr<LlamaLoadReport> LoadLlamaWeights(LlamaForCausalLM& model,
                                                 const checkpoint::NamedTensors& tensors,
                                                 const std::string& source);

absl::StatusOr<std::vector<std::string>> SaveLlamaForCausalLM(
    const LlamaForCausalLM& model, const std::string& folder,
    const checkpoint::SaveModelWeightsOptions& options = {});

}  // namespace loom::models::llama

#endif  // LOOM_MODELS_LLAMA_PRETRAINED_H_
