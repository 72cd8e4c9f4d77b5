#include "models/bert/pretrained.h"

#include <torch/types.h>

#include <algorithm>
#include <exception>
#include <set>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "base/torch_status.h"
#include "checkpoint/module_state.h"
#include "modeling/save_pretrained.h"
#include "models/bert/bert_model.h"

namespace loom::models::bert {
namespace {

constexpr char kBasePrefix[] = "bert.";
constexpr char kClassName[] = "BertForSequenceClassification";

std::string TorchSize(const std::vector<int64_t>& shape) {
  return absl::StrCat("torch.Size([", absl::StrJoin(shape, ", "), "])");
}

// Python's repr of a list of str.
std::string PyList(const std::vector<std::string>& keys) {
  return absl::StrCat("[",
                      absl::StrJoin(keys, ", ",
                                    [](std::string* out, const std::string& k) {
                                      absl::StrAppend(out, "'", k, "'");
                                    }),
                      "]");
}

bool IsDroppedBuffer(const std::string& key) {
  return key == "bert.embeddings.position_ids" || key == "bert.embeddings.token_type_ids";
}

}  // namespace

std::string BertLoadReport::Report() const {
  std::vector<std::string> parts;
  if (!unused_keys.empty()) {
    parts.push_back(absl::StrCat(
        "Weights in the checkpoint ", source, " that ", kClassName,
        " does not use: ", PyList(unused_keys),
        "\n- Expected when the checkpoint was trained for another task or architecture (for "
        "example a BertForPreTraining checkpoint loaded for sequence classification)."
        "\n- Not expected when the checkpoint should hold exactly this model."));
  }
  if (!newly_initialized_keys.empty()) {
    parts.push_back(
        absl::StrCat("Weights of ", kClassName, " missing from the checkpoint ", source,
                     ", freshly initialised: ", PyList(newly_initialized_keys),
                     "\nTrain the model on a down-stream task before using it for predictions."));
  }
  if (!mismatched_keys.empty()) {
    std::string lines;
    for (const MismatchedKey& m : mismatched_keys) {
      absl::StrAppend(&lines, "\n- ", m.key, ": ", TorchSize(m.checkpoint_shape),
                      " in the checkpoint, ", TorchSize(m.model_shape), " in the model");
    }
    parts.push_back(absl::StrCat("Weights of ", kClassName,
                                 " freshly initialised because their "
                                 "shapes differ from the checkpoint ",
                                 source, ":", lines,
                                 "\nTrain the model on a down-stream task before using it for "
                                 "predictions."));
  }
  return absl::StrJoin(parts, "\n");
}

absl::StatusOr<BertLoadReport> LoadBertWeights(BertForSequenceClassification& model,
                                               const checkpoint::NamedTensors& tensors,
                                               const std::string& source,
                                               bool ignore_mismatched_sizes) {
  BertLoadReport report;
  report.source = source;
  const bool has_prefix = std::any_of(tensors.begin(), tensors.end(), [](const auto& kv) {
    return absl::StartsWith(kv.first, kBasePrefix);
  });
  const checkpoint::NamedTensors expected = checkpoint::ModuleStateDict(model);
  std::map<std::string, const at::Tensor*> model_tensors;
  for (const auto& [name, tensor] : expected) model_tensors[name] = &tensor;

  checkpoint::NamedTensors to_load;
  std::set<std::string> provided;
  std::vector<std::string> size_errors;
  for (const auto& [name, tensor] : tensors) {
    const std::string key = has_prefix ? name : kBasePrefix + name;
    if (IsDroppedBuffer(key)) continue;
    auto it = model_tensors.find(key);
    if (it == model_tensors.end()) {
      report.unused_keys.push_back(name);
      continue;
    }
    if (!tensor.sizes().equals(it->second->sizes())) {
      MismatchedKey m{key, tensor.sizes().vec(), it->second->sizes().vec()};
      size_errors.push_back(absl::StrCat(
          "size mismatch for ", key, ": copying a param with shape ", TorchSize(m.checkpoint_shape),
          " from checkpoint, the shape in current model is ", TorchSize(m.model_shape), "."));
      report.mismatched_keys.push_back(std::move(m));
      provided.insert(key);
      continue;
    }
    provided.insert(key);
    to_load.emplace_back(key, tensor);
  }
  if (!size_errors.empty() && !ignore_mismatched_sizes) {
    return absl::InvalidArgumentError(absl::StrCat(
        source, ": Error(s) in loading state_dict for ", kClassName, ":\n\t",
        absl::StrJoin(size_errors, "\n\t"),
        "\n\tSet ignore_mismatched_sizes (BertLoadOptions) to initialise these weights afresh, "
        "or make num_labels match the checkpoint."));
  }
  if (to_load.empty() && report.mismatched_keys.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        source, ": none of its ", tensors.size(), " tensors is a weight of ", kClassName,
        " (expected keys like bert.embeddings.word_embeddings.weight); is this a BERT "
        "checkpoint?"));
  }
  for (const auto& [name, tensor] : expected) {
    if (!provided.count(name)) report.newly_initialized_keys.push_back(name);
  }
  std::sort(report.newly_initialized_keys.begin(), report.newly_initialized_keys.end());
  std::sort(report.unused_keys.begin(), report.unused_keys.end());
  std::sort(report.mismatched_keys.begin(), report.mismatched_keys.end(),
            [](const MismatchedKey& a, const MismatchedKey& b) { return a.key < b.key; });
  checkpoint::LoadStateDictOptions load_options;
  load_options.strict = false;
  RETURN_IF_ERROR_CTX(checkpoint::LoadStateDict(model, to_load, load_options).status(), source);
  return report;
}

void InitNewlyInitializedWeights(BertForSequenceClassification& model, const BertLoadReport& report,
                                 uint64_t seed) {
  std::set<std::string> modules;  // "classifier.weight" -> "classifier"
  for (const std::string& key : report.newly_initialized_keys) {
    const size_t dot = key.rfind('.');
    modules.insert(dot == std::string::npos ? "" : key.substr(0, dot));
  }
  if (!modules.empty()) InitBertModules(model, model.config(), seed, modules);
}

absl::StatusOr<LoadedBert> LoadBertForSequenceClassification(const std::string& folder,
                                                             const BertLoadOptions& options) {
  const std::string config_path = folder + "/config.json";
  ASSIGN_OR_RETURN(BertConfig config, BertConfig::FromFile(config_path));
  if (options.num_labels.has_value()) {
    if (*options.num_labels < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("num_labels must be >= 1, got ", *options.num_labels));
    }
    config.set_num_labels(*options.num_labels);
  }
  if (options.id2label.has_value() || options.label2id.has_value()) {
    if (!options.id2label.has_value() || !options.label2id.has_value()) {
      return absl::InvalidArgumentError("set id2label and label2id together");
    }
    RETURN_IF_ERROR(config.set_labels(*options.id2label, *options.label2id));
  }
  if (options.finetuning_task.has_value()) config.finetuning_task = options.finetuning_task;
  if (options.problem_type.has_value())
    RETURN_IF_ERROR(config.set_problem_type(options.problem_type));
  // from_pretrained's attn_implementation argument overrides what config.json asked for.
  if (options.attn_implementation.has_value()) {
    config.attn_implementation = options.attn_implementation;
  }
  RETURN_IF_ERROR(config.Validate(config_path));

  LoadedBert loaded;
  ASSIGN_OR_RETURN(loaded.model, BertForSequenceClassification::Create(config, options.seed));
  ASSIGN_OR_RETURN(checkpoint::LoadedWeights weights,
                   checkpoint::LoadModelWeights(folder, options.prefer_safetensors));
  ASSIGN_OR_RETURN(loaded.report, LoadBertWeights(*loaded.model, weights.tensors, weights.source,
                                                  options.ignore_mismatched_sizes));
  if (!options.ignore_mismatched_sizes) {
    InitNewlyInitializedWeights(*loaded.model, loaded.report, options.seed);
  }
  return loaded;
}

absl::StatusOr<std::vector<std::string>> SaveBertForSequenceClassification(
    const BertForSequenceClassification& model, const std::string& folder,
    const checkpoint::SaveModelWeightsOptions& options) {
  modeling::SavePretrainedOptions save;
  save.weights_options = options;
  return modeling::SavePretrained(model, folder, save);
}

}  // namespace loom::models::bert
