#include "text/bert_tokenizer.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "text/unicode.h"

namespace loom::text {
absl::StatusOr<BertTokenizer> BertTokenizer::Create(Vocab vocab, BertTokenizerOptions options) {
  if (options.max_input_chars_per_word < 0) {
    return absl::InvalidArgumentError(absl::StrCat("max_input_chars_per_word must be >= 0, got ",
                                                   options.max_input_chars_per_word));
  }
  if (options.model_max_length.has_value() && *options.model_max_length < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("model_max_length must be >= 0, got ", *options.model_max_length));
  }
  BertTokenizer tok;
  auto id_of = [&](absl::string_view role, const std::string& token,
                   bool required) -> absl::StatusOr<std::optional<int64_t>> {
    if (token.empty() && !required) return std::optional<int64_t>();
    std::optional<int64_t> id = vocab.TokenToId(token);
    if (!id.has_value()) {
      return absl::InvalidArgumentError(
          absl::StrCat(role, " \"", token,
                       "\" is not in the vocabulary; add it to vocab.txt or name another token as ",
                       role, " (tokenizer_config.json / special_tokens_map.json)"));
    }
    return id;
  };
  const SpecialTokens& sp = options.special_tokens;
  ASSIGN_OR_RETURN(std::optional<int64_t> unk, id_of("unk_token", sp.unk, true));
  ASSIGN_OR_RETURN(std::optional<int64_t> sep, id_of("sep_token", sp.sep, true));
  ASSIGN_OR_RETURN(std::optional<int64_t> pad, id_of("pad_token", sp.pad, true));
  ASSIGN_OR_RETURN(std::optional<int64_t> cls, id_of("cls_token", sp.cls, true));
  ASSIGN_OR_RETURN(tok.mask_id_, id_of("mask_token", sp.mask, false));
  tok.unk_id_ = *unk;
  tok.sep_id_ = *sep;
  tok.pad_id_ = *pad;
  tok.cls_id_ = *cls;

  for (const std::string& token : {sp.unk, sp.sep, sp.pad, sp.cls, sp.mask}) {
    if (!token.empty()) tok.special_set_.insert(token);
  }
  for (const std::string& token : options.extra_added_tokens) {
    if (!token.empty()) tok.special_set_.insert(token);
  }
  for (const std::string& token : tok.special_set_) {
    ASSIGN_OR_RETURN(std::u32string cps, DecodeUtf8(token), "special token");
    tok.specials_by_length_.push_back(std::move(cps));
  }
  std::sort(tok.specials_by_length_.begin(), tok.specials_by_length_.end(),
            [](const std::u32string& a, const std::u32string& b) {
              return a.size() != b.size() ? a.size() > b.size() : a < b;
            });
  for (const std::string& token : options.never_split) {
    RETURN_IF_ERROR_CTX(DecodeUtf8(token).status(), "never_split entry");
    tok.never_split_.insert(token);
  }

  BasicTokenizerOptions basic;
  basic.do_lower_case = options.do_lower_case;
  basic.strip_accents = options.strip_accents;
  basic.tokenize_chinese_chars = options.tokenize_chinese_chars;
  basic.clean_text = options.clean_text;
  basic.nfc = options.nfc;
  basic.never_split = tok.never_split_;
  tok.basic_ = std::make_shared<const BasicTokenizer>(std::move(basic));

  auto shared_vocab = std::make_shared<const Vocab>(std::move(vocab));
  WordPieceOptions wp;
  wp.unk_token = sp.unk;
  wp.continuing_subword_prefix = options.continuing_subword_prefix;
  wp.max_input_chars_per_word = options.max_input_chars_per_word;
  tok.wordpiece_ = std::make_shared<const WordPiece>(shared_vocab.get(), std::move(wp));
  tok.vocab_ = std::move(shared_vocab);
  tok.options_ = std::move(options);
  return tok;
}

absl::StatusOr<std::vector<std::string>> BertTokenizer::Tokenize(absl::string_view text) const {
  ASSIGN_OR_RETURN(std::u32string cps, DecodeUtf8(text));
  std::vector<std::string> out;
  auto flush = [&](const std::u32string& chunk) {
    if (chunk.empty()) return;
    if (!options_.do_basic_tokenize) {
      for (const std::u32string& word : SplitOnPythonWhitespace(chunk)) {
        wordpiece_->TokenizeWord(word, &out);
      }
      return;
    }
    for (const std::u32string& word : basic_->TokenizeCodePoints(chunk, &special_set_)) {
      std::string utf8 = EncodeUtf8(word);
      if (never_split_.contains(utf8)) {
        out.push_back(std::move(utf8));
      } else {
        wordpiece_->TokenizeWord(word, &out);
      }
    }
  };

  std::u32string chunk;
  size_t i = 0;
  while (i < cps.size()) {
    const std::u32string* match = nullptr;
    for (const std::u32string& special : specials_by_length_) {
      if (cps.compare(i, special.size(), special) == 0) {
        match = &special;
        break;
      }
    }
    if (match != nullptr) {
      flush(chunk);
      chunk.clear();
      out.push_back(EncodeUtf8(*match));
      i += match->size();
      continue;
    }
    if (options_.do_lower_case) {
      AppendLower(cps[i], &chunk);
    } else {
      chunk.push_back(cps[i]);
    }
    ++i;
  }
  flush(chunk);
  return out;
}

std::vector<int64_t> BertTokenizer::ConvertTokensToIds(
    const std::vector<std::string>& tokens) const {
  std::vector<int64_t> ids;
  ids.reserve(tokens.size());
  for (const std::string& token : tokens) ids.push_back(vocab_->TokenToId(token).value_or(unk_id_));
  return ids;
}

std::string BertTokenizer::ConvertIdToToken(int64_t id) const {
  return vocab_->IdToToken(id).value_or(options_.special_tokens.unk);
}

absl::StatusOr<std::vector<int64_t>> BertTokenizer::TokenizeToIds(absl::string_view text) const {
  ASSIGN_OR_RETURN(std::vector<std::string> tokens, Tokenize(text));
  return ConvertTokensToIds(tokens);
}

namespace {

// [CLS] a [SEP] (b [SEP]) with token types and attention mask, as the options ask.
Encoding Assemble(const std::vector<int64_t>& a, const std::vector<int64_t>& b, bool pair,
                  const EncodeOptions& options, int64_t cls_id, int64_t sep_id) {
  Encoding enc;
  std::vector<int64_t>& ids = enc.input_ids;
  size_t first_len = a.size();
  if (options.add_special_tokens) {
    ids.push_back(cls_id);
    ids.insert(ids.end(), a.begin(), a.end());
    ids.push_back(sep_id);
    first_len += 2;
    if (pair) {
      ids.insert(ids.end(), b.begin(), b.end());
      ids.push_back(sep_id);
    }
  } else {
    ids = a;
    ids.insert(ids.end(), b.begin(), b.end());
  }
  if (options.return_token_type_ids) {
    enc.token_type_ids.assign(ids.size(), 1);
    std::fill(enc.token_type_ids.begin(), enc.token_type_ids.begin() + first_len, 0);
  }
  if (options.return_attention_mask) enc.attention_mask.assign(ids.size(), 1);
  return enc;
}

}  // namespace

absl::StatusOr<Encoding> BertTokenizer::EncodeUnpadded(absl::string_view text,
                                                       std::optional<absl::string_view> text_pair,
                                                       const EncodeOptions& options) const {
  ASSIGN_OR_RETURN(const std::optional<int64_t> max_length,
                   ResolveMaxLength(options, options_.model_max_length));
  ASSIGN_OR_RETURN(std::vector<int64_t> a, TokenizeToIds(text), "first sequence");
  std::vector<int64_t> b;
  const bool pair = text_pair.has_value();
  if (pair) {
    ASSIGN_OR_RETURN(b, TokenizeToIds(*text_pair), "second sequence");
  }
  if (options.truncation != Truncation::kDoNotTruncate) {
    const int64_t specials = options.add_special_tokens ? NumSpecialTokensToAdd(pair) : 0;
    RETURN_IF_ERROR(Truncate(options.truncation, *max_length, specials, pair, a, b));
  }
  return Assemble(a, b, pair, options, cls_id_, sep_id_);
}

absl::StatusOr<Encoding> BertTokenizer::Encode(absl::string_view text,
                                               std::optional<absl::string_view> text_pair,
                                               const EncodeOptions& options) const {
  ASSIGN_OR_RETURN(Encoding enc, EncodeUnpadded(text, text_pair, options));
  if (options.padding == Padding::kMaxLength) {
    PadEncoding(options,
                static_cast<size_t>(
                    options.max_length.value_or(options_.model_max_length.value_or(0))),
                pad_id_, &enc);
  }
  return enc;
}

absl::StatusOr<std::vector<Encoding>> BertTokenizer::EncodeBatch(
    const std::vector<std::string>& texts, const std::vector<std::string>* text_pairs,
    const EncodeOptions& options) const {
  if (text_pairs != nullptr && text_pairs->size() != texts.size()) {
    return absl::InvalidArgumentError(absl::StrCat("EncodeBatch got ", texts.size(), " texts but ",
                                                   text_pairs->size(),
                                                   " text pairs; pass one pair per text"));
  }
  std::vector<Encoding> out;
  out.reserve(texts.size());
  size_t longest = 0;
  for (size_t i = 0; i < texts.size(); ++i) {
    std::optional<absl::string_view> pair;
    if (text_pairs != nullptr) pair = (*text_pairs)[i];
    ASSIGN_OR_RETURN(Encoding enc, Encode(texts[i], pair, options),
                     absl::StrCat("batch example ", i));
    longest = std::max(longest, enc.input_ids.size());
    out.push_back(std::move(enc));
  }
  if (options.padding == Padding::kLongest) {
    for (Encoding& enc : out) PadEncoding(options, longest, pad_id_, &enc);
  }
  return out;
}

}  // namespace loom::text
