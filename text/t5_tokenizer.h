// T5Tokenizer: transformers 4.38-4.41's slow `T5Tokenizer` (legacy mode, the default) over
// Google's SentencePiece library (Debian's libsentencepiece 0.1.97, the library the
// `sentencepiece` Python module wraps), for loom's seq2seq models. No LibTorch.
//
// Contract:
//   - The vocabulary is the SentencePiece model's pieces (ids 0..P-1; T5's models put <pad> 0,
//     </s> 1, <unk> 2) followed by `extra_ids` sentinels: "<extra_id_i>" has id P + extra_ids
//     - 1 - i (so <extra_id_0> is the last id). size() = P + extra_ids is HF's len(tokenizer);
//     vocab_size() = P is HF's `vocab_size` property.
//   - Tokenize(text) is HF's `PreTrainedTokenizer.tokenize` with T5's added tokens: the special
//     tokens (eos, unk, pad) and sentinels written in the text are cut out whole (the longest
//     one at the earliest position); a sentinel also strips Python whitespace (str.isspace) from
//     the end of the text before it and the start of the text after it (HF's lstrip/rstrip
//     AddedTokens); every remaining non-empty stretch is SentencePiece-encoded to pieces
//     (`sp_model.encode(text, out_type=str)`). Ids are `piece_to_id` of each piece (unknown
//     surfaces map to unk). Text must be valid UTF-8 (InvalidArgument naming the byte).
//   - Encode(text, options): the ids with </s> appended when add_special_tokens (not when the
//     ids already end with it, as HF's `_add_eos_if_not_present`), truncated from the end first
//     so that ids + 1 fit max_length (`truncate_sequences`), padded with pad_token_id on the
//     right (text/encoding.h). token_type_ids, when asked for, are zeros
//     (`create_token_type_ids_from_sequences`); HF's T5 does not return them unless asked.
//   - Decode(ids, options) is HF's `_decode` + T5's `convert_tokens_to_string`: with
//     skip_special_tokens the special ids (eos, unk, pad, sentinels) are dropped; sentinels
//     split the rest into stretches; each stretch loses the "▁" of its first piece
//     (add_prefix_space), is SentencePiece-decoded with eos/unk/pad kept verbatim (preceded by
//     a space unless another special token came just before) and stripped; stretches and
//     sentinels are joined with " ", and `clean_up_tokenization` (" ." -> ".", " n't" -> "n't",
//     ...) runs when clean_up_tokenization_spaces (the call's, else the tokenizer's, true by
//     default). An id outside 0..size()-1 is InvalidArgument (HF raises IndexError).
//   - FromPretrained(dir) reads HF's slow-tokenizer folder: spiece.model (required; a folder
//     with only tokenizer.json is refused, naming spiece.model), tokenizer_config.json,
//     special_tokens_map.json and added_tokens.json (optional). Settings loom does not
//     implement are refused, naming the file and key: legacy=false, non-empty sp_model_kwargs,
//     added tokens other than T5's special tokens and sentinels at their usual ids, special
//     tokens that are not pieces of the model. A model_max_length of 1e18 or more (HF writes
//     int(1e30) for "none") means none.
//   - SavePretrained(dir) writes what transformers 4.41's T5Tokenizer.save_pretrained writes
//     (spiece.model, tokenizer_config.json with added_tokens_decoder, special_tokens_map.json,
//     added_tokens.json; json.dumps(indent=2, sort_keys=True) layout), each atomically.
//
// Example:
//   ASSIGN_OR_RETURN(text::T5Tokenizer tok, text::T5Tokenizer::FromPretrained(model_dir));
//   text::EncodeOptions opts;
//   opts.max_length = 128;
//   opts.truncation = text::Truncation::kLongestFirst;
//   opts.return_token_type_ids = false;
//   ASSIGN_OR_RETURN(text::Encoding enc, tok.Encode("translate English to German: Hi", opts));
//   text::DecodeOptions decode;
//   decode.skip_special_tokens = true;
//   ASSIGN_OR_RETURN(std::string back, tok.Decode(enc.input_ids, decode));
#ifndef LOOM_TEXT_T5_TOKENIZER_H_
#define LOOM_TEXT_T5_TOKENIZER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "text/encoding.h"
#include "text/sentencepiece_model.h"

namespace loom::text {

struct T5TokenizerOptions {
  int64_t extra_ids = 100;
  std::string eos_token = "</s>";
  std::string unk_token = "<unk>";
  std::string pad_token = "<pad>";
  std::optional<int64_t> model_max_length;  // unset: no limit (HF's int(1e30))
  bool clean_up_tokenization_spaces = true;
  bool add_prefix_space = true;
};

struct DecodeOptions {
  bool skip_special_tokens = false;
  std::optional<bool> clean_up_tokenization_spaces;  // unset: the tokenizer's setting
  bool spaces_between_special_tokens = true;
};

class T5Tokenizer {
 public:
  // `serialized_model` is the bytes of a spiece.model file.
  static absl::StatusOr<T5Tokenizer> Create(std::string serialized_model,
                                            T5TokenizerOptions options = {});
  static absl::StatusOr<T5Tokenizer> FromPretrained(const std::string& dir);

  absl::StatusOr<std::vector<std::string>> Tokenize(absl::string_view text) const;
  std::vector<int64_t> ConvertTokensToIds(const std::vector<std::string>& tokens) const;
  absl::StatusOr<std::string> ConvertIdToToken(int64_t id) const;

  absl::StatusOr<Encoding> Encode(absl::string_view text, const EncodeOptions& options = {}) const;
  // Padding::kLongest pads every encoding to the batch's longest.
  absl::StatusOr<std::vector<Encoding>> EncodeBatch(const std::vector<std::string>& texts,
                                                    const EncodeOptions& options = {}) const;
  absl::StatusOr<std::string> Decode(const std::vector<int64_t>& ids,
                                     const DecodeOptions& options = {}) const;

  absl::Status SavePretrained(const std::string& dir) const;

  int64_t size() const { return piece_count_ + options_.extra_ids; }
  int64_t vocab_size() const { return piece_count_; }
  int64_t eos_token_id() const { return eos_id_; }
  int64_t unk_token_id() const { return unk_id_; }
  int64_t pad_token_id() const { return pad_id_; }
  // True for eos, unk, pad and the sentinels (HF's all_special_ids).
  bool IsSpecialId(int64_t id) const;
  const T5TokenizerOptions& options() const { return options_; }
  // "<extra_id_0>", "<extra_id_1>", ... (HF's additional_special_tokens).
  std::vector<std::string> SentinelTokens() const;

 private:
  T5Tokenizer() = default;

  // The added tokens (special tokens and sentinels) cut out of `text`, in order.
  struct Chunk {
    std::u32string text;
    bool added = false;
    bool strips = false;  // a sentinel: strips whitespace beside it
  };
  std::vector<Chunk> SplitOnAddedTokens(const std::u32string& text) const;
  absl::StatusOr<std::vector<int64_t>> TokenizeToIds(absl::string_view text) const;
  std::string DecodeStretch(std::vector<std::string> tokens) const;
  std::optional<int64_t> AddedTokenId(const std::string& token) const;

  std::shared_ptr<const SentencePieceModel> sp_;
  std::shared_ptr<const std::string> model_bytes_;
  T5TokenizerOptions options_;
  int64_t piece_count_ = 0;
  int64_t eos_id_ = 0, unk_id_ = 0, pad_id_ = 0;
  std::vector<std::u32string> added_by_length_;  // longest first
};

}  // namespace loom::text

#endif  // LOOM_TEXT_T5_TOKENIZER_H_
