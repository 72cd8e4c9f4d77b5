#include "text/unicode.h"

#include <unicode/normalizer2.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>
#include <unicode/ustring.h>
#include <unicode/utf16.h>
#include <unicode/utf8.h>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace loom::text {
namespace {

icu::UnicodeString ToIcu(std::u32string_view cps) {
  icu::UnicodeString s;
  for (char32_t cp : cps) s.append(static_cast<UChar32>(cp));
  return s;
}

std::u32string FromIcu(const icu::UnicodeString& s) {
  std::u32string out;
  out.reserve(s.length());
  for (int32_t i = 0; i < s.length();) {
    UChar32 cp = s.char32At(i);
    out.push_back(static_cast<char32_t>(cp));
    i += U16_LENGTH(cp);
  }
  return out;
}

bool IsAscii(std::u32string_view cps) {
  for (char32_t cp : cps) {
    if (cp >= 0x80) return false;
  }
  return true;
}

std::u32string Normalize(std::u32string_view cps, bool compose) {
  if (IsAscii(cps)) return std::u32string(cps);  // ASCII is invariant under NFC and NFD.
  UErrorCode err = U_ZERO_ERROR;
  const icu::Normalizer2* norm =
      compose ? icu::Normalizer2::getNFCInstance(err) : icu::Normalizer2::getNFDInstance(err);
  if (U_FAILURE(err) || norm == nullptr) return std::u32string(cps);  // ICU data missing.
  icu::UnicodeString result = norm->normalize(ToIcu(cps), err);
  if (U_FAILURE(err)) return std::u32string(cps);
  return FromIcu(result);
}

}  // namespace

absl::StatusOr<std::u32string> DecodeUtf8(absl::string_view utf8) {
  std::u32string out;
  out.reserve(utf8.size());
  const auto* s = reinterpret_cast<const uint8_t*>(utf8.data());
  const int32_t n = static_cast<int32_t>(utf8.size());
  if (utf8.size() > static_cast<size_t>(INT32_MAX)) {
    return absl::InvalidArgumentError(
        absl::StrCat("text of ", utf8.size(), " bytes is too long (at most 2 GiB)"));
  }
  for (int32_t i = 0; i < n;) {
    const int32_t start = i;
    UChar32 cp;
    U8_NEXT(s, i, n, cp);
    if (cp < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("text is not valid UTF-8: malformed byte sequence at byte offset ", start,
                       "; decode the input as UTF-8 (or fix its encoding) before tokenizing"));
    }
    out.push_back(static_cast<char32_t>(cp));
  }
  return out;
}

void AppendUtf8(char32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

std::string EncodeUtf8(std::u32string_view cps) {
  std::string out;
  out.reserve(cps.size());
  for (char32_t cp : cps) AppendUtf8(cp, &out);
  return out;
}

bool IsControlCategory(char32_t cp) {
  switch (u_charType(static_cast<UChar32>(cp))) {
    case U_CONTROL_CHAR:
    case U_FORMAT_CHAR:
    case U_UNASSIGNED:
    case U_PRIVATE_USE_CHAR:
    case U_SURROGATE:
      return true;
    default:
      return false;
  }
}

bool IsSpaceSeparator(char32_t cp) {
  return u_charType(static_cast<UChar32>(cp)) == U_SPACE_SEPARATOR;
}

bool IsPunctuationCategory(char32_t cp) {
  switch (u_charType(static_cast<UChar32>(cp))) {
    case U_DASH_PUNCTUATION:
    case U_START_PUNCTUATION:
    case U_END_PUNCTUATION:
    case U_CONNECTOR_PUNCTUATION:
    case U_OTHER_PUNCTUATION:
    case U_INITIAL_PUNCTUATION:
    case U_FINAL_PUNCTUATION:
      return true;
    default:
      return false;
  }
}

bool IsNonspacingMark(char32_t cp) {
  return u_charType(static_cast<UChar32>(cp)) == U_NON_SPACING_MARK;
}

std::vector<std::u32string> SplitOnPythonWhitespace(std::u32string_view text) {
  std::vector<std::u32string> out;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && IsPythonSpace(text[i])) ++i;
    const size_t start = i;
    while (i < text.size() && !IsPythonSpace(text[i])) ++i;
    if (i > start) out.emplace_back(text.substr(start, i - start));
  }
  return out;
}

std::u32string_view PythonLStrip(std::u32string_view text) {
  size_t i = 0;
  while (i < text.size() && IsPythonSpace(text[i])) ++i;
  return text.substr(i);
}

std::u32string_view PythonRStrip(std::u32string_view text) {
  size_t n = text.size();
  while (n > 0 && IsPythonSpace(text[n - 1])) --n;
  return text.substr(0, n);
}

bool IsPythonSpace(char32_t cp) {
  if (cp == ' ' || (cp >= '\t' && cp <= '\r')) return true;
  if (cp < 0x80) return cp >= 0x1C && cp <= 0x1F;
  if (IsSpaceSeparator(cp)) return true;
  switch (u_charDirection(static_cast<UChar32>(cp))) {
    case U_WHITE_SPACE_NEUTRAL:
    case U_BLOCK_SEPARATOR:
    case U_SEGMENT_SEPARATOR:
      return true;
    default:
      return false;
  }
}

void AppendLower(char32_t cp, std::u32string* out) {
  if (cp < 0x80) {
    out->push_back(cp >= 'A' && cp <= 'Z' ? cp + ('a' - 'A') : cp);
    return;
  }
  UChar src[2];
  int32_t src_len = 0;
  UBool unused_error = false;
  U16_APPEND(src, src_len, 2, static_cast<UChar32>(cp), unused_error);
  UChar dest[16];
  UErrorCode err = U_ZERO_ERROR;
  const int32_t len = u_strToLower(dest, 16, src, src_len, "", &err);
  if (U_FAILURE(err) || unused_error) {
    out->push_back(cp);
    return;
  }
  for (int32_t i = 0; i < len;) {
    UChar32 c;
    U16_NEXT(dest, i, len, c);
    out->push_back(static_cast<char32_t>(c));
  }
}

std::u32string Lower(std::u32string_view cps) {
  if (IsAscii(cps)) {
    std::u32string out;
    out.reserve(cps.size());
    for (char32_t cp : cps) AppendLower(cp, &out);
    return out;
  }
  icu::UnicodeString src = ToIcu(cps);
  std::u16string dest(static_cast<size_t>(src.length()) * 3 + 8, u'\0');
  UErrorCode err = U_ZERO_ERROR;
  int32_t len = u_strToLower(dest.data(), static_cast<int32_t>(dest.size()), src.getBuffer(),
                             src.length(), "", &err);
  if (err == U_BUFFER_OVERFLOW_ERROR) {
    dest.assign(static_cast<size_t>(len), u'\0');
    err = U_ZERO_ERROR;
    len = u_strToLower(dest.data(), len, src.getBuffer(), src.length(), "", &err);
  }
  if (U_FAILURE(err)) {  // Cannot happen with a large enough buffer; fall back per character.
    std::u32string out;
    for (char32_t cp : cps) AppendLower(cp, &out);
    return out;
  }
  return FromIcu(icu::UnicodeString(dest.data(), len));
}

std::u32string Nfd(std::u32string_view cps) { return Normalize(cps, /*compose=*/false); }
std::u32string Nfc(std::u32string_view cps) { return Normalize(cps, /*compose=*/true); }

}  // namespace loom::text
