#include "models/bert/bert_for_sequence_classification.h"

#include <torch/types.h>

#include <exception>
#include <stdexcept>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "base/torch_status.h"
#include "modeling/layers.h"

namespace loom::models::bert {
namespace {

constexpr char kContext[] = "BertForSequenceClassification";

std::string Shape(const at::Tensor& t) {
  return absl::StrCat("[", absl::StrJoin(t.sizes(), ", "), "]");
}

absl::Status InputError(absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(kContext, ": ", what));
}

bool IsIntegral(const at::Tensor& t) {
  return at::isIntegralType(t.scalar_type(), /*includeBool=*/false);
}

// Checks that integer `t` lies in [0, bound); `name` and `bound_key` name the input and the
// config key in the error.
absl::Status CheckRange(const at::Tensor& t, const std::string& name, int64_t bound,
                        const std::string& bound_key) {
  if (t.numel() == 0) return absl::OkStatus();
  const int64_t lo = t.min().item<int64_t>();
  const int64_t hi = t.max().item<int64_t>();
  if (lo < 0 || hi >= bound) {
    return InputError(absl::StrCat(name, " values must be in [0, ", bound_key, " = ", bound,
                                   "), got values in [", lo, ", ", hi, "]"));
  }
  return absl::OkStatus();
}


}  // namespace

BertForSequenceClassification::BertForSequenceClassification(BertConfig config)
    : config_(std::move(config)) {
  bert = register_module("bert", std::make_shared<BertModel>(config_));
  // As _autoset_attn_implementation, the config records the implementation chosen.
  config_.attn_implementation = bert->attn_implementation();
  dropout = register_module("dropout", torch::nn::Dropout(config_.ClassifierDropout()));
  classifier =
      register_module("classifier", torch::nn::Linear(config_.hidden_size, config_.num_labels()));
  non_embedding_parameters_ = modeling::NonEmbeddingParameterCount(*this);
}

absl::StatusOr<std::shared_ptr<BertForSequenceClassification>>
BertForSequenceClassification::Create(const BertConfig& config, uint64_t seed) {
  RETURN_IF_ERROR(config.Validate("BertConfig"));
  RETURN_IF_ERROR(ResolveAttnImplementation(config.attn_implementation).status());
  try {
    auto model = std::make_shared<BertForSequenceClassification>(config);
    InitBertWeights(*model, config, seed);
    return model;
  } catch (const std::exception& e) {
    return base::TorchErrorToStatus(e, absl::StatusCode::kInvalidArgument, kContext);
  }
}

absl::Status BertForSequenceClassification::CheckInputs(const data::Batch& inputs) const {
  auto ids_it = inputs.find("input_ids");
  if (ids_it == inputs.end() || !ids_it->second.defined()) {
    std::vector<std::string> keys;
    for (const auto& [k, v] : inputs) keys.push_back(k);
    return InputError(
        absl::StrCat("the batch has no \"input_ids\" (it has: ", absl::StrJoin(keys, ", "), ")"));
  }
  const at::Tensor& ids = ids_it->second;
  if (ids.dim() != 2 || !IsIntegral(ids) || ids.size(0) < 1 || ids.size(1) < 1) {
    return InputError(
        absl::StrCat("input_ids must be a non-empty [batch, sequence] integer "
                     "tensor, got ",
                     c10::toString(ids.scalar_type()), " ", Shape(ids)));
  }
  RETURN_IF_ERROR(CheckRange(ids, "input_ids", config_.vocab_size, "vocab_size"));
  const int64_t batch = ids.size(0), seq = ids.size(1);
  auto get = [&](const char* name) {
    auto it = inputs.find(name);
    return it == inputs.end() ? at::Tensor() : it->second;
  };
  if (at::Tensor mask = get("attention_mask");
      mask.defined() && !mask.sizes().equals(ids.sizes())) {
    return InputError(
        absl::StrCat("attention_mask has shape ", Shape(mask), " but input_ids has ", Shape(ids)));
  }
  if (at::Tensor tt = get("token_type_ids"); tt.defined()) {
    if (!tt.sizes().equals(ids.sizes()) || !IsIntegral(tt)) {
      return InputError(
          absl::StrCat("token_type_ids must be an integer tensor shaped like "
                       "input_ids ",
                       Shape(ids), ", got ", c10::toString(tt.scalar_type()), " ", Shape(tt)));
    }
    RETURN_IF_ERROR(CheckRange(tt, "token_type_ids", config_.type_vocab_size, "type_vocab_size"));
  }
  if (at::Tensor pos = get("position_ids"); pos.defined()) {
    if (pos.dim() != 2 || (pos.size(0) != batch && pos.size(0) != 1) || pos.size(1) != seq ||
        !IsIntegral(pos)) {
      return InputError(absl::StrCat("position_ids must be an integer [batch or 1, ", seq,
                                     "] tensor, got ", c10::toString(pos.scalar_type()), " ",
                                     Shape(pos)));
    }
    RETURN_IF_ERROR(CheckRange(pos, "position_ids", config_.max_position_embeddings,
                               "max_position_embeddings"));
  } else if (seq > config_.max_position_embeddings) {
    return InputError(absl::StrCat("sequence length ", seq, " exceeds max_position_embeddings = ",
                                   config_.max_position_embeddings, "; truncate the inputs"));
  }
  if (at::Tensor labels = get("labels"); labels.defined()) {
    const bool integral = IsIntegral(labels);
    std::optional<std::string> type = config_.problem_type;
    if (!type.has_value()) {
      const bool int_labels = labels.scalar_type() == at::kLong || labels.scalar_type() == at::kInt;
      type = std::string(config_.num_labels() == 1 ? kRegression
                         : int_labels              ? kSingleLabelClassification
                                                   : kMultiLabelClassification);
    }
    if (*type == kSingleLabelClassification) {
      if (!integral || labels.numel() != batch) {
        return InputError(absl::StrCat(
            "single_label_classification needs one integer label per "
            "example (",
            batch, "), got ", c10::toString(labels.scalar_type()), " ", Shape(labels)));
      }
      at::Tensor valid = labels.masked_select(labels.ne(-100));
      RETURN_IF_ERROR(CheckRange(valid, "labels", config_.num_labels(), "num_labels"));
    } else if (*type == kMultiLabelClassification) {
      if (labels.dim() != 2 || labels.size(0) != batch || labels.size(1) != config_.num_labels()) {
        return InputError(absl::StrCat("multi_label_classification needs labels shaped [", batch,
                                       ", num_labels = ", config_.num_labels(), "], got ",
                                       Shape(labels)));
      }
    } else if (labels.numel() != batch * config_.num_labels()) {
      return InputError(absl::StrCat("regression needs ", config_.num_labels(),
                                     " value(s) per example, got labels ", Shape(labels),
                                     " for a batch of ", batch));
    }
  }
  return absl::OkStatus();
}

at::Tensor SequenceClassificationLoss(const at::Tensor& logits, const at::Tensor& labels,
                                      int64_t num_labels,
                                      std::optional<std::string>* problem_type) {
  if (!problem_type->has_value()) {
    if (num_labels == 1) {
      *problem_type = std::string(kRegression);
    } else if (labels.scalar_type() == at::kLong || labels.scalar_type() == at::kInt) {
      *problem_type = std::string(kSingleLabelClassification);
    } else {
      *problem_type = std::string(kMultiLabelClassification);
    }
  }
  const std::string& type = **problem_type;
  // HF passes the labels as the collator made them (float32 for these problem types). Other
  // dtypes (doubles or ints from a loom dataset) become float32, which torch's losses need for
  // backward; labels are never cast to the logits' dtype: under bf16 autocast the losses run
  // in fp32 on the float32 labels.
  const at::Tensor float_labels =
      labels.scalar_type() == at::kFloat || labels.scalar_type() == at::kHalf ||
              labels.scalar_type() == at::kBFloat16
          ? labels
          : labels.to(at::kFloat);
  if (type == kRegression) {
    const at::Tensor& target = float_labels;
    if (num_labels == 1) return at::mse_loss(logits.squeeze(), target.squeeze());
    return at::mse_loss(logits, target.view_as(logits));
  }
  if (type == kSingleLabelClassification) {
    return at::cross_entropy_loss(logits.view({-1, num_labels}), labels.view(-1).to(at::kLong));
  }
  return at::binary_cross_entropy_with_logits(logits, float_labels);
}

absl::StatusOr<modeling::ModelOutput> BertForSequenceClassification::TryForward(
    const data::Batch& inputs) {
  RETURN_IF_ERROR(CheckInputs(inputs));
  auto get = [&](const char* name) {
    auto it = inputs.find(name);
    return it == inputs.end() ? at::Tensor() : it->second;
  };
  try {
    BertModelOutput hidden = bert->Forward(get("input_ids"), get("attention_mask"),
                                           get("token_type_ids"), get("position_ids"));
    // at::linear as HF's nn.Linear (see bert_model.cc's Dense).
    at::Tensor logits =
        at::linear(dropout->forward(hidden.pooled_output), classifier->weight, classifier->bias);
    modeling::ModelOutput out;
    if (at::Tensor labels = get("labels"); labels.defined()) {
      out.loss =
          SequenceClassificationLoss(logits, labels, config_.num_labels(), &config_.problem_type);
    }
    out.outputs.push_back({"logits", logits});
    return out;
  } catch (const std::exception& e) {
    return base::TorchErrorToStatus(e, absl::StatusCode::kInvalidArgument, kContext);
  }
}

modeling::ModelOutput BertForSequenceClassification::Forward(const data::Batch& inputs) {
  absl::StatusOr<modeling::ModelOutput> out = TryForward(inputs);
  if (!out.ok()) throw std::invalid_argument(std::string(out.status().message()));
  return *std::move(out);
}

double BertForSequenceClassification::FloatingPointOps(const data::Batch& inputs) const {
  auto it = inputs.find("input_ids");
  if (it == inputs.end() || !it->second.defined()) return 0;
  return 6.0 * static_cast<double>(it->second.numel()) *
         static_cast<double>(non_embedding_parameters_);
}

std::string BertForSequenceClassification::ConfigJson() const {
  BertConfig saved = config_;
  saved.architectures = std::vector<std::string>{"BertForSequenceClassification"};
  saved.extra["torch_dtype"] = modeling::TorchDtypeName(classifier->weight.scalar_type());
  return saved.ToJson();
}

}  // namespace loom::models::bert
