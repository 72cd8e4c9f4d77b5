// run_glue's data steps between the loaded GLUE examples and the Trainer (HF run_glue.py,
// transformers 4.38-4.41): tokenization (preprocess_function), the label mapping run_glue
// reconciles with a pretrained config, compute_metrics, and the predict_results text.
//
// Contract:
//   - TokenizeSplit(tokenizer, split, options) encodes each example's (text_a, text_b) with
//     truncation "longest_first" to options.max_length and, with pad_to_max_length, padding to
//     it ("max_length"); otherwise unpadded (the collator pads per batch). Each example
//     becomes input_ids, token_type_ids, attention_mask (int64 [L]) and "label": int64 (class
//     ids mapped through label_to_id, -1 kept) or float32 (regression). Examples without a
//     label, or with keep_labels false (run_glue removes the test set's "label" column), get
//     no "label". max_examples >= 0 keeps the first max_examples (datasets' select(range(N))).
//   - ModelLabelMapping(config, task_name, is_regression, label_list) is run_glue's check of a
//     pretrained config's label2id: with a task, a classification problem and a label2id that
//     is not PretrainedConfig(num_labels)'s default {LABEL_i: i}, the model's ids (label names
//     compared lower-cased) are used when its label names equal the task's: the result maps
//     dataset id i -> model id; a mismatch is reported in *warning and gives {}.
//   - GlueComputeMetrics(task_name, is_regression): compute_metrics as run_glue: argmax (or
//     squeeze for regression) of the first prediction tensor, the glue metric of the task
//     ("accuracy" / "mse" without a task) and combined_score when it has several values.
//   - FormatPredictResults(logits, is_regression, label_list): "index\tprediction\n" then one
//     line per example: label_list[argmax] for classification, "%3.3f" of the squeezed value
//     for regression.
//   - DescribeTrainingSample: the "Sample <i> of the training set: {...}." log line.
//   - SampleIndices(n, k): the examples run_glue logs. HF uses Python's random.sample(range(n),
//     3) on the unseeded global generator; loom draws k distinct indices with a
//     std::mt19937_64 seeded 0, so the choice is the same on every run and every rank.
#ifndef LOOM_EXAMPLES_GLUE_PREPROCESS_H_
#define LOOM_EXAMPLES_GLUE_PREPROCESS_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "data/dataset.h"
#include "glue/data_files.h"
#include "models/bert/bert_config.h"
#include "text/bert_tokenizer.h"
#include "trainer/trainer.h"

namespace loom::examples::glue_script {

struct TokenizeOptions {
  int64_t max_length = 128;
  bool pad_to_max_length = true;
  bool is_regression = false;
  std::map<int64_t, int64_t> label_to_id;  // empty: labels kept as they are
  bool keep_labels = true;
  int64_t max_examples = -1;  // < 0: all
};

absl::StatusOr<std::shared_ptr<data::ExampleListDataset>> TokenizeSplit(
    const text::BertTokenizer& tokenizer, const glue::GlueSplit& split,
    const TokenizeOptions& options);

std::map<int64_t, int64_t> ModelLabelMapping(const models::bert::BertConfig& config,
                                             const std::optional<std::string>& task_name,
                                             bool is_regression,
                                             const std::vector<std::string>& label_list,
                                             std::string* warning);

trainer::ComputeMetricsFn GlueComputeMetrics(std::string task_name, bool is_regression);

absl::StatusOr<std::string> FormatPredictResults(const at::Tensor& logits, bool is_regression,
                                                 const std::vector<std::string>& label_list);

std::string DescribeTrainingSample(int64_t index, const glue::GlueExample& raw,
                                   const data::Example& encoded, const std::string& key1,
                                   const std::optional<std::string>& key2);

std::vector<int64_t> SampleIndices(int64_t n, int64_t k);

}  // namespace loom::examples::glue_script

#endif  // LOOM_EXAMPLES_GLUE_PREPROCESS_H_
