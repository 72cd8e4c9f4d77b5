#include "data/seq2seq_collator.h"

#include <algorithm>
#include <exception>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "base/torch_status.h"

namespace loom::data {
namespace {

// HF's label_name: "label" when the first example has it, else "labels".
std::string LabelName(const Example& first) { return first.count("label") ? "label" : "labels"; }

absl::StatusOr<at::Tensor> PadLabels(const std::vector<at::Tensor>& labels,
                                     const Seq2SeqCollatorOptions& o) {
  int64_t longest = 0;
  for (size_t i = 0; i < labels.size(); ++i) {
    if (labels[i].dim() != 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "example ", i, ": labels must be a 1-D sequence of token ids, got shape ",
          c10::str(labels[i].sizes())));
    }
    longest = std::max(longest, labels[i].size(0));
  }
  if (o.pad_to_multiple_of.has_value()) {
    const int64_t m = *o.pad_to_multiple_of;
    longest = (longest + m - 1) / m * m;
  }
  at::Tensor out = at::full({static_cast<int64_t>(labels.size()), longest}, o.label_pad_token_id,
                            at::kLong);
  for (size_t i = 0; i < labels.size(); ++i) {
    out[i].narrow(0, 0, labels[i].size(0)).copy_(labels[i].to(at::kLong));
  }
  return out;
}

}  // namespace

Seq2SeqCollator::Seq2SeqCollator(Seq2SeqCollatorOptions options)
    : options_(std::move(options)),
      inputs_(PaddingCollatorOptions()
                  .set_pad_token_id(options_.pad_token_id)
                  .set_pad_to_multiple_of(options_.pad_to_multiple_of)) {}

absl::StatusOr<Batch> Seq2SeqCollator::Collate(const std::vector<Example>& examples) const {
  if (examples.empty()) return absl::InvalidArgumentError("cannot collate an empty batch");
  if (options_.pad_to_multiple_of.has_value() && *options_.pad_to_multiple_of < 1) {
    return absl::InvalidArgumentError("pad_to_multiple_of must be >= 1");
  }
  const std::string label_name = LabelName(examples.front());
  const bool has_labels = examples.front().count(label_name) > 0;
  std::vector<Example> rest;
  std::vector<at::Tensor> labels;
  for (size_t i = 0; i < examples.size(); ++i) {
    Example e = examples[i];
    auto it = e.find(label_name);
    if ((it != e.end()) != has_labels) {
      return absl::InvalidArgumentError(absl::StrCat(
          "example ", i, (has_labels ? " lacks" : " has"), " \"", label_name,
          "\"; every example of a batch must have labels, or none"));
    }
    if (it != e.end()) {
      labels.push_back(it->second);
      e.erase(it);
    }
    rest.push_back(std::move(e));
  }
  ASSIGN_OR_RETURN(Batch batch, inputs_.Collate(rest));
  if (!has_labels) return batch;
  ASSIGN_OR_RETURN(batch["labels"], PadLabels(labels, options_));
  if (options_.decoder_input_ids_from_labels) {
    try {
      batch["decoder_input_ids"] = options_.decoder_input_ids_from_labels(batch["labels"]);
    } catch (const std::exception& e) {
      return base::TorchErrorToStatus(e, absl::StatusCode::kInvalidArgument,
                                      "decoder_input_ids from labels");
    }
  }
  return batch;
}

}  // namespace loom::data
