#include "trainer/seq2seq_trainer.h"

#include <filesystem>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "generation/generate.h"
#include "modeling/generation_config.h"
#include "modeling/seq2seq_lm.h"
#include "precision/autocast.h"

namespace loom::trainer {
namespace {

absl::Status CannotGenerate(const Model& model) {
  return absl::FailedPreconditionError(absl::StrCat(
      "--predict_with_generate needs a model that can generate (an encoder-decoder such as "
      "T5ForConditionalGeneration); ",
      model.ClassName(), " cannot. Drop --predict_with_generate to evaluate its loss"));
}

// --generation_config: a folder with generation_config.json, or the file itself.
absl::StatusOr<modeling::GenerationConfig> LoadGenerationConfig(const std::string& where) {
  const std::string path = std::filesystem::is_directory(where)
                               ? where + "/generation_config.json"
                               : where;
  return modeling::GenerationConfig::FromFile(path);
}

}  // namespace

absl::StatusOr<std::unique_ptr<Seq2SeqTrainer>> Seq2SeqTrainer::Create(TrainerOptions options) {
  std::shared_ptr<Model> model = options.model;
  auto* lm = dynamic_cast<modeling::Seq2SeqLM*>(model.get());
  if (model != nullptr && lm == nullptr && options.args.predict_with_generate()) {
    return CannotGenerate(*model);
  }
  if (options.args.has_generation_config()) {
    if (lm == nullptr) {
      return absl::FailedPreconditionError(
          "--generation_config is set but the model cannot generate (it is not an "
          "encoder-decoder language model)");
    }
    ASSIGN_OR_RETURN(lm->generation_config(),
                     LoadGenerationConfig(options.args.generation_config()),
                     "--generation_config");
    RETURN_IF_ERROR_CTX(lm->generation_config().Validate(), "--generation_config");
  }
  return Trainer::Create<Seq2SeqTrainer>(std::move(options));
}

nlohmann::json Seq2SeqTrainer::ResolveGenKwargs(const nlohmann::json& call) const {
  nlohmann::json kwargs = call.is_object() ? call : nlohmann::json::object();
  auto unset = [&](const char* key) { return !kwargs.contains(key) || kwargs[key].is_null(); };
  if (unset("max_length") && unset("max_new_tokens") && args_.has_generation_max_length()) {
    kwargs["max_length"] = args_.generation_max_length();
  }
  if (unset("num_beams") && args_.has_generation_num_beams()) {
    kwargs["num_beams"] = args_.generation_num_beams();
  }
  return kwargs;
}

absl::StatusOr<Metrics> Seq2SeqTrainer::Evaluate(std::shared_ptr<const data::Dataset> dataset,
                                                 const std::vector<std::string>& ignore_keys,
                                                 const std::string& metric_key_prefix) {
  return EvaluateWithGeneration(std::move(dataset), ignore_keys, metric_key_prefix,
                                nlohmann::json::object());
}

absl::StatusOr<PredictionOutput> Seq2SeqTrainer::Predict(
    std::shared_ptr<const data::Dataset> dataset, const std::vector<std::string>& ignore_keys,
    const std::string& metric_key_prefix) {
  return PredictWithGeneration(std::move(dataset), ignore_keys, metric_key_prefix,
                               nlohmann::json::object());
}

absl::StatusOr<Metrics> Seq2SeqTrainer::EvaluateWithGeneration(
    std::shared_ptr<const data::Dataset> dataset, const std::vector<std::string>& ignore_keys,
    const std::string& metric_key_prefix, const nlohmann::json& gen_kwargs) {
  gen_kwargs_ = ResolveGenKwargs(gen_kwargs);
  return Trainer::Evaluate(std::move(dataset), ignore_keys, metric_key_prefix);
}

absl::StatusOr<PredictionOutput> Seq2SeqTrainer::PredictWithGeneration(
    std::shared_ptr<const data::Dataset> dataset, const std::vector<std::string>& ignore_keys,
    const std::string& metric_key_prefix, const nlohmann::json& gen_kwargs) {
  gen_kwargs_ = ResolveGenKwargs(gen_kwargs);
  return Trainer::Predict(std::move(dataset), ignore_keys, metric_key_prefix);
}

absl::StatusOr<modeling::GenerationConfig> Seq2SeqTrainer::ApplyGenKwargs(
    modeling::GenerationConfig config, const nlohmann::json& kwargs) {
  for (auto it = kwargs.begin(); it != kwargs.end(); ++it) {
    if (!it.value().is_null()) RETURN_IF_ERROR_CTX(config.Set(it.key(), it.value()), "gen_kwargs");
  }
  RETURN_IF_ERROR_CTX(config.Validate(), "gen_kwargs");
  return config;
}

absl::Status Seq2SeqTrainer::CheckGenKwargs(const nlohmann::json& gen_kwargs) const {
  if (!args_.predict_with_generate()) return absl::OkStatus();
  auto* lm = dynamic_cast<modeling::Seq2SeqLM*>(options_.model.get());
  if (lm == nullptr) return absl::OkStatus();  // a model_init run: checked at generation
  return ApplyGenKwargs(lm->generation_config(), ResolveGenKwargs(gen_kwargs)).status();
}

// prediction_step's rule with _pad_tensors_to_max_len: shorter than the MODEL generation
// config's max_length -> to it; else shorter than its max_new_tokens + 1 -> to that.
absl::StatusOr<at::Tensor> Seq2SeqTrainer::PadToMaxLength(const at::Tensor& t,
                                                          modeling::Seq2SeqLM& model) const {
  const modeling::GenerationConfig& config = model.generation_config();
  int64_t length = t.size(-1);
  if (length < config.max_length) {
    length = config.max_length;
  } else if (config.max_new_tokens.has_value() && length < *config.max_new_tokens + 1) {
    length = *config.max_new_tokens + 1;
  } else {
    return t;
  }
  std::optional<int64_t> pad = options_.tokenizer_pad_token_id;
  if (!pad.has_value()) pad = model.ConfigPadTokenId();
  if (!pad.has_value()) {
    return absl::FailedPreconditionError(
        "Pad_token_id must be set in the configuration of the model, in order to pad tensors");
  }
  at::Tensor padded = at::full({t.size(0), length}, *pad, t.options());
  padded.narrow(1, 0, t.size(-1)).copy_(t);
  return padded;
}

absl::StatusOr<PredictionStepOutput> Seq2SeqTrainer::PredictionStep(
    Model& model, data::Batch& inputs, bool prediction_loss_only,
    const std::vector<std::string>& ignore_keys) {
  if (!args_.predict_with_generate() || prediction_loss_only) {
    return Trainer::PredictionStep(model, inputs, prediction_loss_only, ignore_keys);
  }
  auto* lm = dynamic_cast<modeling::Seq2SeqLM*>(&model);
  if (lm == nullptr) return CannotGenerate(model);
  const bool has_labels = inputs.count("labels") > 0;
  data::Batch prepared = PrepareInputs(inputs);
  if (prepared.count("decoder_input_ids") &&
      !(has_labels && prepared.at("labels").sizes().equals(prepared.at("decoder_input_ids").sizes()))) {
    return absl::UnimplementedError(
        "generation from a batch's own decoder_input_ids (a decoder prompt) is not implemented; "
        "batches for predict_with_generate carry input_ids, attention_mask and labels");
  }
  ASSIGN_OR_RETURN(const modeling::GenerationConfig config,
                   ApplyGenKwargs(lm->generation_config(), gen_kwargs_));
  generation::GenerateOptions options;
  if (parallel_.world_size() > 1) {
    options.any_rank_unfinished = [this](bool finished) -> absl::StatusOr<bool> {
      ASSIGN_OR_RETURN(float running, parallel_.MeanFloat(finished ? 0.f : 1.f));
      return running > 0.f;
    };
  }
  const at::Tensor mask = prepared.count("attention_mask") ? prepared.at("attention_mask") : at::Tensor();
  // As HF, generate runs outside the loss's autocast context.
  ASSIGN_OR_RETURN(at::Tensor generated,
                   generation::Generate(*lm, prepared.at("input_ids"), mask, config, options));
  lm->generation_config().from_model_config = false;  // HF's "temporary hack"
  ASSIGN_OR_RETURN(generated, PadToMaxLength(generated, *lm));
  PredictionStepOutput out;
  if (has_labels) {
    torch::NoGradGuard no_grad;
    precision::AutocastGuard autocast(precision_->LossAutocast());
    ASSIGN_OR_RETURN(LossOutput lo, ComputeLoss(model, prepared, /*return_outputs=*/false));
    out.loss = lo.loss.mean().detach();
  }
  if (args_.prediction_loss_only()) return out;
  out.logits.push_back(generated);
  if (has_labels) {
    ASSIGN_OR_RETURN(at::Tensor labels, PadToMaxLength(prepared.at("labels"), *lm));
    out.labels.push_back(labels.detach());
  }
  return out;
}

}  // namespace loom::trainer
