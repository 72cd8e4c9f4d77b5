#include "models/t5/pretrained.h"

#include <exception>
#include <filesystem>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "base/torch_status.h"
#include "modeling/pretrained_weights.h"
#include "modeling/save_pretrained.h"

namespace loom::models::t5 {
namespace {

constexpr char kIgnoredKey[] = "decoder.block.0.layer.1.EncDecAttention.relative_attention_bias.weight";

// The checkpoint with the tied aliases folded into shared.weight and HF's ignored key dropped.
checkpoint::NamedTensors FoldTiedAliases(const checkpoint::NamedTensors& tensors,
                                         bool tie_word_embeddings) {
  std::set<std::string> aliases = {"encoder.embed_tokens.weight", "decoder.embed_tokens.weight"};
  if (tie_word_embeddings) aliases.insert("lm_head.weight");
  const bool has_shared = checkpoint::FindTensor(tensors, "shared.weight") != nullptr;
  checkpoint::NamedTensors out;
  bool shared_taken = has_shared;
  for (const auto& [name, tensor] : tensors) {
    if (name == kIgnoredKey) continue;
    if (aliases.count(name)) {
      if (!shared_taken && name != "lm_head.weight") {
        out.emplace_back("shared.weight", tensor);
        shared_taken = true;
      }
      continue;
    }
    out.emplace_back(name, tensor);
  }
  return out;
}

}  // namespace

absl::StatusOr<T5LoadReport> LoadT5Weights(T5ForConditionalGeneration& model,
                                           const checkpoint::NamedTensors& tensors,
                                           const std::string& source) {
  return modeling::LoadWeightsNonStrict(
      model, FoldTiedAliases(tensors, model.config().tie_word_embeddings), source,
      {"T5ForConditionalGeneration", "T5",
       "shared.weight, encoder.block.0.layer.0.SelfAttention.q.weight"});
}

absl::StatusOr<LoadedT5> LoadT5ForConditionalGeneration(const std::string& folder,
                                                        const T5LoadOptions& options) {
  ASSIGN_OR_RETURN(T5Config config, T5Config::FromFile(folder + "/config.json"));
  LoadedT5 loaded;
  ASSIGN_OR_RETURN(loaded.model, T5ForConditionalGeneration::Create(config, options.seed));
  ASSIGN_OR_RETURN(checkpoint::LoadedWeights weights,
                   checkpoint::LoadModelWeights(folder, options.prefer_safetensors));
  ASSIGN_OR_RETURN(loaded.report, LoadT5Weights(*loaded.model, weights.tensors, weights.source));
  const std::string generation = folder + "/generation_config.json";
  if (std::filesystem::exists(generation)) {
    ASSIGN_OR_RETURN(loaded.model->generation_config(),
                     modeling::GenerationConfig::FromFile(generation));
  }
  return loaded;
}

absl::StatusOr<std::vector<std::string>> SaveT5ForConditionalGeneration(
    const T5ForConditionalGeneration& model, const std::string& folder,
    const checkpoint::SaveModelWeightsOptions& options) {
  modeling::SavePretrainedOptions save;
  save.weights_options = options;
  return modeling::SavePretrained(model, folder, save);
}

}  // namespace loom::models::t5
