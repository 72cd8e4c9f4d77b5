#include "text/t5_tokenizer.h"

#include <algorithm>
#include <cctype>
#include <tuple>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "text/sentencepiece_model.h"
#include "text/unicode.h"

namespace loom::text {
namespace {

constexpr absl::string_view kPrefixSpace = "\xE2\x96\x81";  // U+2581, SentencePiece's space

// Python's str.strip() on UTF-8 text (valid: it comes out of SentencePiece).
std::string PythonStrip(const std::string& utf8) {
  absl::StatusOr<std::u32string> cps = DecodeUtf8(utf8);
  if (!cps.ok()) return utf8;
  return EncodeUtf8(PythonRStrip(PythonLStrip(*cps)));
}


absl::Status SentencePieceError(absl::string_view what, const std::string& message) {
  return absl::InvalidArgumentError(absl::StrCat(what, ": SentencePiece says: ", message));
}

}  // namespace

absl::StatusOr<T5Tokenizer> T5Tokenizer::Create(std::string serialized_model,
                                                T5TokenizerOptions options) {
  if (options.extra_ids < 0 || options.extra_ids > 100000) {
    return absl::InvalidArgumentError(
        absl::StrCat("extra_ids must be in 0..100000, got ", options.extra_ids));
  }
  std::string error;
  std::shared_ptr<const SentencePieceModel> sp = SentencePieceModel::Load(serialized_model, &error);
  if (sp == nullptr) return SentencePieceError("spiece.model is not a SentencePiece model", error);
  T5Tokenizer tok;
  tok.piece_count_ = sp->PieceSize();
  tok.unk_id_ = sp->UnkId();
  for (auto [token, id, key] :
       {std::tuple{&options.eos_token, &tok.eos_id_, "eos_token"},
        std::tuple{&options.unk_token, &tok.unk_id_, "unk_token"},
        std::tuple{&options.pad_token, &tok.pad_id_, "pad_token"}}) {
    const int piece = sp->PieceToId(*token);
    if (piece == sp->UnkId() && *token != sp->IdToPiece(sp->UnkId())) {
      return absl::InvalidArgumentError(absl::StrCat(
          key, " \"", *token,
          "\" is not a piece of the SentencePiece model; loom's T5Tokenizer needs its special "
          "tokens in spiece.model (T5's models have <pad>, </s> and <unk>)"));
    }
    *id = piece;
  }
  tok.sp_ = std::move(sp);
  tok.model_bytes_ = std::make_shared<const std::string>(std::move(serialized_model));
  tok.options_ = std::move(options);
  std::vector<std::string> added = tok.SentinelTokens();
  for (const std::string* s : {&tok.options_.eos_token, &tok.options_.unk_token,
                               &tok.options_.pad_token}) {
    added.push_back(*s);
  }
  for (const std::string& s : added) {
    ASSIGN_OR_RETURN(std::u32string cps, DecodeUtf8(s), "special token " + s);
    if (!cps.empty()) tok.added_by_length_.push_back(std::move(cps));
  }
  std::stable_sort(tok.added_by_length_.begin(), tok.added_by_length_.end(),
                   [](const auto& a, const auto& b) { return a.size() > b.size(); });
  return tok;
}

std::vector<std::string> T5Tokenizer::SentinelTokens() const {
  std::vector<std::string> out;
  out.reserve(options_.extra_ids);
  for (int64_t i = 0; i < options_.extra_ids; ++i) out.push_back(absl::StrCat("<extra_id_", i, ">"));
  return out;
}

std::optional<int64_t> T5Tokenizer::AddedTokenId(const std::string& token) const {
  constexpr absl::string_view kPrefix = "<extra_id_";
  if (absl::StartsWith(token, kPrefix) && absl::EndsWith(token, ">")) {
    const std::string digits = token.substr(kPrefix.size(), token.size() - kPrefix.size() - 1);
    int64_t i = 0;
    const bool canonical = !digits.empty() && (digits == "0" || digits[0] != '0') &&
                           digits.size() < 10 &&
                           std::all_of(digits.begin(), digits.end(), ::isdigit);
    if (canonical) i = std::stoll(digits);
    if (canonical && i < options_.extra_ids) return piece_count_ + options_.extra_ids - 1 - i;
  }
  if (token == options_.eos_token) return eos_id_;
  if (token == options_.unk_token) return unk_id_;
  if (token == options_.pad_token) return pad_id_;
  return std::nullopt;
}

bool T5Tokenizer::IsSpecialId(int64_t id) const {
  return id == eos_id_ || id == unk_id_ || id == pad_id_ || (id >= piece_count_ && id < size());
}

// transformers 4.41 `Trie.split` (the longest added token at the earliest position) followed
// by `tokenize`'s lstrip/rstrip of the text around each sentinel.
std::vector<T5Tokenizer::Chunk> T5Tokenizer::SplitOnAddedTokens(const std::u32string& text) const {
  std::vector<Chunk> chunks;
  size_t start = 0, i = 0;
  while (i < text.size()) {
    const std::u32string* match = nullptr;
    for (const std::u32string& token : added_by_length_) {
      if (text.compare(i, token.size(), token) == 0) {
        match = &token;
        break;
      }
    }
    if (match == nullptr) {
      ++i;
      continue;
    }
    if (i > start) chunks.push_back({text.substr(start, i - start), false, false});
    const bool sentinel = AddedTokenId(EncodeUtf8(*match)).value_or(0) >= piece_count_;
    chunks.push_back({*match, true, sentinel});
    i += match->size();
    start = i;
  }
  if (start < text.size()) chunks.push_back({text.substr(start), false, false});
  for (size_t k = 0; k < chunks.size(); ++k) {
    if (!chunks[k].strips) continue;
    if (k + 1 < chunks.size()) chunks[k + 1].text = std::u32string(PythonLStrip(chunks[k + 1].text));
    if (k > 0) chunks[k - 1].text = std::u32string(PythonRStrip(chunks[k - 1].text));
  }
  return chunks;
}

absl::StatusOr<std::vector<std::string>> T5Tokenizer::Tokenize(absl::string_view text) const {
  ASSIGN_OR_RETURN(std::u32string cps, DecodeUtf8(text));
  std::vector<std::string> tokens;
  for (const Chunk& chunk : SplitOnAddedTokens(cps)) {
    if (chunk.text.empty()) continue;
    if (chunk.added) {
      tokens.push_back(EncodeUtf8(chunk.text));
      continue;
    }
    std::vector<std::string> pieces;
    std::string error;
    if (!sp_->Encode(EncodeUtf8(chunk.text), &pieces, &error)) {
      return SentencePieceError("encoding text", error);
    }
    tokens.insert(tokens.end(), pieces.begin(), pieces.end());
  }
  return tokens;
}

std::vector<int64_t> T5Tokenizer::ConvertTokensToIds(const std::vector<std::string>& tokens) const {
  std::vector<int64_t> ids;
  ids.reserve(tokens.size());
  for (const std::string& token : tokens) {
    std::optional<int64_t> added = AddedTokenId(token);
    ids.push_back(added.has_value() ? *added : sp_->PieceToId(token));
  }
  return ids;
}

absl::StatusOr<std::string> T5Tokenizer::ConvertIdToToken(int64_t id) const {
  if (id < 0 || id >= size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "token id ", id, " is outside the tokenizer's vocabulary (0..", size() - 1,
        "); the model's vocab_size may be larger than the tokenizer's (HF raises IndexError)"));
  }
  if (id >= piece_count_) return absl::StrCat("<extra_id_", piece_count_ + options_.extra_ids - 1 - id, ">");
  return sp_->IdToPiece(static_cast<int>(id));
}

absl::StatusOr<std::vector<int64_t>> T5Tokenizer::TokenizeToIds(absl::string_view text) const {
  ASSIGN_OR_RETURN(std::vector<std::string> tokens, Tokenize(text));
  return ConvertTokensToIds(tokens);
}

absl::StatusOr<Encoding> T5Tokenizer::Encode(absl::string_view text,
                                             const EncodeOptions& options) const {
  ASSIGN_OR_RETURN(const std::optional<int64_t> max_length,
                   ResolveMaxLength(options, options_.model_max_length));
  ASSIGN_OR_RETURN(std::vector<int64_t> ids, TokenizeToIds(text));
  if (options.truncation != Truncation::kDoNotTruncate) {
    std::vector<int64_t> none;
    RETURN_IF_ERROR(Truncate(options.truncation, *max_length, options.add_special_tokens ? 1 : 0,
                             /*pair=*/false, ids, none));
  }
  if (options.add_special_tokens && (ids.empty() || ids.back() != eos_id_)) ids.push_back(eos_id_);
  Encoding enc;
  enc.input_ids = std::move(ids);
  if (options.return_token_type_ids) enc.token_type_ids.assign(enc.input_ids.size(), 0);
  if (options.return_attention_mask) enc.attention_mask.assign(enc.input_ids.size(), 1);
  if (options.padding == Padding::kMaxLength) {
    PadEncoding(options, static_cast<size_t>(max_length.value_or(0)), pad_id_, &enc);
  }
  return enc;
}

absl::StatusOr<std::vector<Encoding>> T5Tokenizer::EncodeBatch(const std::vector<std::string>& texts,
                                                               const EncodeOptions& options) const {
  std::vector<Encoding> out;
  out.reserve(texts.size());
  size_t longest = 0;
  for (size_t i = 0; i < texts.size(); ++i) {
    ASSIGN_OR_RETURN(Encoding enc, Encode(texts[i], options), absl::StrCat("batch example ", i));
    longest = std::max(longest, enc.input_ids.size());
    out.push_back(std::move(enc));
  }
  if (options.padding == Padding::kLongest) {
    for (Encoding& enc : out) PadEncoding(options, longest, pad_id_, &enc);
  }
  return out;
}

// T5Tokenizer.convert_tokens_to_string (transformers 4.38-4.41) on a non-empty stretch.
std::string T5Tokenizer::DecodeStretch(std::vector<std::string> tokens) const {
  if (options_.add_prefix_space && absl::StartsWith(tokens[0], kPrefixSpace)) {
    tokens[0].erase(0, kPrefixSpace.size());
  }
  std::string out;
  std::vector<std::string> pieces;
  bool prev_special = false;
  auto flush = [&] {
    out += sp_->Decode(pieces);
    pieces.clear();
  };
  for (std::string& token : tokens) {
    const bool special = token == options_.eos_token || token == options_.unk_token ||
                         token == options_.pad_token;
    if (special) {
      if (!prev_special) out += " ";
      flush();
      out += token;
    } else {
      pieces.push_back(std::move(token));
    }
    prev_special = special;
  }
  flush();
  return PythonStrip(out);
}

absl::StatusOr<std::string> T5Tokenizer::Decode(const std::vector<int64_t>& ids,
                                                const DecodeOptions& options) const {
  std::vector<std::string> parts, stretch;
  for (int64_t id : ids) {
    ASSIGN_OR_RETURN(std::string token, ConvertIdToToken(id));
    if (options.skip_special_tokens && IsSpecialId(id)) continue;
    if (id < piece_count_) {
      stretch.push_back(std::move(token));
      continue;
    }
    if (!stretch.empty()) {  // a sentinel ends the stretch before it
      std::string text = DecodeStretch(std::move(stretch));
      if (!text.empty()) parts.push_back(std::move(text));
      stretch.clear();
    }
    parts.push_back(std::move(token));
  }
  if (!stretch.empty()) parts.push_back(DecodeStretch(std::move(stretch)));
  std::string text = absl::StrJoin(parts, std::string(options.spaces_between_special_tokens ? " " : ""));
  const bool clean = options.clean_up_tokenization_spaces.value_or(
      options_.clean_up_tokenization_spaces);
  return clean ? CleanUpTokenization(text) : text;
}

}  // namespace loom::text
