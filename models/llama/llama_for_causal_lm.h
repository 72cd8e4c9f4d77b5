// LlamaForCausalLM: transformers 4.41's class of that name under loom's model contract
// (modeling/model.h) and generation's decoder-only interface (modeling/causal_lm.h). Its state
// dict is HF's save_pretrained keys (llama_model.h).
//
// Contract:
//   Create(config, seed) validates the config and returns a model initialised as
//     InitLlamaWeights(seed).
//   Forward(batch) reads input_ids ([B,S] integer, required), attention_mask ([B,S], 0 =
//     padding), position_ids ([B,S]; default 0..S-1) and labels ([B,S], -100 = ignored).
//     Output "logits" [B,S,vocab] in float32 (HF's logits.float()); with labels the loss is
//     CrossEntropyLoss(ignore_index=-100) of logits[:, :-1] against labels[:, 1:] (the model
//     shifts, as HF's causal LMs do). Inputs that do not fit (missing input_ids, wrong ranks or
//     shapes, ids outside the vocabulary) throw std::invalid_argument with TryForward's message.
//   FloatingPointOps(batch) = 6 * input_ids.numel() * parameters outside nn.Embedding modules
//     (a tied head counted once, as the embedding), HF's floating_point_ops.
//   ConfigJson() = config with architectures ["LlamaForCausalLM"] and torch_dtype.
//   CausalLM: NewDecoderCache (a LlamaCache), NextTokenLogits (the last position's logits) and
//     generation_config() (from the config's bos / eos / pad ids, _from_model_config, until a
//     loader or the caller sets it); what generation::GenerateCausal drives.
//   UnitClassNames() = {"LlamaDecoderLayer"}: SetUnitRunner runs every decoder layer through a
//     sharding strategy's runner. EnableGradientCheckpointing recomputes each layer in backward
//     while training (HF's Llama gradient checkpointing; the cache is off then).
//
// Example:
//   ASSIGN_OR_RETURN(auto model, LlamaForCausalLM::Create(config, /*seed=*/42));
//   modeling::ModelOutput out = model->Forward({{"input_ids", ids}, {"labels", ids}});
#ifndef LOOM_MODELS_LLAMA_LLAMA_FOR_CAUSAL_LM_H_
#define LOOM_MODELS_LLAMA_LLAMA_FOR_CAUSAL_LM_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "data/batch.h"
#include "modeling/causal_lm.h"
#include "modeling/deferred_init.h"
#include "modeling/generation_config.h"
#include "modeling/model.h"
#include "models/llama/llama_config.h"
#include "models/llama/llama_model.h"

namespace loom::models::llama {

class LlamaForCausalLM : public modeling::Model, public modeling::CausalLM {
 public:
  // Builds the modules with LibTorch's default initialisation; prefer Create(). `config` must
  // have passed Validate().
  explicit LlamaForCausalLM(const LlamaConfig& config, bool deferred = false);

  static absl::StatusOr<std::shared_ptr<LlamaForCausalLM>> Create(const LlamaConfig& config,
                                                                  uint64_t seed);
  // The model with every parameter deferred (modeling/deferred_init.h): construction holds at
  // most one decoder layer's bytes (DeepSpeed's zero.Init, FSDP's meta-device construction).
  // InitFill() materialises any parameter with exactly the values Create(config, seed) gives it;
  // it is the model's parameter_fill().
  static absl::StatusOr<std::shared_ptr<LlamaForCausalLM>> CreateDeferred(
      const LlamaConfig& config, uint64_t seed);
  modeling::ParameterFill InitFill() const;

  modeling::ModelOutput Forward(const data::Batch& inputs) override;
  absl::StatusOr<modeling::ModelOutput> TryForward(const data::Batch& inputs);

  double FloatingPointOps(const data::Batch& inputs) const override;
  std::string ConfigJson() const override;
  std::string GenerationConfigJson() const override { return generation_config_.ToJson(); }
  std::vector<std::string> UnitClassNames() const override { return {"LlamaDecoderLayer"}; }
  absl::Status SetUnitRunner(modeling::UnitRunner* runner) override;
  absl::Status EnableGradientCheckpointing(const modeling::CheckpointingOptions& options) override;
  void DisableGradientCheckpointing() override;
  bool IsGradientCheckpointing() const override;

  // modeling::CausalLM (generation).
  std::unique_ptr<modeling::DecoderCache> NewDecoderCache() const override {
    return std::make_unique<LlamaCache>();
  }
  at::Tensor NextTokenLogits(const at::Tensor& new_ids, const at::Tensor& attention_mask,
                             const at::Tensor& position_ids, modeling::DecoderCache* cache) override;
  modeling::GenerationConfig& generation_config() override { return generation_config_; }

  // lm_head over hidden states, in float32 (the tied embedding when tie_word_embeddings).
  at::Tensor Logits(const at::Tensor& hidden);
  const LlamaConfig& config() const { return config_; }

  std::shared_ptr<LlamaModel> model;
  torch::nn::Linear lm_head{nullptr};  // registered only when not tied

 private:
  absl::Status CheckInputs(const data::Batch& inputs) const;
  LlamaConfig config_;
  uint64_t seed_ = 0;
  int64_t non_embedding_parameters_ = 0;
  modeling::GenerationConfig generation_config_;
};

}  // namespace loom::models::llama

#endif  // LOOM_MODELS_LLAMA_LLAMA_FOR_CAUSAL_LM_H_
