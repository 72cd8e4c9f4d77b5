#include "models/llama/pretrained.h"

#include <algorithm>
#include <filesystem>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "checkpoint/module_state.h"
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

}  // namespace

std::string LlamaLoadReport::Report() const {
  std::string out;
  if (!newly_initialized_keys.empty()) {
    absl::StrAppend(&out, "Some weights of LlamaForCausalLM were not initialized from ", source,
                    " and are newly initialized: [", absl::StrJoin(newly_initialized_keys, ", "),
                    "]");
  }
  if (!unused_keys.empty()) {
    absl::StrAppend(&out, out.empty() ? "" : "\n", "Some weights of ", source,
                    " were not used when initializing LlamaForCausalLM: [",
                    absl::StrJoin(unused_keys, ", "), "]");
  }
  return out;
}

absl::StatusOr<LlamaLoadReport> LoadLlamaWeights(LlamaForCausalLM& model,
                                                 const checkpoint::NamedTensors& tensors,
                                                 const std::string& source) {
  const checkpoint::NamedTensors folded =
      FoldTiedHead(tensors, model.config().tie_word_embeddings);
  std::set<std::string> model_keys;
  for (const auto& [name, tensor] : checkpoint::ModuleStateDict(model)) model_keys.insert(name);
  const bool any = std::any_of(folded.begin(), folded.end(),
                               [&](const auto& kv) { return model_keys.count(kv.first) > 0; });
  if (!any) {
    return absl::InvalidArgumentError(absl::StrCat(
        source, " holds none of LlamaForCausalLM's weights (e.g. ", kEmbedding,
        ", model.layers.0.self_attn.q_proj.weight); is it a Llama checkpoint?"));
  }
  checkpoint::LoadStateDictOptions non_strict;
  non_strict.strict = false;
  ASSIGN_OR_RETURN(checkpoint::LoadStateDictResult result,
                   checkpoint::LoadStateDict(model, folded, non_strict), "loading " + source);
  LlamaLoadReport report;
  report.source = source;
  report.newly_initialized_keys = result.missing_keys;
  report.unused_keys = result.unexpected_keys;
  std::sort(report.newly_initialized_keys.begin(), report.newly_initialized_keys.end());
  std::sort(report.unused_keys.begin(), report.unused_keys.end());
  return report;
}

absl::StatusOr<LoadedLlama> LoadLlamaForCausalLM(const std::string& folder,
                                                 const LlamaLoadOptions& options) {
  ASSIGN_OR_RETURN(LlamaConfig config, LlamaConfig::FromFile(folder + "/config.json"));
  LoadedLlama loaded;
  ASSIGN_OR_RETURN(loaded.model, LlamaForCausalLM::Create(config, options.seed));
  ASSIGN_OR_RETURN(checkpoint::LoadedWeights weights,
                   checkpoint::LoadModelWeights(folder, options.prefer_safetensors));
  ASSIGN_OR_RETURN(loaded.report, LoadLlamaWeights(*loaded.model, weights.tensors, weights.source));
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
