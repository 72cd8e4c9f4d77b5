// Unicode helpers for the BERT tokenizer, over ICU, with Python's semantics.
//
// Contract:
//   - Text travels as UTF-8 std::string at the API and as std::u32string (code points)
//     inside the tokenizer. DecodeUtf8 rejects malformed UTF-8 (overlong forms, encoded
//     surrogates, truncated sequences) with InvalidArgument naming the byte offset.
//   - Category predicates follow Python's unicodedata.category() letters: IsControlCategory
//     is "C*" (Cc, Cf, Cn, Co, Cs), IsSpaceSeparator is "Zs", IsPunctuationCategory "P*",
//     IsNonspacingMark "Mn". ICU 72 implements Unicode 15.0, Python 3.11 Unicode 14.0: the
//     two agree on every code point assigned in 14.0.
//   - AppendLower is Python's `ch.lower()` for one character (full case mapping without
//     context, so U+0130 becomes "i\u0307" and U+03A3 always becomes U+03C3); Lower is
//     Python's `s.lower()` for a whole string (with Final_Sigma: "ΟΔΟΣ" -> "οδος" ending in ς).
//   - Nfd / Nfc are unicodedata.normalize("NFD"/"NFC").
//   - IsPythonSpace is Python's str.isspace() for one character (bidi class WS, B or S, or
//     category Zs), the separator set of str.split() with no arguments.
//   - SplitOnPythonWhitespace is str.split() with no arguments; PythonLStrip / PythonRStrip
//     are str.lstrip() / str.rstrip() (views into the argument).
//
// Example:
//   ASSIGN_OR_RETURN(std::u32string cps, text::DecodeUtf8(line));
//   std::u32string folded = text::Nfd(cps);
//   std::string back = text::EncodeUtf8(folded);
#ifndef LOOM_TEXT_UNICODE_H_
#define LOOM_TEXT_UNICODE_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace loom::text {

absl::StatusOr<std::u32string> DecodeUtf8(absl::string_view utf8);
std::string EncodeUtf8(std::u32string_view cps);
void AppendUtf8(char32_t cp, std::string* out);

bool IsControlCategory(char32_t cp);
bool IsSpaceSeparator(char32_t cp);
bool IsPunctuationCategory(char32_t cp);
bool IsNonspacingMark(char32_t cp);
bool IsPythonSpace(char32_t cp);
std::vector<std::u32string> SplitOnPythonWhitespace(std::u32string_view text);
std::u32string_view PythonLStrip(std::u32string_view text);
std::u32string_view PythonRStrip(std::u32string_view text);

// Appends Python's `chr(cp).lower()` to `out`.
void AppendLower(char32_t cp, std::u32string* out);
std::u32string Lower(std::u32string_view cps);

std::u32string Nfd(std::u32string_view cps);
std::u32string Nfc(std::u32string_view cps);

}  // namespace loom::text

#endif  // LOOM_TEXT_UNICODE_H_
