// BertForSequenceClassification: HF transformers' class of that name (4.38-4.41) under loom's
// model contract (trainer/model.h): BertModel "bert", dropout (classifier_dropout, or
// hidden_dropout_prob when null) on the pooled output, Linear "classifier" (hidden ->
// num_labels). Its state dict is exactly HF's persistent keys: bert.* (bert_model.h) then
// classifier.weight, classifier.bias.
//
// Contract:
//   Create(config, seed) validates the config (BertConfig::Validate) and returns a model
//     initialised as HF's _init_weights from `seed` (InitBertWeights). config.attn_implementation
//     is resolved as bert_model.h says (an sdpa request on LibTorch < 2.1.1 is
//     FailedPrecondition) and config() holds the resolved value (never saved to config.json).
//   Forward(batch) reads input_ids (required, [B,S] integer), attention_mask, token_type_ids,
//     position_ids (optional, [B,S]) and labels (optional) and returns outputs {"logits"
//     [B, num_labels]} and, with labels, the loss as HF computes it:
//       problem_type null: num_labels == 1 -> "regression"; labels int64/int32 ->
//         "single_label_classification"; otherwise "multi_label_classification" — and, as HF,
//         the inferred problem_type is stored in the config (so it is saved in config.json);
//       regression: MSE(logits.squeeze(), labels.squeeze()) (num_labels == 1) else
//         MSE(logits, labels); single label: cross entropy of logits.view(-1, num_labels) and
//         labels.view(-1); multi label: BCE with logits. Regression and multi-label labels are
//         used as given when they are floating point of 32 bits or fewer (as HF does; not cast
//         to the logits' dtype), others (float64, integers) as float32.
//     Inputs that do not fit (missing input_ids, wrong ranks or shapes, ids out of range,
//     sequences longer than max_position_embeddings, ...) throw std::invalid_argument with the
//     message TryForward returns; the Trainer turns that into a Status.
//   TryForward(batch) is Forward returning InvalidArgument instead of throwing.
//   FloatingPointOps(batch) = 6 * input_ids.numel() * (parameters not in an nn.Embedding),
//     HF's floating_point_ops(exclude_embeddings=True).
//   ConfigJson() = config with architectures ["BertForSequenceClassification"] and torch_dtype
//     (the parameters' dtype, e.g. "float32"), as save_pretrained writes it.
//
// Example:
//   ASSIGN_OR_RETURN(auto model, BertForSequenceClassification::Create(config, /*seed=*/42));
//   modeling::ModelOutput out = model->Forward({{"input_ids", ids}, {"labels", labels}});
#ifndef LOOM_MODELS_BERT_BERT_FOR_SEQUENCE_CLASSIFICATION_H_
#define LOOM_MODELS_BERT_BERT_FOR_SEQUENCE_CLASSIFICATION_H_

#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/linear.h>

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "data/batch.h"
#include "modeling/model.h"
#include "models/bert/bert_config.h"
#include "models/bert/bert_model.h"

namespace loom::models::bert {

class BertForSequenceClassification : public modeling::Model {
 public:
  // Builds the modules with LibTorch's default initialisation; prefer Create(). `config` must
  // have passed Validate().
  explicit BertForSequenceClassification(BertConfig config);

  static absl::StatusOr<std::shared_ptr<BertForSequenceClassification>> Create(
      const BertConfig& config, uint64_t seed);

  modeling::ModelOutput Forward(const data::Batch& inputs) override;
  absl::StatusOr<modeling::ModelOutput> TryForward(const data::Batch& inputs);

  double FloatingPointOps(const data::Batch& inputs) const override;
  std::string ConfigJson() const override;
  // HF's get_input_embeddings(): bert.embeddings.word_embeddings.
  modeling::ForwardHooks* InputEmbeddingHooks() override {
    return &bert->embeddings->word_embeddings->hooks;
  }
  // HF's BertPreTrainedModel.supports_gradient_checkpointing: every encoder layer.
  absl::Status EnableGradientCheckpointing(const modeling::CheckpointingOptions& options) override {
    bert->encoder->gradient_checkpointing = options;
    return absl::OkStatus();
  }
  void DisableGradientCheckpointing() override { bert->encoder->gradient_checkpointing.reset(); }
  std::vector<std::string> UnitClassNames() const override { return {"BertLayer"}; }
  absl::Status SetUnitRunner(modeling::UnitRunner* runner) override {
    bert->encoder->unit_runner = runner;
    return absl::OkStatus();
  }
  bool IsGradientCheckpointing() const override {
    return bert->encoder->gradient_checkpointing.has_value();
  }

  const BertConfig& config() const { return config_; }
  // For callers that relabel after construction (run_glue sets label2id/id2label); the
  // architecture sizes must not change.
  BertConfig& mutable_config() { return config_; }

  std::shared_ptr<BertModel> bert;
  torch::nn::Dropout dropout{nullptr};
  torch::nn::Linear classifier{nullptr};

 private:
  absl::Status CheckInputs(const data::Batch& inputs) const;

  BertConfig config_;
  int64_t non_embedding_parameters_ = 0;
};

// HF's loss for sequence classification (see the contract above); `problem_type` is resolved
// (inferred when null) and written back.
at::Tensor SequenceClassificationLoss(const at::Tensor& logits, const at::Tensor& labels,
                                      int64_t num_labels, std::optional<std::string>* problem_type);

}  // namespace loom::models::bert

#endif  // LOOM_MODELS_BERT_BERT_FOR_SEQUENCE_CLASSIFICATION_H_
