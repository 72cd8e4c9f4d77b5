// Collators: turn a list of examples into one batch (HF's data_collator argument, transformers
// 4.38 `Trainer.__init__`: default_data_collator without a tokenizer, DataCollatorWithPadding
// with one).
//
// Contract (both collators):
//   - Collate is const and thread-safe (DataLoader workers call it concurrently).
//   - Every example must have the same field names; otherwise InvalidArgument naming the field
//     and the example that lacks (or adds) it. An empty list is InvalidArgument. A field whose
//     dtype or (for stacked fields) shape differs between examples is InvalidArgument naming the
//     field, both examples and their dtypes/shapes.
//   - Output fields are stacked along a new leading batch dimension, in Batch's sorted order.
//
// DefaultCollator = HF's default_data_collator (transformers data/data_collator.py):
//   - "label" (one number per example) becomes "labels" of shape [B]: int64 when the label is an
//     integer or bool tensor, float32 when floating point. A "label" with more than one element
//     is InvalidArgument (HF calls .item() on it; use "label_ids" for several labels).
//   - otherwise "label_ids" becomes "labels", stacked with its dtype kept.
//   - every other field is stacked with its dtype kept (a field literally named "labels" is
//     stacked as is and, as in HF, wins over "label"/"label_ids"). Fields whose first example
//     holds an undefined tensor (HF: None) are left out.
//
// PaddingCollator = HF's DataCollatorWithPadding(padding="longest") with tokenizer.pad's rules,
// padding on the right:
//   - the target length is the longest `model_input_name` ("input_ids") in the batch, rounded up
//     to a multiple of pad_to_multiple_of when set (also for a single example).
//   - padded along dim 0 to the target: model_input_name with pad_token_id, "attention_mask" with
//     0, "token_type_ids" with pad_token_type_id, "special_tokens_mask" with 1, any field named in
//     extra_pad_values with its value, and with pad_labels (HF's
//     DataCollatorForTokenClassification) "label"/"labels"/"label_ids" with label_pad_token_id
//     (-100). A padded field longer than the target is InvalidArgument.
//   - with return_attention_mask (BERT-style tokenizers) an example without "attention_mask" gets
//     int64 ones of its input length before padding, as tokenizer.pad does.
//   - other fields are stacked (ragged ones are InvalidArgument naming the field and telling how
//     to pad them); then "label" and "label_ids" are renamed "labels".
//   - Deviations: padding_side="left" and padding="max_length" are not offered; dtypes are kept
//     (HF builds tensors from Python lists, so integer fields come out int64 there; with
//     pad_labels HF also casts every field to int64 and keeps the name "label" — here labels
//     are always renamed "labels", which is what the model reads).
//
// Example:
//   PaddingCollator collator(PaddingCollatorOptions().set_pad_to_multiple_of(8));
//   ASSIGN_OR_RETURN(Batch batch, collator.Collate(examples));  // batch["input_ids"]: [B, 8k]
#ifndef LOOM_DATA_COLLATOR_H_
#define LOOM_DATA_COLLATOR_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "data/batch.h"

namespace loom::data {

class Collator {
 public:
  virtual ~Collator();
  virtual absl::StatusOr<Batch> Collate(const std::vector<Example>& examples) const = 0;
};

class DefaultCollator : public Collator {
 public:
  absl::StatusOr<Batch> Collate(const std::vector<Example>& examples) const override;
};

struct PaddingCollatorOptions {
  int64_t pad_token_id = 0;
  int64_t pad_token_type_id = 0;
  std::optional<int64_t> pad_to_multiple_of;
  std::string model_input_name = "input_ids";
  bool return_attention_mask = true;
  bool pad_labels = false;
  int64_t label_pad_token_id = -100;
  std::map<std::string, double> extra_pad_values;

  PaddingCollatorOptions& set_pad_token_id(int64_t v) {
    pad_token_id = v;
    return *this;
  }
  PaddingCollatorOptions& set_pad_token_type_id(int64_t v) {
    pad_token_type_id = v;
    return *this;
  }
  PaddingCollatorOptions& set_pad_to_multiple_of(std::optional<int64_t> v) {
    pad_to_multiple_of = v;
    return *this;
  }
  PaddingCollatorOptions& set_model_input_name(std::string v) {
    model_input_name = std::move(v);
    return *this;
  }
  PaddingCollatorOptions& set_return_attention_mask(bool v) {
    return_attention_mask = v;
    return *this;
  }
  PaddingCollatorOptions& set_pad_labels(bool v) {
    pad_labels = v;
    return *this;
  }
  PaddingCollatorOptions& set_label_pad_token_id(int64_t v) {
    label_pad_token_id = v;
    return *this;
  }
  PaddingCollatorOptions& add_extra_pad_value(std::string field, double value) {
    extra_pad_values[std::move(field)] = value;
    return *this;
  }
};

class PaddingCollator : public Collator {
 public:
  explicit PaddingCollator(PaddingCollatorOptions options = {}) : options_(std::move(options)) {}
  // Also InvalidArgument when model_input_name is missing or 0-dimensional, or
  // pad_to_multiple_of < 1.
  absl::StatusOr<Batch> Collate(const std::vector<Example>& examples) const override;
  const PaddingCollatorOptions& options() const { return options_; }

 private:
  PaddingCollatorOptions options_;
};

}  // namespace loom::data

#endif  // LOOM_DATA_COLLATOR_H_
