#include "examples/clm/preprocess.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace loom::examples::clm {
namespace {

constexpr size_t kMapBatch = 1000;  // datasets' map(batched=True) default batch_size

// HF's int(1e30) "no limit" as run_clm compares it.
constexpr int64_t kNoLimit = INT64_MAX;

}  // namespace

absl::StatusOr<std::vector<std::vector<int64_t>>> TokenizeTexts(
    const text::CausalLmTokenizer& tokenizer, const std::vector<std::string>& texts,
    const std::string& path) {
  std::vector<std::vector<int64_t>> out;
  out.reserve(texts.size());
  text::EncodeOptions options;
  options.return_token_type_ids = false;
  options.return_attention_mask = false;
  for (size_t i = 0; i < texts.size(); ++i) {
    ASSIGN_OR_RETURN(text::Encoding enc, tokenizer.Encode(texts[i], options),
                     absl::StrCat(path, ": example ", i + 1));
    out.push_back(std::move(enc.input_ids));
  }
  return out;
}

BlockSize ResolveBlockSize(std::optional<int64_t> requested,
                           std::optional<int64_t> model_max_length,
                           int64_t max_position_embeddings) {
  const int64_t tokenizer_max = model_max_length.value_or(kNoLimit);
  const std::string shown = model_max_length.has_value() ? std::to_string(*model_max_length)
                                                         : "1000000000000000019884624838656";
  BlockSize out;
  if (!requested.has_value()) {
    out.block_size = tokenizer_max;
    if (out.block_size > max_position_embeddings) {
      const int64_t fallback = std::min<int64_t>(1024, max_position_embeddings);
      out.warnings.push_back(absl::StrCat(
          "The tokenizer picked seems to have a very large `model_max_length` (", shown,
          "). Using block_size=", fallback,
          " instead. You can change that default value by passing --block_size xxx."));
      out.block_size = fallback;
    }
    return out;
  }
  out.block_size = *requested;
  if (out.block_size > tokenizer_max) {
    out.warnings.push_back(absl::StrCat("The block_size passed (", out.block_size,
                                        ") is larger than the maximum length for the model (",
                                        shown, "). Using block_size=", tokenizer_max, "."));
    out.block_size = tokenizer_max;
  }
  if (out.block_size > max_position_embeddings) {
    out.warnings.push_back(absl::StrCat(
        "The block_size passed (", out.block_size,
        ") is larger than the maximum length for the model (max_position_embeddings ",
        max_position_embeddings, "). Using block_size=", max_position_embeddings, "."));
    out.block_size = max_position_embeddings;
  }
  return out;
}

absl::StatusOr<std::shared_ptr<data::ExampleListDataset>> GroupTexts(
    const std::vector<std::vector<int64_t>>& ids, int64_t block_size, int64_t max_examples,
    const std::string& path) {
  if (block_size < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("block_size ", block_size, " must be >= 1 (--block_size, or the "
                     "tokenizer's model_max_length)"));
  }
  std::vector<data::Example> examples;
  int64_t total_tokens = 0;
  const auto options = at::TensorOptions().dtype(at::kLong);
  for (size_t start = 0; start < ids.size(); start += kMapBatch) {
    std::vector<int64_t> concatenated;
    for (size_t i = start; i < std::min(ids.size(), start + kMapBatch); ++i) {
      concatenated.insert(concatenated.end(), ids[i].begin(), ids[i].end());
    }
    total_tokens += static_cast<int64_t>(concatenated.size());
    const int64_t usable =
        static_cast<int64_t>(concatenated.size()) / block_size * block_size;
    for (int64_t b = 0; b < usable; b += block_size) {
      const at::Tensor block =
          at::tensor(std::vector<int64_t>(concatenated.begin() + b,
                                          concatenated.begin() + b + block_size),
                     options);
      examples.push_back({{"input_ids", block},
                          {"attention_mask", at::ones({block_size}, options)},
                          {"labels", block.clone()}});
    }
  }
  if (examples.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": its ", total_tokens, " tokens (grouped 1000 examples at a time, as run_clm's "
        "group_texts) make no block of --block_size ", block_size,
        "; use a smaller --block_size or more text"));
  }
  if (max_examples >= 0 && static_cast<int64_t>(examples.size()) > max_examples) {
    examples.resize(static_cast<size_t>(max_examples));
  }
  return std::make_shared<data::ExampleListDataset>(std::move(examples));
}

trainer::PreprocessLogitsFn ArgmaxLogits() {
  return [](const at::Tensor& logits, const at::Tensor&) { return logits.argmax(-1); };
}

trainer::ComputeMetricsFn ClmAccuracy() {
  return [](const trainer::EvalPrediction& p) -> absl::StatusOr<trainer::Metrics> {
    if (p.predictions.empty() || p.label_ids.empty()) {
      return absl::InvalidArgumentError("accuracy needs predictions and labels");
    }
    const at::Tensor preds = p.predictions[0], labels = p.label_ids[0];
    if (preds.dim() != 2 || !preds.sizes().equals(labels.sizes())) {
      return absl::InvalidArgumentError("accuracy needs predictions and labels of one [N, L] shape");
    }
    const int64_t len = preds.size(1);
    const at::Tensor shifted_preds = preds.narrow(1, 0, len - 1).reshape(-1);
    const at::Tensor shifted_labels = labels.narrow(1, 1, len - 1).reshape(-1);
    const int64_t n = shifted_labels.numel();
    const int64_t equal = (shifted_preds == shifted_labels).sum().item<int64_t>();
    trainer::Metrics m = trainer::Metrics::object();
    m["accuracy"] = n == 0 ? 0.0 : static_cast<double>(equal) / static_cast<double>(n);
    return m;
  };
}

}  // namespace loom::examples::clm
