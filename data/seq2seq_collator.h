// Seq2SeqCollator: transformers 4.41's DataCollatorForSeq2Seq (padding="longest", padding on the
// right), what run_translation / run_summarization train with.
//
// Contract:
//   - "labels" (or "label") of every example are taken out, the other fields go through
//     PaddingCollator (tokenizer.pad: input_ids with pad_token_id, attention_mask with 0, ...).
//   - labels are right-padded with label_pad_token_id (-100 by default: ignored by the loss;
//     run_translation passes the tokenizer's pad id with --ignore_pad_token_for_loss false) to
//     the longest label in the batch, rounded up to pad_to_multiple_of when set; the result is
//     int64 "labels". Examples must all have labels or none.
//   - With decoder_input_ids_from_labels set (the model's prepare_decoder_input_ids_from_labels,
//     T5's _shift_right), "decoder_input_ids" = that function of the padded labels.
//   Errors are InvalidArgument naming the field and the example.
//
// Example:
//   Seq2SeqCollatorOptions o;
//   o.pad_token_id = tokenizer.pad_token_id();
//   o.decoder_input_ids_from_labels = [&](const at::Tensor& l) { return body->ShiftRight(l); };
//   ASSIGN_OR_RETURN(Batch batch, Seq2SeqCollator(o).Collate(examples));
#ifndef LOOM_DATA_SEQ2SEQ_COLLATOR_H_
#define LOOM_DATA_SEQ2SEQ_COLLATOR_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "data/batch.h"
#include "data/collator.h"

namespace loom::data {

struct Seq2SeqCollatorOptions {
  int64_t pad_token_id = 0;
  int64_t label_pad_token_id = -100;
  std::optional<int64_t> pad_to_multiple_of;
  std::function<at::Tensor(const at::Tensor& labels)> decoder_input_ids_from_labels;
};

class Seq2SeqCollator : public Collator {
 public:
  explicit Seq2SeqCollator(Seq2SeqCollatorOptions options);
  absl::StatusOr<Batch> Collate(const std::vector<Example>& examples) const override;

 private:
  Seq2SeqCollatorOptions options_;
  PaddingCollator inputs_;
};

}  // namespace loom::data

#endif  // LOOM_DATA_SEQ2SEQ_COLLATOR_H_
