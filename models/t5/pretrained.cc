#include "models/t5/pretrained.h"

#include <algorithm>
#include <exception>
#include <filesystem>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "base/torch_status.h"
#include "checkpoint/module_state.h"
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

std::string T5LoadReport::Report() const {
  std::string out;
  if (!newly_initialized_keys.empty()) {
    absl::StrAppend(&out, "Some weights of T5ForConditionalGeneration were not initialized from ",
                    source, " and are newly initialized: [",
                    absl::StrJoin(newly_initialized_keys, ", "), "]");
  }
  if (!unused_keys.empty()) {
    absl::StrAppend(&out, out.empty() ? "" : "\n", "Some weights of ", source,
                    " were not used when initializing T5ForConditionalGeneration: [",
                    absl::StrJoin(unused_keys, ", "), "]");
  }
  return out;
}

absl::StatusOr<T5LoadReport> LoadT5Weights(T5ForConditionalGeneration& model,
                                           const checkpoint::NamedTensors& tensors,
                                           const std::string& source) {
  const checkpoint::NamedTensors folded =
      FoldTiedAliases(tensors, model.config().tie_word_embeddings);
  std::set<std::string> model_keys;
  for (const auto& [name, tensor] : checkpoint::ModuleStateDict(model)) model_keys.insert(name);
  const bool any = std::any_of(folded.begin(), folded.end(),
                               [&](const auto& kv) { return model_keys.count(kv.first) > 0; });
  if (!any) {
    return absl::InvalidArgumentError(absl::StrCat(
        source, " holds none of T5ForConditionalGeneration's weights (e.g. shared.weight, "
                "encoder.block.0.layer.0.SelfAttention.q.weight); is it a T5 checkpoint?"));
  }
  checkpoint::LoadStateDictOptions non_strict;
  non_strict.strict = false;
  ASSIGN_OR_RETURN(checkpoint::LoadStateDictResult result,
                   checkpoint::LoadStateDict(model, folded, non_strict), "loading " + source);
  T5LoadReport report;
  report.source = source;
  report.newly_initialized_keys = result.missing_keys;
  report.unused_keys = result.unexpected_keys;
  std::sort(report.newly_initialized_keys.begin(), report.newly_initialized_keys.end());
  std::sort(report.unused_keys.begin(), report.unused_keys.end());
  return report;
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
