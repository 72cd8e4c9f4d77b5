// Seq2SeqTrainer: transformers 4.41's Seq2SeqTrainer on loom's Trainer — evaluate / predict
// with generation (Seq2SeqTrainingArguments' predict_with_generate, generation_max_length,
// generation_num_beams, generation_config) for models that implement modeling::Seq2SeqLM.
//
// Contract:
//   - Create(options) is Trainer::Create plus HF's Seq2SeqTrainer.__init__: with
//     --generation_config (a folder holding generation_config.json, or the file) that config
//     becomes the model's generation_config(). With --predict_with_generate, a model that
//     cannot generate (not a Seq2SeqLM) is FailedPrecondition before any work.
//   - Evaluate / Predict take gen_kwargs (a JSON object of GenerationConfig fields). Their
//     precedence is HF's: the call's, then --generation_max_length (as max_length, unless the
//     call sets max_length or max_new_tokens) and --generation_num_beams, then the model's
//     generation_config(). Evaluations the training loop runs use the arguments'.
//   - PredictionStep without predict_with_generate (or with prediction_loss_only) is the
//     Trainer's. With it: generate on input_ids / attention_mask (decoder_input_ids made from
//     the labels are dropped first, as HF), the loss from the labels as the Trainer computes
//     it, then the generated tokens and the labels right-padded to the MODEL's
//     generation_config max_length (or max_new_tokens + 1) with the tokenizer's pad id
//     (TrainerOptions::tokenizer_pad_token_id; else the model config's), as HF's
//     _pad_tensors_to_max_len; the evaluation loop then pads across batches and ranks with
//     -100. As HF, the first generating step clears the model generation config's
//     _from_model_config flag.
//   - In a multi-process run every rank keeps stepping the decoder until all ranks have
//     finished (HF's synced_gpus), so sharded parameters are gathered in step on every rank.
//
// Example:
//   ASSIGN_OR_RETURN(std::unique_ptr<Seq2SeqTrainer> trainer, Seq2SeqTrainer::Create(options));
//   ASSIGN_OR_RETURN(Metrics m, trainer->EvaluateWithGeneration(eval, {}, "eval",
//                                                               {{"num_beams", 4}}));
#ifndef LOOM_TRAINER_SEQ2SEQ_TRAINER_H_
#define LOOM_TRAINER_SEQ2SEQ_TRAINER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "modeling/seq2seq_lm.h"
#include "nlohmann/json.hpp"
#include "trainer/trainer.h"

namespace loom::trainer {

class Seq2SeqTrainer : public Trainer {
 public:
  using Trainer::Trainer;

  static absl::StatusOr<std::unique_ptr<Seq2SeqTrainer>> Create(TrainerOptions options);

  using Trainer::Evaluate;
  absl::StatusOr<Metrics> Evaluate(std::shared_ptr<const data::Dataset> dataset,
                                   const std::vector<std::string>& ignore_keys,
                                   const std::string& metric_key_prefix = "eval") override;
  absl::StatusOr<PredictionOutput> Predict(std::shared_ptr<const data::Dataset> dataset,
                                           const std::vector<std::string>& ignore_keys = {},
                                           const std::string& metric_key_prefix = "test") override;
  absl::StatusOr<Metrics> EvaluateWithGeneration(std::shared_ptr<const data::Dataset> dataset,
                                                 const std::vector<std::string>& ignore_keys,
                                                 const std::string& metric_key_prefix,
                                                 const nlohmann::json& gen_kwargs);
  absl::StatusOr<PredictionOutput> PredictWithGeneration(
      std::shared_ptr<const data::Dataset> dataset, const std::vector<std::string>& ignore_keys,
      const std::string& metric_key_prefix, const nlohmann::json& gen_kwargs);

  // With predict_with_generate: the generation config a call with `gen_kwargs` would use (the
  // precedence above) is valid — e.g. num_return_sequences <= num_beams — so a script can
  // refuse bad settings before training. InvalidArgument naming the setting otherwise.
  absl::Status CheckGenKwargs(const nlohmann::json& gen_kwargs) const;

  absl::StatusOr<PredictionStepOutput> PredictionStep(
      Model& model, data::Batch& inputs, bool prediction_loss_only,
      const std::vector<std::string>& ignore_keys) override;

 private:
  // The call's gen_kwargs completed from the arguments (Seq2SeqTrainer.evaluate's rule).
  nlohmann::json ResolveGenKwargs(const nlohmann::json& call) const;
  static absl::StatusOr<modeling::GenerationConfig> ApplyGenKwargs(
      modeling::GenerationConfig config, const nlohmann::json& kwargs);
  absl::StatusOr<at::Tensor> PadToMaxLength(const at::Tensor& t, modeling::Seq2SeqLM& model) const;

  nlohmann::json gen_kwargs_ = nlohmann::json::object();
};

}  // namespace loom::trainer

#endif  // LOOM_TRAINER_SEQ2SEQ_TRAINER_H_
