#include "examples/translation/preprocess.h"

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "text/sacrebleu.h"
#include "text/unicode.h"
#include "trainer/metrics.h"

namespace loom::examples::translation {
namespace {

at::Tensor Int64Vector(const std::vector<int64_t>& values) {
  return at::tensor(values, at::TensorOptions().dtype(at::kLong));
}

absl::StatusOr<std::vector<int64_t>> Encode(const text::T5Tokenizer& tokenizer,
                                            const std::string& text, int64_t max_length,
                                            bool pad, std::vector<int64_t>* attention_mask) {
  text::EncodeOptions o;
  o.max_length = max_length;
  o.truncation = text::Truncation::kLongestFirst;
  o.padding = pad ? text::Padding::kMaxLength : text::Padding::kDoNotPad;
  o.return_token_type_ids = false;
  ASSIGN_OR_RETURN(text::Encoding e, tokenizer.Encode(text, o));
  if (attention_mask != nullptr) *attention_mask = std::move(e.attention_mask);
  return std::move(e.input_ids);
}

// Python's str.strip() of UTF-8 text.
absl::StatusOr<std::string> Strip(const std::string& s) {
  ASSIGN_OR_RETURN(const std::u32string cps, text::DecodeUtf8(s));
  return text::EncodeUtf8(text::PythonRStrip(text::PythonLStrip(cps)));
}

// np.where(ids != -100, ids, pad_token_id): what run_translation decodes and counts.
at::Tensor IgnoredToPad(const at::Tensor& ids, int64_t pad) {
  return at::where(ids == -100, at::full_like(ids, pad), ids).to(at::kLong);
}

// Each row of `ids` ([N, L]) with -100 replaced by the pad id, decoded and stripped.
absl::StatusOr<std::vector<std::string>> DecodeRows(const text::T5Tokenizer& tokenizer,
                                                   const at::Tensor& ids,
                                                   const text::DecodeOptions& options) {
  if (ids.dim() != 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "expected generated token ids [examples, length], got ", ids.dim(), " dimensions"));
  }
  const at::Tensor rows = IgnoredToPad(ids, tokenizer.pad_token_id());
  std::vector<std::string> out;
  out.reserve(static_cast<size_t>(rows.size(0)));
  for (int64_t r = 0; r < rows.size(0); ++r) {
    const at::Tensor row = rows[r].contiguous();
    const std::vector<int64_t> values(row.data_ptr<int64_t>(),
                                      row.data_ptr<int64_t>() + row.numel());
    ASSIGN_OR_RETURN(const std::string text, tokenizer.Decode(values, options),
                     absl::StrCat("row ", r));
    ASSIGN_OR_RETURN(std::string stripped, Strip(text));
    out.push_back(std::move(stripped));
  }
  return out;
}

// numpy's round(x, 4) (np.float64.__round__): rint(x * 10^4) / 10^4.
double NumpyRound4(double x) { return std::nearbyint(x * 10000.0) / 10000.0; }

}  // namespace

absl::StatusOr<std::shared_ptr<data::ExampleListDataset>> TokenizePairs(
    const text::T5Tokenizer& tokenizer, const std::vector<TranslationPair>& pairs,
    const TokenizePairsOptions& o) {
  int64_t n = static_cast<int64_t>(pairs.size());
  if (o.max_examples >= 0) n = std::min(n, o.max_examples);
  std::vector<data::Example> examples;
  examples.reserve(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const TranslationPair& pair = pairs[static_cast<size_t>(i)];
    const std::string where = absl::StrCat(o.path, ": pair ", i + 1);
    std::vector<int64_t> mask;
    ASSIGN_OR_RETURN(std::vector<int64_t> input_ids,
                     Encode(tokenizer, o.prefix + pair.source, o.max_source_length,
                            o.pad_to_max_length, &mask),
                     where);
    ASSIGN_OR_RETURN(std::vector<int64_t> labels,
                     Encode(tokenizer, pair.target, o.max_target_length, o.pad_to_max_length,
                            nullptr),
                     where);
    if (o.pad_to_max_length && o.ignore_pad_token_for_loss) {
      for (int64_t& id : labels) {
        if (id == tokenizer.pad_token_id()) id = -100;
      }
    }
    examples.push_back({{"input_ids", Int64Vector(input_ids)},
                        {"attention_mask", Int64Vector(mask)},
                        {"labels", Int64Vector(labels)}});
  }
  return std::make_shared<data::ExampleListDataset>(std::move(examples));
}

trainer::ComputeMetricsFn TranslationComputeMetrics(const text::T5Tokenizer& tokenizer) {
  return [&tokenizer](const trainer::EvalPrediction& p) -> absl::StatusOr<trainer::Metrics> {
    if (p.predictions.empty() || p.label_ids.empty()) {
      return absl::InvalidArgumentError(
          "compute_metrics needs the generated tokens and the labels (--predict_with_generate)");
    }
    const text::DecodeOptions skip = {.skip_special_tokens = true};
    ASSIGN_OR_RETURN(std::vector<std::string> predictions,
                     DecodeRows(tokenizer, p.predictions.front(), skip), "predictions");
    ASSIGN_OR_RETURN(std::vector<std::string> labels,
                     DecodeRows(tokenizer, p.label_ids.front(), skip), "labels");
    std::vector<std::vector<std::string>> references;
    references.reserve(labels.size());
    for (std::string& label : labels) references.push_back({std::move(label)});
    ASSIGN_OR_RETURN(const text::BleuScore bleu, text::CorpusBleu(predictions, references));
    const at::Tensor preds = IgnoredToPad(p.predictions.front(), tokenizer.pad_token_id());
    const at::Tensor lengths = (preds != tokenizer.pad_token_id()).sum(1).to(at::kDouble);
    const double gen_len = preds.size(0) > 0 ? lengths.mean().item<double>() : std::nan("");
    trainer::Metrics m = trainer::Metrics::object();
    m["bleu"] = trainer::PyRound(bleu.score, 4);
    m["gen_len"] = NumpyRound4(gen_len);
    return m;
  };
}

absl::StatusOr<std::string> GeneratedPredictionsText(const text::T5Tokenizer& tokenizer,
                                                     const at::Tensor& predictions) {
  ASSIGN_OR_RETURN(std::vector<std::string> rows,
                   DecodeRows(tokenizer, predictions,
                              {.skip_special_tokens = true, .clean_up_tokenization_spaces = true}));
  return absl::StrJoin(rows, "\n");
}

}  // namespace loom::examples::translation
