// Loading a BertForSequenceClassification from an HF model folder and saving one, as
// from_pretrained / save_pretrained do (transformers 4.38-4.41).
//
// Contract:
//   LoadBertForSequenceClassification(folder, options):
//     1. reads <folder>/config.json (BertConfig::FromFile) and applies the overrides in
//        `options` (num_labels, labels, finetuning_task, problem_type — AutoConfig kwargs;
//        attn_implementation — from_pretrained's argument, which wins over config.json's);
//     2. builds the model initialised from options.seed (HF's _init_weights); the attention
//        implementation is resolved as bert_model.h says (sdpa asked for on LibTorch < 2.1.1
//        is FailedPrecondition naming attn_implementation);
//     3. reads the weights with checkpoint::LoadModelWeights (model.safetensors, a sharded
//        model.safetensors.index.json, or pytorch_model.bin; prefer_safetensors as there) and
//        copies them in with LoadBertWeights.
//   LoadBertWeights(model, tensors, source, ignore_mismatched_sizes) follows
//     _load_pretrained_model:
//     - a checkpoint with no "bert." key is a bare BertModel: every key gets "bert." prefixed;
//     - the non-persistent buffers old files carry (embeddings.position_ids,
//       embeddings.token_type_ids) are dropped silently;
//     - model keys the checkpoint lacks keep the model's initialisation and are reported in
//       newly_initialized_keys (e.g. classifier.* when fine-tuning from a BertForPreTraining
//       checkpoint); checkpoint keys the model lacks (cls.*) are reported in unused_keys;
//     - a tensor whose shape differs from the model's is an InvalidArgument naming `source`,
//       listing every such key with both shapes (torch's "size mismatch for ..." lines) and
//       pointing at ignore_mismatched_sizes; with ignore_mismatched_sizes those keys are left
//       initialised and reported in mismatched_keys;
//     - a checkpoint none of whose tensors is a model key is an InvalidArgument naming
//       `source` (HF would load nothing and only warn; loom refuses a folder that cannot be a
//       BERT checkpoint).
//     Report() words what HF's warnings say ("" when everything was loaded).
//   InitNewlyInitializedWeights(model, report, seed): from_pretrained's fast init
//     (transformers 4.38 `_load_pretrained_model` without ignore_mismatched_sizes): the modules
//     owning report.newly_initialized_keys are initialised afresh from a generator seeded with
//     `seed`, the first draw going to the first of them — the values transformers gives them
//     when set_seed(seed) ran just before from_pretrained, as in HF's run_glue.py (its other
//     modules draw nothing). LoadBertForSequenceClassification does this unless
//     ignore_mismatched_sizes (then HF initialises every module, as Create(config, seed) did).
//   SaveBertForSequenceClassification(model, folder, options) writes config.json
//     (model.ConfigJson()) and the weights (checkpoint::SaveModelWeights of ModuleStateDict:
//     HF's keys, model.safetensors by default); returns the files written.
//
// Example:
//   BertLoadOptions o;
//   o.num_labels = 3;
//   o.finetuning_task = "mnli";
//   ASSIGN_OR_RETURN(LoadedBert loaded, LoadBertForSequenceClassification(dir, o));
//   if (std::string r = loaded.Report(); !r.empty()) LOG(WARNING) << r;
#ifndef LOOM_MODELS_BERT_PRETRAINED_H_
#define LOOM_MODELS_BERT_PRETRAINED_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "checkpoint/model_weights.h"
#include "checkpoint/named_tensors.h"
#include "models/bert/bert_config.h"
#include "models/bert/bert_for_sequence_classification.h"

namespace loom::models::bert {

struct BertLoadOptions {
  std::optional<int64_t> num_labels;
  // Set together (BertConfig::set_labels); applied after num_labels.
  std::optional<std::map<int64_t, std::string>> id2label;
  std::optional<std::map<std::string, int64_t>> label2id;
  std::optional<std::string> finetuning_task;
  std::optional<std::string> problem_type;
  // from_pretrained(..., attn_implementation=...); nullopt keeps config.json's request or lets
  // the model choose (sdpa where LibTorch has it).
  std::optional<AttnImplementation> attn_implementation;
  bool ignore_mismatched_sizes = false;
  uint64_t seed = 42;  // initialises the weights the checkpoint does not provide
  bool prefer_safetensors = true;
};

struct MismatchedKey {
  std::string key;
  std::vector<int64_t> checkpoint_shape;
  std::vector<int64_t> model_shape;
};

struct BertLoadReport {
  std::string source;                               // the weights file or index read
  std::vector<std::string> newly_initialized_keys;  // sorted
  std::vector<std::string> unused_keys;             // sorted, as named in the checkpoint
  std::vector<MismatchedKey> mismatched_keys;       // sorted by key

  std::string Report() const;
};

struct LoadedBert {
  std::shared_ptr<BertForSequenceClassification> model;
  BertLoadReport report;
  std::string Report() const { return report.Report(); }
};

absl::StatusOr<LoadedBert> LoadBertForSequenceClassification(const std::string& folder,
                                                             const BertLoadOptions& options = {});

absl::StatusOr<BertLoadReport> LoadBertWeights(BertForSequenceClassification& model,
                                               const checkpoint::NamedTensors& tensors,
                                               const std::string& source,
                                               bool ignore_mismatched_sizes = false);

void InitNewlyInitializedWeights(BertForSequenceClassification& model, const BertLoadReport& report,
                                 uint64_t seed);

absl::StatusOr<std::vector<std::string>> SaveBertForSequenceClassification(
    const BertForSequenceClassification& model, const std::string& folder,
    const checkpoint::SaveModelWeightsOptions& options = {});

}  // namespace loom::models::bert

#endif  // LOOM_MODELS_BERT_PRETRAINED_H_
