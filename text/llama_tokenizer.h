// LlamaTokenizer: transformers 4.41's slow `LlamaTokenizer` (Llama 1/2 and their relatives:
// a SentencePiece tokenizer.model) over Google's SentencePiece library (Debian's
// libsentencepiece 0.1.97, what the `sentencepiece` Python module wraps). No LibTorch.
//
// Contract:
//   - The vocabulary is the SentencePiece model's pieces; size() is HF's len(tokenizer). The
//     special tokens (bos "<s>", eos "</s>", unk "<unk>", and pad when set) must be pieces of
//     the model (Create is InvalidArgument otherwise).
//   - Tokenize(text) is HF's `LlamaTokenizer.tokenize`: the special tokens written in the text
//     are cut out whole (the longest at the earliest position; HF's Trie.split) and every
//     other stretch is SentencePiece-encoded. legacy (the default, as 4.41 with a null
//     "legacy"): `sp_model.encode(stretch)`. Non-legacy: the model is loaded without the dummy
//     prefix, "▁" in the text becomes " ", the text gets one "▁" in front (add_prefix_space),
//     stretches starting with "▁" or " " are encoded as unk_token + stretch with the unk
//     token's pieces removed again, and a leading lone "▁" before a special token is dropped.
//     Text must be valid UTF-8.
//   - Encode(text, options): bos + ids (+ eos) per add_bos_token / add_eos_token when
//     add_special_tokens, truncated and padded as text/encoding.h says (padding needs a
//     pad_token: FailedPrecondition "Asking to pad but the tokenizer does not have a padding
//     token", HF's words). token_type_ids, when asked for, are zeros.
//   - Decode(ids, options) is HF's `_decode` + LlamaTokenizer.convert_tokens_to_string
//     (special tokens kept verbatim unless skip_special_tokens; with add_prefix_space the first
//     piece's "▁" dropped); clean_up_tokenization_spaces defaults to false, as Llama's configs.
//   - FromPretrained(dir) reads tokenizer.model (required; NotFound naming it otherwise),
//     tokenizer_config.json and special_tokens_map.json (optional). Settings loom does not
//     implement are refused naming the file and key (sp_model_kwargs, added tokens that are
//     not the special tokens at their piece ids). SavePretrained(dir) writes tokenizer.model,
//     tokenizer_config.json and special_tokens_map.json as transformers 4.41 does, atomically.
//
// Example:
//   ASSIGN_OR_RETURN(text::LlamaTokenizer tok, text::LlamaTokenizer::FromPretrained(model_dir));
//   ASSIGN_OR_RETURN(text::Encoding enc, tok.Encode("Hello world", {.return_token_type_ids = false}));
#ifndef LOOM_TEXT_LLAMA_TOKENIZER_H_
#define LOOM_TEXT_LLAMA_TOKENIZER_H_

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

struct LlamaTokenizerOptions {
  std::string bos_token = "<s>";
  std::string eos_token = "</s>";
  std::string unk_token = "<unk>";
  std::optional<std::string> pad_token;  // Llama's tokenizers have none
  bool add_bos_token = true;
  bool add_eos_token = false;
  bool legacy = true;
  bool add_prefix_space = true;
  std::optional<int64_t> model_max_length;  // unset: no limit
  bool clean_up_tokenization_spaces = false;
};

struct LlamaDecodeOptions {
  bool skip_special_tokens = false;
};

class LlamaTokenizer {
 public:
  // `serialized_model` is the bytes of a tokenizer.model file.
  static absl::StatusOr<LlamaTokenizer> Create(std::string serialized_model,
                                               LlamaTokenizerOptions options = {});
  static absl::StatusOr<LlamaTokenizer> FromPretrained(const std::string& dir);

  absl::StatusOr<std::vector<std::string>> Tokenize(absl::string_view text) const;
  std::vector<int64_t> ConvertTokensToIds(const std::vector<std::string>& tokens) const;
  absl::StatusOr<Encoding> Encode(absl::string_view text, const EncodeOptions& options = {}) const;
  absl::StatusOr<std::string> Decode(const std::vector<int64_t>& ids,
                                     const LlamaDecodeOptions& options = {}) const;
  absl::Status SavePretrained(const std::string& dir) const;

  int64_t size() const { return piece_count_; }
  int64_t bos_token_id() const { return bos_id_; }
  int64_t eos_token_id() const { return eos_id_; }
  int64_t unk_token_id() const { return unk_id_; }
  std::optional<int64_t> pad_token_id() const { return pad_id_; }
  bool IsSpecialToken(const std::string& token) const;
  const LlamaTokenizerOptions& options() const { return options_; }

 private:
  LlamaTokenizer() = default;
  absl::StatusOr<std::vector<std::string>> EncodeStretch(const std::string& stretch) const;
  std::vector<std::string> SpecialTokens() const;

  std::shared_ptr<const SentencePieceModel> sp_;  // without the dummy prefix when non-legacy
  std::shared_ptr<const std::string> model_bytes_;
  LlamaTokenizerOptions options_;
  int64_t piece_count_ = 0;
  int64_t bos_id_ = 0, eos_id_ = 0, unk_id_ = 0;
  std::optional<int64_t> pad_id_;
  size_t unk_token_length_ = 0;
};

}  // namespace loom::text

#endif  // LOOM_TEXT_LLAMA_TOKENIZER_H_
