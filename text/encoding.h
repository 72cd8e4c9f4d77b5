// The encoding options and result shared by loom's tokenizers (BertTokenizer, T5Tokenizer), and
// the truncation and padding arithmetic of transformers 4.41 `PreTrainedTokenizerBase`
// (`truncate_sequences`, `_pad`), so that every tokenizer truncates and pads one way.
//
// Contract:
//   - Truncation / Padding are HF's strategies; ParseTruncation / ParsePadding take HF's
//     spellings ("longest_first", "max_length", ...) and list the valid ones otherwise.
//   - ResolveMaxLength: the call's max_length, else the tokenizer's model_max_length; an error
//     naming the missing setting when truncation or max_length padding needs one and there is
//     none (HF would silently not truncate).
//   - Truncate(truncation, max_length, specials, pair, a, b): removes tokens from the ends of
//     `a` and `b` so that they and `specials` added tokens fit max_length (HF's
//     `truncate_sequences`; longest_first on a pair drops from the longer one, B on a tie).
//     When the chosen sequence cannot give up enough tokens (HF logs an error and returns it
//     untruncated) it returns InvalidArgument saying what to change.
//   - PadEncoding(options, length, pad_id, encoding): right padding to `length` with pad_id,
//     token type 0 and attention mask 0 (the fields the options ask for).
//
// Example:
//   ASSIGN_OR_RETURN(std::optional<int64_t> max_length, ResolveMaxLength(opts, model_max));
//   RETURN_IF_ERROR(Truncate(opts.truncation, *max_length, /*specials=*/1, false, ids, none));
#ifndef LOOM_TEXT_ENCODING_H_
#define LOOM_TEXT_ENCODING_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace loom::text {

enum class Truncation { kDoNotTruncate, kLongestFirst, kOnlyFirst, kOnlySecond };
enum class Padding { kDoNotPad, kLongest, kMaxLength };

// HF's spellings: "do_not_truncate" / "longest_first" / "only_first" / "only_second" and
// "do_not_pad" / "longest" / "max_length". InvalidArgument lists the valid ones.
absl::StatusOr<Truncation> ParseTruncation(absl::string_view name);
absl::StatusOr<Padding> ParsePadding(absl::string_view name);
absl::string_view TruncationName(Truncation truncation);
absl::string_view PaddingName(Padding padding);

struct EncodeOptions {
  std::optional<int64_t> max_length;  // unset: the tokenizer's model_max_length
  Truncation truncation = Truncation::kDoNotTruncate;
  Padding padding = Padding::kDoNotPad;
  bool add_special_tokens = true;
  bool return_token_type_ids = true;
  bool return_attention_mask = true;
};

struct Encoding {
  std::vector<int64_t> input_ids;
  std::vector<int64_t> token_type_ids;  // empty unless return_token_type_ids
  std::vector<int64_t> attention_mask;  // empty unless return_attention_mask
};

absl::StatusOr<std::optional<int64_t>> ResolveMaxLength(const EncodeOptions& options,
                                                        std::optional<int64_t> model_max_length);

absl::Status Truncate(Truncation truncation, int64_t max_length, int64_t specials, bool pair,
                      std::vector<int64_t>& a, std::vector<int64_t>& b);

void PadEncoding(const EncodeOptions& options, size_t length, int64_t pad_id, Encoding* encoding);

// transformers 4.41 `PreTrainedTokenizerBase.clean_up_tokenization`: " ." -> ".", " n't" ->
// "n't", ... (what decode does with clean_up_tokenization_spaces).
std::string CleanUpTokenization(const std::string& text);

}  // namespace loom::text

#endif  // LOOM_TEXT_ENCODING_H_
