#include "models/t5/t5_for_conditional_generation.h"

#include <exception>
#include <stdexcept>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "base/torch_status.h"
#include "modeling/input_checks.h"
#include "modeling/layers.h"

namespace loom::models::t5 {
namespace {

constexpr char kContext[] = "T5ForConditionalGeneration";

absl::Status InputError(absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(kContext, ": ", what));
}

absl::Status CheckIds(const at::Tensor& t, const char* name, int64_t batch, int64_t vocab,
                      bool labels) {
  return modeling::CheckIds(t, name, batch, vocab, labels, kContext);
}

absl::Status CheckMask(const at::Tensor& mask, const char* name, const at::Tensor& ids,
                       const char* ids_name) {
  return modeling::CheckSameShape(mask, name, ids, ids_name, kContext);
}

using modeling::Get;

}  // namespace

T5ForConditionalGeneration::T5ForConditionalGeneration(const T5Config& config) {
  // register_module with the body's children directly, so names are HF's (shared.weight, ...).
  body = std::make_shared<T5Body>(config);
  for (const auto& item : body->named_children()) register_module(item.key(), item.value());
  non_embedding_parameters_ = modeling::NonEmbeddingParameterCount(*this);
  generation_config_ = modeling::GenerationConfig::FromModel(
      {config.decoder_start_token_id, config.eos_token_id, config.pad_token_id});
}

absl::StatusOr<std::shared_ptr<T5ForConditionalGeneration>> T5ForConditionalGeneration::Create(
    const T5Config& config, uint64_t seed) {
  RETURN_IF_ERROR(config.Validate("T5Config"));
  try {
    auto model = std::make_shared<T5ForConditionalGeneration>(config);
    InitT5Weights(*model->body, seed);
    return model;
  } catch (const std::exception& e) {
    return base::TorchErrorToStatus(e, absl::StatusCode::kInvalidArgument, kContext);
  }
}

absl::Status T5ForConditionalGeneration::CheckInputs(const data::Batch& inputs) const {
  ASSIGN_OR_RETURN(const at::Tensor ids, modeling::RequireKey(inputs, "input_ids", kContext));
  const int64_t vocab = config().vocab_size;
  RETURN_IF_ERROR(CheckIds(ids, "input_ids", ids.dim() > 0 ? ids.size(0) : 0, vocab, false));
  RETURN_IF_ERROR(CheckMask(Get(inputs, "attention_mask"), "attention_mask", ids, "input_ids"));
  const at::Tensor decoder_ids = Get(inputs, "decoder_input_ids");
  const at::Tensor labels = Get(inputs, "labels");
  if (!decoder_ids.defined() && !labels.defined()) {
    return InputError("the batch needs \"decoder_input_ids\" or \"labels\" (HF: \"You have to "
                      "specify either decoder_input_ids or decoder_inputs_embeds\")");
  }
  if (decoder_ids.defined()) {
    RETURN_IF_ERROR(CheckIds(decoder_ids, "decoder_input_ids", ids.size(0), vocab, false));
  }
  if (labels.defined()) RETURN_IF_ERROR(CheckIds(labels, "labels", ids.size(0), vocab, true));
  const at::Tensor& decoder_shape = decoder_ids.defined() ? decoder_ids : labels;
  return CheckMask(Get(inputs, "decoder_attention_mask"), "decoder_attention_mask",
                   decoder_shape, decoder_ids.defined() ? "decoder_input_ids" : "labels");
}

absl::Status T5ForConditionalGeneration::SetUnitRunner(modeling::UnitRunner* runner) {
  body->encoder->unit_runner = runner;
  body->decoder->unit_runner = runner;
  return absl::OkStatus();
}

absl::Status T5ForConditionalGeneration::EnableGradientCheckpointing(
    const modeling::CheckpointingOptions& options) {
  body->encoder->gradient_checkpointing = options;
  body->decoder->gradient_checkpointing = options;
  return absl::OkStatus();
}

void T5ForConditionalGeneration::DisableGradientCheckpointing() {
  body->encoder->gradient_checkpointing.reset();
  body->decoder->gradient_checkpointing.reset();
}

bool T5ForConditionalGeneration::IsGradientCheckpointing() const {
  return body->encoder->gradient_checkpointing.has_value();
}

absl::StatusOr<modeling::ModelOutput> T5ForConditionalGeneration::TryForward(
    const data::Batch& inputs) {
  RETURN_IF_ERROR(CheckInputs(inputs));
  try {
    const at::Tensor attention_mask = Get(inputs, "attention_mask");
    const at::Tensor encoded = body->Encode(Get(inputs, "input_ids"), attention_mask);
    const at::Tensor labels = Get(inputs, "labels");
    at::Tensor decoder_ids = Get(inputs, "decoder_input_ids");
    if (!decoder_ids.defined()) decoder_ids = body->ShiftRight(labels);
    const at::Tensor hidden = body->Decode(decoder_ids, Get(inputs, "decoder_attention_mask"),
                                           encoded, attention_mask, /*cache=*/nullptr);
    const at::Tensor logits = body->Logits(hidden);
    modeling::ModelOutput out;
    if (labels.defined()) {
      out.loss = at::cross_entropy_loss(logits.view({-1, logits.size(-1)}),
                                        labels.to(logits.device()).view(-1).to(at::kLong),
                                        /*weight=*/{}, at::Reduction::Mean, /*ignore_index=*/-100);
    }
    out.outputs.push_back({"logits", logits});
    out.outputs.push_back({"encoder_last_hidden_state", encoded});
    return out;
  } catch (const std::exception& e) {
    return base::TorchErrorToStatus(e, absl::StatusCode::kInvalidArgument, kContext);
  }
}

modeling::ModelOutput T5ForConditionalGeneration::Forward(const data::Batch& inputs) {
  absl::StatusOr<modeling::ModelOutput> out = TryForward(inputs);
  if (!out.ok()) throw std::invalid_argument(std::string(out.status().message()));
  return *std::move(out);
}

at::Tensor T5ForConditionalGeneration::NextTokenLogits(const at::Tensor& new_ids,
                                                     const at::Tensor& encoder_hidden,
                                                     const at::Tensor& encoder_mask,
                                                     modeling::DecoderCache* cache) {
  T5Cache* t5_cache = nullptr;
  if (cache != nullptr) {
    t5_cache = dynamic_cast<T5Cache*>(cache);
    if (t5_cache == nullptr) {
      throw std::invalid_argument("T5ForConditionalGeneration needs the cache NewDecoderCache made");
    }
  }
  const at::Tensor hidden =
      body->Decode(new_ids, at::Tensor(), encoder_hidden, encoder_mask, t5_cache);
  return body->Logits(hidden.select(1, -1));
}

double T5ForConditionalGeneration::FloatingPointOps(const data::Batch& inputs) const {
  const at::Tensor ids = Get(inputs, "input_ids");
  if (!ids.defined()) return 0;
  return 6.0 * static_cast<double>(ids.numel()) * static_cast<double>(non_embedding_parameters_);
}

std::string T5ForConditionalGeneration::ConfigJson() const {
  T5Config saved = config();
  saved.architectures = std::vector<std::string>{"T5ForConditionalGeneration"};
  saved.torch_dtype = modeling::TorchDtypeName(body->shared->weight.scalar_type());
  return saved.ToJson();
}

}  // namespace loom::models::t5
