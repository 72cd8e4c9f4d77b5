// BertTokenizer: HF's BERT tokenizer (WordPiece vocabularies) for loom, without LibTorch.
//
// Contract:
//   - Tokenize(text): special tokens ([CLS], [SEP], [PAD], [UNK], [MASK] and any non-normalized
//     added token of a tokenizer.json) written in the text are kept whole, matched on the raw
//     text (longest match at the earliest position). When do_lower_case, the rest is
//     lower-cased character by character (Python's ch.lower()). Then each stretch between
//     special tokens goes through BasicTokenizer (see basic_tokenizer.h; special tokens and
//     never_split are never split) and WordPiece; never_split words skip WordPiece. With
//     do_basic_tokenize=false, WordPiece runs on whitespace-split words directly.
//   - Encode(text, pair, options): ids of `[CLS] A [SEP]` or `[CLS] A [SEP] B [SEP]`
//     (just A / A B without add_special_tokens); token_type_ids 0 for CLS, A and its SEP,
//     1 for B and the last SEP; attention_mask 1 on real tokens. Truncation to max_length
//     (or model_max_length when unset) counts the special tokens:
//       longest_first  drops one token at a time from the end of the longer sequence; on a
//                      tie it drops from B (HF's rule). A single sequence loses its tail.
//       only_first / only_second  drop the excess from the end of A / B.
//     When the chosen sequence cannot give up enough tokens (HF logs an error and returns the
//     sequence untruncated) Encode returns InvalidArgument saying so. Padding appends
//     pad_token_id (token type 0, mask 0) on the right: to max_length, or in EncodeBatch to
//     the longest encoding of the batch ("longest" is a no-op for a single Encode).
//   - FromPretrained(dir, use_fast): reads a saved HF tokenizer folder. With use_fast (what
//     AutoTokenizer does by default) and a tokenizer.json present, its WordPiece model and
//     BertNormalizer drive tokenization (no NFC step, as in `tokenizers`); otherwise
//     vocab.txt. tokenizer_config.json (do_lower_case, strip_accents, tokenize_chinese_chars,
//     do_basic_tokenize, never_split, model_max_length, *_token) and special_tokens_map.json
//     (overrides the *_token entries) are optional. Errors name the file and key.
//   - SavePretrained(dir) writes vocab.txt, tokenizer_config.json and special_tokens_map.json
//     as HF's BertTokenizer does (json.dumps(indent=2, sort_keys=True) layout), each file
//     replaced atomically, so transformers.AutoTokenizer can load the folder.
//   - Every special token must be in the vocabulary (set one to "" to go without it, e.g.
//     mask); Create fails with InvalidArgument naming the missing token otherwise.
//
// Example:
//   ASSIGN_OR_RETURN(text::BertTokenizer tok, text::BertTokenizer::FromPretrained(dir));
//   text::EncodeOptions opts;
//   opts.max_length = 128;
//   opts.truncation = text::Truncation::kLongestFirst;
//   opts.padding = text::Padding::kMaxLength;
//   ASSIGN_OR_RETURN(text::Encoding enc, tok.Encode("The cat sat.", "It was tired.", opts));
#ifndef LOOM_TEXT_BERT_TOKENIZER_H_
#define LOOM_TEXT_BERT_TOKENIZER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "text/basic_tokenizer.h"
#include "text/encoding.h"
#include "text/vocab.h"
#include "text/wordpiece.h"

namespace loom::text {

struct SpecialTokens {
  std::string unk = "[UNK]";
  std::string sep = "[SEP]";
  std::string pad = "[PAD]";
  std::string cls = "[CLS]";
  std::string mask = "[MASK]";
};

struct BertTokenizerOptions {
  bool do_lower_case = true;
  bool do_basic_tokenize = true;
  std::vector<std::string> never_split;
  bool tokenize_chinese_chars = true;
  std::optional<bool> strip_accents;  // unset: follows do_lower_case
  std::optional<int64_t> model_max_length;
  SpecialTokens special_tokens;
  // Set from tokenizer.json; BertTokenizer's (vocab.txt) values are the defaults.
  bool clean_text = true;
  bool nfc = true;
  std::string continuing_subword_prefix = "##";
  int max_input_chars_per_word = 100;
  std::vector<std::string> extra_added_tokens;  // matched whole like special tokens
};

class BertTokenizer {
 public:
  static absl::StatusOr<BertTokenizer> Create(Vocab vocab, BertTokenizerOptions options = {});
  static absl::StatusOr<BertTokenizer> FromPretrained(const std::string& dir, bool use_fast = true);

  absl::StatusOr<std::vector<std::string>> Tokenize(absl::string_view text) const;
  // Unknown tokens map to unk_token_id().
  std::vector<int64_t> ConvertTokensToIds(const std::vector<std::string>& tokens) const;
  // The token of `id`, or unk_token for an id the vocabulary lacks.
  std::string ConvertIdToToken(int64_t id) const;

  absl::StatusOr<Encoding> Encode(absl::string_view text,
                                  std::optional<absl::string_view> text_pair = std::nullopt,
                                  const EncodeOptions& options = {}) const;
  // `text_pairs` is null or as long as `texts`.
  absl::StatusOr<std::vector<Encoding>> EncodeBatch(const std::vector<std::string>& texts,
                                                    const std::vector<std::string>* text_pairs,
                                                    const EncodeOptions& options = {}) const;

  // Tokens Encode adds around one sequence (2) or a pair (3).
  static int NumSpecialTokensToAdd(bool pair) { return pair ? 3 : 2; }

  absl::Status SavePretrained(const std::string& dir) const;

  const Vocab& vocab() const { return *vocab_; }
  const BertTokenizerOptions& options() const { return options_; }
  int64_t unk_token_id() const { return unk_id_; }
  int64_t sep_token_id() const { return sep_id_; }
  int64_t pad_token_id() const { return pad_id_; }
  int64_t cls_token_id() const { return cls_id_; }
  std::optional<int64_t> mask_token_id() const { return mask_id_; }

 private:
  BertTokenizer() = default;

  absl::StatusOr<std::vector<int64_t>> TokenizeToIds(absl::string_view text) const;
  absl::StatusOr<Encoding> EncodeUnpadded(absl::string_view text,
                                          std::optional<absl::string_view> text_pair,
                                          const EncodeOptions& options) const;

  std::shared_ptr<const Vocab> vocab_;
  BertTokenizerOptions options_;
  std::shared_ptr<const BasicTokenizer> basic_;
  std::shared_ptr<const WordPiece> wordpiece_;
  absl::flat_hash_set<std::string> never_split_;    // options_.never_split
  absl::flat_hash_set<std::string> special_set_;    // special + extra added tokens
  std::vector<std::u32string> specials_by_length_;  // longest first
  int64_t unk_id_ = 0, sep_id_ = 0, pad_id_ = 0, cls_id_ = 0;
  std::optional<int64_t> mask_id_;
};

}  // namespace loom::text

#endif  // LOOM_TEXT_BERT_TOKENIZER_H_
