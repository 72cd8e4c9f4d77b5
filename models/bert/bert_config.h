// BertConfig: the hyper-parameters of a BERT model as HF transformers' BertConfig
// (transformers 4.38-4.41) reads them from and writes them to config.json.
//
// Contract:
//   BertConfig::FromJson(text, source) / FromFile(path) read an HF config.json. Known keys are
//     type-checked (an error names the key and `source`, and says what was expected); keys
//     BertConfig does not know (torch_dtype, _name_or_path, gradient_checkpointing, ...) are
//     kept in `extra` and written back unchanged. As HF's PretrainedConfig:
//       - id2label present: num_labels() == len(id2label) (a "num_labels" key is ignored);
//         label2id defaults to the inverse of id2label;
//       - id2label absent: num_labels (default 2) makes id2label {i: "LABEL_i"};
//       - classifier_dropout null means hidden_dropout_prob (ClassifierDropout());
//       - model_type must be "bert" when present; position_embedding_type other than
//         "absolute" is Unimplemented naming the key; problem_type must be null,
//         "regression", "single_label_classification" or "multi_label_classification".
//     hidden_act accepts the names ACT2FN maps that loom implements: gelu (exact erf),
//     gelu_python, gelu_new, gelu_fast, gelu_pytorch_tanh, quick_gelu, relu, silu, swish, tanh,
//     sigmoid, linear; others are Unimplemented naming hidden_act.
//   Validate(source) checks the sizes (positive; hidden_size a multiple of
//     num_attention_heads; pad_token_id inside the vocabulary; dropouts in [0, 1]).
//   ToJson() is save_pretrained's text: json.dumps(to_diff_dict(), indent=2, sort_keys=True)
//     + "\n" — BertConfig's own keys always, model_type "bert", transformers_version
//     kTransformersVersion, and the PretrainedConfig keys that differ from their defaults
//     (architectures, finetuning_task, problem_type, id2label/label2id when not the default two
//     labels); id2label keys in numeric order, as Python sorts int keys.
//   Setters (set_num_labels, set_labels, set_problem_type) keep id2label/label2id consistent as
//     HF's num_labels setter does; callers (run_glue) use them before building the model.
//   attn_implementation is PretrainedConfig's _attn_implementation_internal (transformers
//     4.41): the attention the user asked for, nullopt meaning "choose" (sdpa where LibTorch has
//     at::scaled_dot_product_attention, eager otherwise; BertModel resolves it). As in 4.41 it
//     is read from a "_attn_implementation" key of config.json ("eager" or "sdpa";
//     "flash_attention_2" is Unimplemented, other names InvalidArgument) and never written:
//     to_dict drops it. Keys a newer transformers writes about it (e.g.
//     "_attn_implementation_autoset") are unknown keys, kept in `extra` as read.
//
// Example:
//   ASSIGN_OR_RETURN(BertConfig config, BertConfig::FromFile(dir + "/config.json"));
//   config.set_num_labels(3);
//   config.finetuning_task = "mnli";
//   RETURN_IF_ERROR(base::WriteFileAtomically(out + "/config.json", config.ToJson()));
#ifndef LOOM_MODELS_BERT_BERT_CONFIG_H_
#define LOOM_MODELS_BERT_BERT_CONFIG_H_

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "modeling/config_json.h"

namespace loom::models::bert {

// The transformers version loom's files claim (the release whose behaviour loom reproduces).
inline constexpr absl::string_view kTransformersVersion = modeling::kTransformersVersion;

inline constexpr absl::string_view kRegression = "regression";
inline constexpr absl::string_view kSingleLabelClassification = "single_label_classification";
inline constexpr absl::string_view kMultiLabelClassification = "multi_label_classification";

// transformers' attention implementations that loom's BERT has (BERT_SELF_ATTENTION_CLASSES):
// kEager is BertSelfAttention's matmul/softmax formula, kSdpa BertSdpaSelfAttention's
// torch.nn.functional.scaled_dot_product_attention.
enum class AttnImplementation { kEager, kSdpa };

// "eager" / "sdpa", the names transformers uses.
absl::string_view AttnImplementationName(AttnImplementation implementation);
// The inverse; InvalidArgument naming attn_implementation for unknown names, Unimplemented for
// "flash_attention_2".
absl::StatusOr<AttnImplementation> ParseAttnImplementation(absl::string_view name);

struct BertConfig {
  int64_t vocab_size = 30522;
  int64_t hidden_size = 768;
  int64_t num_hidden_layers = 12;
  int64_t num_attention_heads = 12;
  int64_t intermediate_size = 3072;
  std::string hidden_act = "gelu";
  double hidden_dropout_prob = 0.1;
  double attention_probs_dropout_prob = 0.1;
  int64_t max_position_embeddings = 512;
  int64_t type_vocab_size = 2;
  double initializer_range = 0.02;
  double layer_norm_eps = 1e-12;
  std::optional<int64_t> pad_token_id = 0;
  std::string position_embedding_type = "absolute";
  bool use_cache = true;
  std::optional<double> classifier_dropout;

  std::map<int64_t, std::string> id2label = {{0, "LABEL_0"}, {1, "LABEL_1"}};
  std::map<std::string, int64_t> label2id = {{"LABEL_0", 0}, {"LABEL_1", 1}};
  std::optional<std::string> problem_type;
  std::optional<std::string> finetuning_task;
  std::optional<std::vector<std::string>> architectures;
  // What the user asked for (see the contract); nullopt chooses.
  std::optional<AttnImplementation> attn_implementation;

  // Keys this struct does not model, written back as read.
  nlohmann::json extra = nlohmann::json::object();

  int64_t num_labels() const { return static_cast<int64_t>(id2label.size()); }
  double ClassifierDropout() const {
    return classifier_dropout.has_value() ? *classifier_dropout : hidden_dropout_prob;
  }

  // HF's num_labels setter: a different count resets the maps to {i: "LABEL_i"}.
  void set_num_labels(int64_t num_labels);
  // Both maps at once (run_glue's label_to_id); InvalidArgument when they are not inverse of
  // each other or ids are not 0..n-1.
  absl::Status set_labels(const std::map<int64_t, std::string>& id2label,
                          const std::map<std::string, int64_t>& label2id);
  // nullopt or one of the three problem types; InvalidArgument names problem_type otherwise.
  absl::Status set_problem_type(std::optional<std::string> problem_type);

  static absl::StatusOr<BertConfig> FromJson(absl::string_view text, absl::string_view source);
  static absl::StatusOr<BertConfig> FromFile(const std::string& path);

  absl::Status Validate(absl::string_view source) const;

  nlohmann::ordered_json ToJsonValue() const;
  std::string ToJson() const;
};

}  // namespace loom::models::bert

#endif  // LOOM_MODELS_BERT_BERT_CONFIG_H_
