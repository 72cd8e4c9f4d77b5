#include "models/llama/pretrained.h"

#include <filesystem>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "modeling/pretrained_weights.h"
#include "modeling/save_pretrained.h"

namespace loom::models::llama {
namespace {

constexpr char kEmbedding[] = "model.embed_tokens.weight";
constexpr char kHead[] = "lm_head.weight";

// The checkpoint with a tied head folded into the embedding.
checkpoint::NamedTensors FoldTiedHead(const checkpoint::NamedTensors& tensors, bool tied) {
  if (!tied) return tensors;
  const bool has_embedding = checkpoint::FindTensor(tensors, kEmbedding) != nullptr;
  checkpoint::NamedTensors out;
  for (const auto& [name, tensor] : tensors) {
    if (name != kHead) {
      out.emplace_back(name, tensor);
    } else if (!has_embedding) {
      out.emplace_back(kEmbedding, tensor);
    }
  }
  return out;
}

modeling::ModelNames Names() {
  return {"LlamaForCausalLM", "Llama",
          absl::StrCat(kEmbedding, ", model.layers.0.self_attn.q_proj.weight")};
}

}  // namespace

absl::StatusOr<LlamaLoadReport> LoadLlamaWeights(LlamaForCausalLM& model,
                                                 const checkpoint::NamedTensors& tensors,
                                                 const std::string& source) {
  return modeling::LoadWeightsNonStrict(
      model, FoldTiedHead(tensors, model.config().tie_word_embeddings), source, Names());
}

absl::StatusOr<LoadedLlama> LoadLlamaForCausalLM(const std::string& folder,
                                                 const LlamaLoadOptions& options) {
  ASSIGN_OR_RETURN(LlamaConfig config, LlamaConfig::FromFile(folder + "/config.json"));
  LoadedLlama loaded;
  ASSIGN_OR_RETURN(checkpoint::LoadedWeights weights,
                   checkpoint::LoadModelWeights(folder, options.prefer_safetensors));
  if (options.deferred) {
    ASSIGN_OR_RETURN(loaded.model, LlamaForCausalLM::CreateDeferred(config, options.seed));
    ASSIGN_OR_RETURN(
        modeling::DeferredWeights deferred,
        modeling::LoadWeightsDeferred(
            *loaded.model, FoldTiedHead(weights.tensors, config.tie_word_embeddings),
            weights.source, Names(), loaded.model->InitFill()));
    loaded.report = std::move(deferred.report);
    loaded.model->set_parameter_fill(std::move(deferred.fill));
  } else {
    ASSIGN_OR_RETURN(loaded.model, LlamaForCausalLM::Create(config, options.seed));
    ASSIGN_OR_RETURN(loaded.report,
                     LoadLlamaWeights(*loaded.model, weights.tensors, weights.source));
  }
  const std::string generation = folder + "/generation_config.json";
  if (std::filesystem::exists(generation)) {
    ASSIGN_OR_RETURN(loaded.model->generation_config(),
                     modeling::GenerationConfig::FromFile(generation));
  }
  return loaded;
}

absl::StatusOr<std::vector<std::string>> SaveLlamaForCausalLM(
    const LlamaForCausalLM& model, const std::string& folder,
    const checkpoint::SaveModelWeightsOptions& options) {
  modeling::SavePretrainedOptions save;
  save.weights_options = options;
  return modeling::SavePretrained(model, folder, save);
}

}  // namespace loom::models::llama
