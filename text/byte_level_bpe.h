// ByteLevelBpeTokenizer: the byte-level BPE tokenizers of HF `tokenizers` 0.19 (GPT-2 and Llama 3
// style tokenizer.json files, what transformers' fast tokenizers load), read from
// tokenizer.json. Written here: no packaged C++ implementation of `tokenizers` is available
// (the pre-tokenizer regexes run on ICU's regex engine, Debian's libicu).
//
// Contract:
//   - FromTokenizerJson(text, source) accepts: model {"type": "BPE"} with vocab and merges
//     (strings "a b" or pairs), ignore_merges, no dropout, no byte_fallback, no subword
//     prefix / suffix; every merge's result in the vocabulary (a repeated merge keeps its last
//     rank); normalizer null; pre_tokenizer ByteLevel (add_prefix_space, the GPT-2
//     regex when use_regex) or a Sequence of Split(Regex, behavior "Isolated", not inverted)
//     and ByteLevel(use_regex false) — Llama 3's; post_processor null, ByteLevel or
//     TemplateProcessing whose "single" template is special tokens around $A (or a Sequence of
//     those); decoder ByteLevel or null; added_tokens (matched in the raw text before
//     pre-tokenization, longest first; lstrip / rstrip honoured). Anything else is
//     Unimplemented naming `source`, the section and the type (e.g. model type "WordPiece").
//   - Tokenize(text): tokenizers' Encoding.tokens — an added token as the span it matched
//     (with the whitespace lstrip / rstrip took in), then the tokens of each stretch between: the regex splits
//     (\s meaning Unicode White_Space, as Oniguruma's), each piece's UTF-8 bytes mapped through
//     GPT-2's bytes_to_unicode, then BPE: merges applied lowest rank first (with ignore_merges a
//     piece that is itself in the vocabulary stays whole). Invalid UTF-8 is InvalidArgument.
//   - Encode(text, options): the ids, with the template's special tokens when
//     add_special_tokens; truncation and padding as text/encoding.h (padding needs pad_token).
//   - Decode(ids, skip_special_tokens): the tokens' characters mapped back to bytes (added
//     tokens verbatim; ids beyond the vocabulary skipped, as tokenizers does), as UTF-8 with
//     invalid sequences replaced by U+FFFD (HF's from_utf8_lossy), cleaned up
//     (text/encoding.h) unless tokenizer_config.json's clean_up_tokenization_spaces is false
//     (transformers 4.41's default is true).
//   - FromPretrained(dir): tokenizer.json (required) plus tokenizer_config.json's
//     model_max_length, pad_token and clean_up_tokenization_spaces.
//     SavePretrained(dir) writes both files.
//
// Example:
//   ASSIGN_OR_RETURN(auto tok, text::ByteLevelBpeTokenizer::FromPretrained(dir));
//   ASSIGN_OR_RETURN(text::Encoding enc, tok.Encode("Hello world", {}));
#ifndef LOOM_TEXT_BYTE_LEVEL_BPE_H_
#define LOOM_TEXT_BYTE_LEVEL_BPE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "text/encoding.h"

namespace loom::text {

class ByteLevelBpeTokenizer {
 public:
  static absl::StatusOr<ByteLevelBpeTokenizer> FromTokenizerJson(const std::string& text,
                                                                 const std::string& source);
  static absl::StatusOr<ByteLevelBpeTokenizer> FromPretrained(const std::string& dir);
  ~ByteLevelBpeTokenizer();
  ByteLevelBpeTokenizer(ByteLevelBpeTokenizer&&) noexcept;
  ByteLevelBpeTokenizer& operator=(ByteLevelBpeTokenizer&&) noexcept;

  absl::StatusOr<std::vector<std::string>> Tokenize(absl::string_view text) const;
  absl::StatusOr<Encoding> Encode(absl::string_view text, const EncodeOptions& options = {}) const;
  absl::StatusOr<std::string> Decode(const std::vector<int64_t>& ids,
                                     bool skip_special_tokens = false) const;
  absl::Status SavePretrained(const std::string& dir) const;

  int64_t size() const;
  std::optional<int64_t> TokenToId(const std::string& token) const;
  std::optional<int64_t> pad_token_id() const { return pad_id_; }
  std::optional<int64_t> model_max_length() const { return model_max_length_; }

  // The parsed tokenizer.json (defined in byte_level_bpe.cc).
  struct State;

 private:
  ByteLevelBpeTokenizer();
  static absl::StatusOr<ByteLevelBpeTokenizer> Parse(const std::string& text,
                                                     const std::string& source);
  absl::StatusOr<std::vector<int64_t>> PieceIds(const std::string& piece) const;
  absl::StatusOr<std::vector<std::pair<std::string, int64_t>>> TokenizeWithIds(
      absl::string_view text) const;
  std::unique_ptr<State> state_;
  std::optional<int64_t> pad_id_;
  std::optional<int64_t> model_max_length_;
  std::string json_text_;
  std::string config_text_;
};

}  // namespace loom::text

#endif  // LOOM_TEXT_BYTE_LEVEL_BPE_H_
