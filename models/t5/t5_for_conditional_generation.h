// T5ForConditionalGeneration: transformers 4.41's class of that name under loom's model
// contract (modeling/model.h). Its parameters are T5Body's (t5_model.h); its state dict is HF's
// save_pretrained keys.
//
// Contract:
//   Create(config, seed) validates the config and returns a model initialised as HF's
//     _init_weights from `seed` (InitT5Weights).
//   Forward(batch) reads input_ids ([B,S] integer, required), attention_mask ([B,S]),
//     decoder_input_ids ([B,T]), decoder_attention_mask ([B,T]) and labels ([B,T], -100 =
//     ignored). Without decoder_input_ids, labels are shifted right into them (HF's
//     _shift_right: decoder_start_token_id first, -100 -> pad_token_id); one of the two is
//     required. Outputs: "logits" [B,T,vocab] then "encoder_last_hidden_state" [B,S,d_model];
//     with labels the loss is CrossEntropyLoss(ignore_index=-100) of logits.view(-1, vocab) and
//     labels.view(-1), as HF computes it.
//     Inputs that do not fit (missing keys, wrong ranks, ids outside the vocabulary, mismatched
//     batch sizes) throw std::invalid_argument with the message TryForward returns.
//   FloatingPointOps(batch) = 6 * input_ids.numel() * parameters outside nn.Embedding modules
//     (shared and the relative-attention biases excluded), HF's
//     floating_point_ops(exclude_embeddings=True).
//   ConfigJson() = config with architectures ["T5ForConditionalGeneration"] and torch_dtype.
//   Seq2SeqLM (modeling/seq2seq_lm.h): Encode, NextTokenLogits with a T5Cache and
//     generation_config() (from the config's decoder_start / eos / pad ids until a loader or
//     the caller sets it); what `generate` drives. GenerationConfigJson() is its
//     generation_config.json.
//   UnitClassNames() = {"T5Block"}: SetUnitRunner runs every encoder and decoder block through
//     a sharding strategy's runner (block 0 computes the relative position bias inside its
//     unit, as HF's T5Block does). EnableGradientCheckpointing recomputes each block in
//     backward while training (HF's T5 gradient checkpointing; the cache is off then).
//
// Example:
//   ASSIGN_OR_RETURN(auto model, T5ForConditionalGeneration::Create(config, /*seed=*/42));
//   modeling::ModelOutput out = model->Forward({{"input_ids", ids}, {"labels", labels}});
#ifndef LOOM_MODELS_T5_T5_FOR_CONDITIONAL_GENERATION_H_
#define LOOM_MODELS_T5_T5_FOR_CONDITIONAL_GENERATION_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "data/batch.h"
#include "modeling/generation_config.h"
#include "modeling/model.h"
#include "modeling/seq2seq_lm.h"
#include "models/t5/t5_config.h"
#include "models/t5/t5_model.h"

namespace loom::models::t5 {

class T5ForConditionalGeneration : public modeling::Model, public modeling::Seq2SeqLM {
 public:
  // Builds the modules with LibTorch's default initialisation; prefer Create(). `config` must
  // have passed Validate().
  explicit T5ForConditionalGeneration(const T5Config& config);

  static absl::StatusOr<std::shared_ptr<T5ForConditionalGeneration>> Create(
      const T5Config& config, uint64_t seed);

  modeling::ModelOutput Forward(const data::Batch& inputs) override;
  absl::StatusOr<modeling::ModelOutput> TryForward(const data::Batch& inputs);

  double FloatingPointOps(const data::Batch& inputs) const override;
  std::string ConfigJson() const override;
  std::vector<std::string> UnitClassNames() const override { return {"T5Block"}; }
  absl::Status SetUnitRunner(modeling::UnitRunner* runner) override;
  // HF's T5PreTrainedModel.supports_gradient_checkpointing: every block of both stacks.
  absl::Status EnableGradientCheckpointing(const modeling::CheckpointingOptions& options) override;
  void DisableGradientCheckpointing() override;
  bool IsGradientCheckpointing() const override;

  // modeling::Seq2SeqLM (generation).
  at::Tensor Encode(const at::Tensor& input_ids, const at::Tensor& attention_mask) override {
    return body->Encode(input_ids, attention_mask);
  }
  std::unique_ptr<modeling::DecoderCache> NewDecoderCache() const override {
    return std::make_unique<T5Cache>();
  }
  at::Tensor NextTokenLogits(const at::Tensor& new_ids, const at::Tensor& encoder_hidden,
                           const at::Tensor& encoder_mask, modeling::DecoderCache* cache) override;
  modeling::GenerationConfig& generation_config() override { return generation_config_; }
  std::string GenerationConfigJson() const override { return generation_config_.ToJson(); }
  std::optional<int64_t> ConfigPadTokenId() const override { return config().pad_token_id; }

  const T5Config& config() const { return body->config(); }

  std::shared_ptr<T5Body> body;

 private:
  absl::Status CheckInputs(const data::Batch& inputs) const;
  int64_t non_embedding_parameters_ = 0;
  modeling::GenerationConfig generation_config_;
};

}  // namespace loom::models::t5

#endif  // LOOM_MODELS_T5_T5_FOR_CONDITIONAL_GENERATION_H_
