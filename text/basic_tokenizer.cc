#include "text/basic_tokenizer.h"

#include <utility>

#include "base/status_macros.h"
#include "text/unicode.h"

namespace loom::text {

bool IsBertWhitespace(char32_t cp) {
  if (cp == ' ' || cp == '\t' || cp == '\n' || cp == '\r') return true;
  return cp >= 0x80 && IsSpaceSeparator(cp);
}

bool IsBertControl(char32_t cp) {
  if (cp == '\t' || cp == '\n' || cp == '\r') return false;
  return IsControlCategory(cp);
}

bool IsBertPunctuation(char32_t cp) {
  if ((cp >= 33 && cp <= 47) || (cp >= 58 && cp <= 64) || (cp >= 91 && cp <= 96) ||
      (cp >= 123 && cp <= 126)) {
    return true;
  }
  return cp >= 0x80 && IsPunctuationCategory(cp);
}

bool IsCjkIdeograph(char32_t cp) {
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) ||
         (cp >= 0x20000 && cp <= 0x2A6DF) || (cp >= 0x2A700 && cp <= 0x2B73F) ||
         (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B820 && cp <= 0x2CEAF) ||
         (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}


BasicTokenizer::BasicTokenizer(BasicTokenizerOptions options) : options_(std::move(options)) {}

absl::StatusOr<std::vector<std::string>> BasicTokenizer::Tokenize(
    absl::string_view text, const absl::flat_hash_set<std::string>* extra_never_split) const {
  ASSIGN_OR_RETURN(std::u32string cps, DecodeUtf8(text));
  std::vector<std::string> out;
  for (const std::u32string& token : TokenizeCodePoints(cps, extra_never_split)) {
    out.push_back(EncodeUtf8(token));
  }
  return out;
}

std::vector<std::u32string> BasicTokenizer::TokenizeCodePoints(
    std::u32string_view text, const absl::flat_hash_set<std::string>* extra_never_split) const {
  std::u32string cleaned;
  cleaned.reserve(text.size());
  for (char32_t cp : text) {
    if (options_.clean_text) {
      if (cp == 0 || cp == 0xFFFD || IsBertControl(cp)) continue;
      if (IsBertWhitespace(cp)) {
        cleaned.push_back(U' ');
        continue;
      }
    }
    if (options_.tokenize_chinese_chars && IsCjkIdeograph(cp)) {
      cleaned.push_back(U' ');
      cleaned.push_back(cp);
      cleaned.push_back(U' ');
      continue;
    }
    cleaned.push_back(cp);
  }
  if (options_.nfc) cleaned = Nfc(cleaned);

  auto never_split = [&](const std::u32string& token) {
    if (options_.never_split.empty() &&
        (extra_never_split == nullptr || extra_never_split->empty())) {
      return false;
    }
    const std::string utf8 = EncodeUtf8(token);
    return options_.never_split.contains(utf8) ||
           (extra_never_split != nullptr && extra_never_split->contains(utf8));
  };

  std::vector<std::u32string> pieces;
  for (std::u32string& token : SplitOnPythonWhitespace(cleaned)) {
    if (never_split(token)) {
      pieces.push_back(std::move(token));
      continue;
    }
    if (options_.do_lower_case) token = Lower(token);
    if (StripAccents()) {
      std::u32string stripped;
      for (char32_t cp : Nfd(token)) {
        if (!IsNonspacingMark(cp)) stripped.push_back(cp);
      }
      token = std::move(stripped);
    }
    // HF checks never_split again on the lower-cased, accent-stripped token.
    if (!options_.do_split_on_punc || never_split(token)) {
      pieces.push_back(std::move(token));
      continue;
    }
    std::u32string run;
    for (char32_t cp : token) {
      if (IsBertPunctuation(cp)) {
        if (!run.empty()) pieces.push_back(std::move(run));
        run.clear();
        pieces.emplace_back(1, cp);
      } else {
        run.push_back(cp);
      }
    }
    if (!run.empty()) pieces.push_back(std::move(run));
  }

  // HF re-splits " ".join(pieces) on whitespace: empty pieces vanish, and a piece that
  // gained whitespace (none do in practice) would split.
  std::vector<std::u32string> out;
  for (const std::u32string& piece : pieces) {
    for (std::u32string& part : SplitOnPythonWhitespace(piece)) out.push_back(std::move(part));
  }
  return out;
}

}  // namespace loom::text
