#include "text/llama_tokenizer.h"

#include <algorithm>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "base/status_macros.h"
#include "text/unicode.h"

namespace loom::text {
namespace {

constexpr absl::string_view kUnderline = "\xE2\x96\x81";  // U+2581, SentencePiece's space

absl::Status SentencePieceError(absl::string_view what, const std::string& message) {
  return absl::InvalidArgumentError(absl::StrCat(what, ": SentencePiece says: ", message));
}

struct Stretch {
  std::string text;
  bool special = false;
};

// HF's Trie.split over the special tokens: each occurrence (the longest at the earliest
// position) cut out whole. Byte positions are code point positions here: a token is valid
// UTF-8, so it can only match where a character starts.
std::vector<Stretch> SplitOnSpecialTokens(const std::string& text,
                                          std::vector<std::string> tokens) {
  std::stable_sort(tokens.begin(), tokens.end(),
                   [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
  std::vector<Stretch> out;
  size_t start = 0, i = 0;
  while (i < text.size()) {
    const auto match = std::find_if(tokens.begin(), tokens.end(), [&](const std::string& t) {
      return !t.empty() && text.compare(i, t.size(), t) == 0;
    });
    if (match == tokens.end()) {
      ++i;
      continue;
    }
    if (i > start) out.push_back({text.substr(start, i - start), false});
    out.push_back({*match, true});
    i += match->size();
    start = i;
  }
  if (start < text.size()) out.push_back({text.substr(start), false});
  return out;
}


}  // namespace

absl::StatusOr<LlamaTokenizer> LlamaTokenizer::Create(std::string serialized_model,
                                                      LlamaTokenizerOptions options) {
  std::string error;
  std::shared_ptr<const SentencePieceModel> sp =
      SentencePieceModel::Load(serialized_model, &error, /*add_dummy_prefix=*/options.legacy);
  if (sp == nullptr) return SentencePieceError("tokenizer.model is not a SentencePiece model", error);
  LlamaTokenizer tok;
  tok.piece_count_ = sp->PieceSize();
  auto piece_id = [&](const std::string& token, const char* key) -> absl::StatusOr<int64_t> {
    const int piece = sp->PieceToId(token);
    if (piece == sp->UnkId() && token != sp->IdToPiece(sp->UnkId())) {
      return absl::InvalidArgumentError(absl::StrCat(
          key, " \"", token, "\" is not a piece of the SentencePiece model; loom's LlamaTokenizer "
          "needs its special tokens in tokenizer.model (Llama's have <unk>, <s> and </s>)"));
    }
    return piece;
  };
  ASSIGN_OR_RETURN(tok.bos_id_, piece_id(options.bos_token, "bos_token"));
  ASSIGN_OR_RETURN(tok.eos_id_, piece_id(options.eos_token, "eos_token"));
  ASSIGN_OR_RETURN(tok.unk_id_, piece_id(options.unk_token, "unk_token"));
  if (options.pad_token.has_value()) {
    ASSIGN_OR_RETURN(tok.pad_id_, piece_id(*options.pad_token, "pad_token"));
  }
  std::vector<std::string> unk_pieces;
  if (!sp->Encode(options.unk_token, &unk_pieces, &error)) {
    return SentencePieceError("encoding the unk token", error);
  }
  tok.unk_token_length_ = unk_pieces.size();
  tok.sp_ = std::move(sp);
  tok.model_bytes_ = std::make_shared<const std::string>(std::move(serialized_model));
  tok.options_ = std::move(options);
  return tok;
}

std::vector<std::string> LlamaTokenizer::SpecialTokens() const {
  std::vector<std::string> out = {options_.bos_token, options_.eos_token, options_.unk_token};
  if (options_.pad_token.has_value()) out.push_back(*options_.pad_token);
  return out;
}

bool LlamaTokenizer::IsSpecialToken(const std::string& token) const {
  const std::vector<std::string> specials = SpecialTokens();
  return std::find(specials.begin(), specials.end(), token) != specials.end();
}

// LlamaTokenizer._tokenize on one stretch between special tokens.
absl::StatusOr<std::vector<std::string>> LlamaTokenizer::EncodeStretch(
    const std::string& stretch) const {
  std::vector<std::string> pieces;
  std::string error;
  const bool marked = absl::StartsWith(stretch, kUnderline) || absl::StartsWith(stretch, " ");
  if (options_.legacy || !marked) {
    if (!sp_->Encode(stretch, &pieces, &error)) return SentencePieceError("encoding text", error);
    return pieces;
  }
  if (!sp_->Encode(options_.unk_token + stretch, &pieces, &error)) {
    return SentencePieceError("encoding text", error);
  }
  if (pieces.size() >= unk_token_length_) {
    pieces.erase(pieces.begin(), pieces.begin() + static_cast<std::ptrdiff_t>(unk_token_length_));
  }
  return pieces;
}

absl::StatusOr<std::vector<std::string>> LlamaTokenizer::Tokenize(absl::string_view text) const {
  RETURN_IF_ERROR(DecodeUtf8(text).status());
  std::string prepared(text);
  if (!options_.legacy && !prepared.empty()) {
    prepared = absl::StrReplaceAll(prepared, {{kUnderline, " "}});
    if (options_.add_prefix_space) prepared = std::string(kUnderline) + prepared;
  }
  std::vector<std::string> tokens;
  for (const Stretch& s : SplitOnSpecialTokens(prepared, SpecialTokens())) {
    if (s.special) {
      tokens.push_back(s.text);
      continue;
    }
    ASSIGN_OR_RETURN(std::vector<std::string> pieces, EncodeStretch(s.text));
    tokens.insert(tokens.end(), pieces.begin(), pieces.end());
  }
  if (!options_.legacy && tokens.size() > 1 && tokens[0] == kUnderline &&
      IsSpecialToken(tokens[1])) {
    tokens.erase(tokens.begin());
  }
  return tokens;
}

std::vector<int64_t> LlamaTokenizer::ConvertTokensToIds(
    const std::vector<std::string>& tokens) const {
  std::vector<int64_t> ids;
  ids.reserve(tokens.size());
  for (const std::string& token : tokens) ids.push_back(sp_->PieceToId(token));
  return ids;
}

absl::StatusOr<Encoding> LlamaTokenizer::Encode(absl::string_view text,
                                                const EncodeOptions& options) const {
  ASSIGN_OR_RETURN(std::vector<std::string> tokens, Tokenize(text));
  std::vector<int64_t> ids = ConvertTokensToIds(tokens), none;
  const bool bos = options.add_special_tokens && options_.add_bos_token;
  const bool eos = options.add_special_tokens && options_.add_eos_token;
  ASSIGN_OR_RETURN(std::optional<int64_t> max_length,
                   ResolveMaxLength(options, options_.model_max_length));
  if (max_length.has_value() && options.truncation != Truncation::kDoNotTruncate) {
    RETURN_IF_ERROR(Truncate(options.truncation, *max_length, (bos ? 1 : 0) + (eos ? 1 : 0),
                             /*pair=*/false, ids, none));
  }
  Encoding enc;
  if (bos) enc.input_ids.push_back(bos_id_);
  enc.input_ids.insert(enc.input_ids.end(), ids.begin(), ids.end());
  if (eos) enc.input_ids.push_back(eos_id_);
  if (options.return_token_type_ids) enc.token_type_ids.assign(enc.input_ids.size(), 0);
  if (options.return_attention_mask) enc.attention_mask.assign(enc.input_ids.size(), 1);
  if (options.padding != Padding::kDoNotPad) {
    if (!pad_id_.has_value()) {
      return absl::FailedPreconditionError(
          "Asking to pad but the tokenizer does not have a padding token (LlamaTokenizer: set "
          "pad_token, e.g. to the eos token, or do not pad)");
    }
    PadEncoding(options, max_length.value_or(enc.input_ids.size()), *pad_id_, &enc);
  }
  return enc;
}

absl::StatusOr<std::string> LlamaTokenizer::Decode(const std::vector<int64_t>& ids,
                                                   const LlamaDecodeOptions& options) const {
  std::vector<std::string> tokens;
  for (int64_t id : ids) {
    if (id < 0 || id >= piece_count_) {
      return absl::InvalidArgumentError(
          absl::StrCat("token id ", id, " is outside the vocabulary (size ", piece_count_, ")"));
    }
    const std::string token = sp_->IdToPiece(static_cast<int>(id));
    if (options.skip_special_tokens && IsSpecialToken(token)) continue;
    tokens.push_back(token);
  }
  if (tokens.empty()) return std::string();
  // convert_tokens_to_string: the manually added prefix space goes; special tokens verbatim.
  if (options_.add_prefix_space && absl::StartsWith(tokens[0], kUnderline)) {
    tokens[0] = tokens[0].substr(kUnderline.size());
  }
  std::string out;
  std::vector<std::string> current;
  bool prev_special = false;
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (IsSpecialToken(tokens[i])) {
      if (!prev_special && i != 0 && options_.legacy) out += " ";
      out += sp_->Decode(current) + tokens[i];
      prev_special = true;
      current.clear();
    } else {
      if (prev_special && i == 1 && options_.add_prefix_space &&
          !absl::StartsWith(tokens[i], kUnderline)) {
        out += " ";
      }
      current.push_back(tokens[i]);
      prev_special = false;
    }
  }
  out += sp_->Decode(current);
  return options_.clean_up_tokenization_spaces ? CleanUpTokenization(out) : out;
}

}  // namespace loom::text
