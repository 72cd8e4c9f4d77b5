// run_translation's data steps between the JSON Lines pairs and the Seq2SeqTrainer (HF
// run_translation.py, transformers 4.41): preprocess_function, compute_metrics and the
// generated_predictions.txt text.
//
// Contract:
//   - TokenizePairs(tokenizer, pairs, options): each pair's source, prefixed with
//     options.prefix, encoded with truncation to max_source_length; its target encoded with
//     truncation to max_target_length (T5 appends eos to both). With pad_to_max_length both are
//     padded to their max length ("max_length"), and with ignore_pad_token_for_loss the padded
//     label positions become -100. Examples hold input_ids, attention_mask and labels (int64
//     [L]). max_examples >= 0 keeps the first max_examples (datasets' select(range(N))).
//     Errors name the file (options.path) and the 1-based pair.
//   - TranslationComputeMetrics(tokenizer): compute_metrics as run_translation's: predictions
//     and labels with -100 replaced by the pad id, decoded skipping special tokens, stripped
//     (str.strip), corpus BLEU (sacreBLEU 13a, text/sacrebleu.h) against one reference each,
//     and gen_len = the mean count of non-pad tokens per prediction; {"bleu", "gen_len"}
//     rounded to 4 digits as HF rounds them (Python's round for bleu, a Python float; numpy's
//     for gen_len, a numpy.float64).
//   - GeneratedPredictionsText(tokenizer, predictions): generated_predictions.txt — each row
//     decoded (-100 -> pad, skip_special_tokens, clean_up_tokenization_spaces), stripped, joined
//     with "\n" (no trailing newline).
#ifndef LOOM_EXAMPLES_TRANSLATION_PREPROCESS_H_
#define LOOM_EXAMPLES_TRANSLATION_PREPROCESS_H_

#include <ATen/ATen.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "data/dataset.h"
#include "examples/translation/translation_data.h"
#include "text/t5_tokenizer.h"
#include "trainer/trainer.h"

namespace loom::examples::translation {

struct TokenizePairsOptions {
  std::string path;  // for messages
  std::string prefix;
  int64_t max_source_length = 1024;
  int64_t max_target_length = 128;
  bool pad_to_max_length = false;
  bool ignore_pad_token_for_loss = true;
  int64_t max_examples = -1;
};

absl::StatusOr<std::shared_ptr<data::ExampleListDataset>> TokenizePairs(
    const text::T5Tokenizer& tokenizer, const std::vector<TranslationPair>& pairs,
    const TokenizePairsOptions& options);

trainer::ComputeMetricsFn TranslationComputeMetrics(const text::T5Tokenizer& tokenizer);

absl::StatusOr<std::string> GeneratedPredictionsText(const text::T5Tokenizer& tokenizer,
                                                     const at::Tensor& predictions);

}  // namespace loom::examples::translation

#endif  // LOOM_EXAMPLES_TRANSLATION_PREPROCESS_H_
