#include "text/unicode.h"

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::text {
namespace {

using ::loom::base::testing::StatusIs;
using ::testing::HasSubstr;

TEST(Utf8Test, RoundTripsEveryLength) {
  const std::string s = "a\xC3\xA9\xE4\xB8\x96\xF0\x9F\x98\x80";  // a é 世 😀
  ASSERT_OK_AND_ASSIGN(std::u32string cps, DecodeUtf8(s));
  EXPECT_EQ(cps, (std::u32string{U'a', 0xE9, 0x4E16, 0x1F600}));
  EXPECT_EQ(EncodeUtf8(cps), s);
}

TEST(Utf8Test, RejectsMalformedBytesNamingTheOffset) {
  EXPECT_THAT(DecodeUtf8("ab\xC3"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("byte offset 2")));
  EXPECT_THAT(DecodeUtf8("\xC0\xAF"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("byte offset 0")));
  // An encoded surrogate (CESU-8) is not UTF-8.
  EXPECT_THAT(DecodeUtf8("x\xED\xA0\x80"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("byte offset 1")));
}

TEST(CategoryTest, MatchesPythonUnicodedata) {
  // unicodedata.category: '\x07' Cc, '\u200b' Cf, '\ue000' Co, '\u0378' Cn, 'a' Ll.
  EXPECT_TRUE(IsControlCategory(0x07));
  EXPECT_TRUE(IsControlCategory(0x200B));
  EXPECT_TRUE(IsControlCategory(0xE000));
  EXPECT_TRUE(IsControlCategory(0x0378));
  EXPECT_FALSE(IsControlCategory('a'));
  EXPECT_TRUE(IsSpaceSeparator(0x3000));       // Zs
  EXPECT_FALSE(IsSpaceSeparator(0x2028));      // Zl
  EXPECT_TRUE(IsPunctuationCategory(0x00BF));  // ¿ Po
  EXPECT_TRUE(IsPunctuationCategory(0x201C));  // “ Pi
  EXPECT_FALSE(IsPunctuationCategory('$'));    // Sc
  EXPECT_TRUE(IsNonspacingMark(0x0301));
  EXPECT_FALSE(IsNonspacingMark(0x0903));  // Mc
}

TEST(PythonSpaceTest, MatchesStrIsspace) {
  // ''.join(chr(c) for c in range(0x3001) if chr(c).isspace()) in Python 3.11.
  const std::u32string expected = {0x09,   0x0A,   0x0B,   0x0C,   0x0D,   0x1C,   0x1D,   0x1E,
                                   0x1F,   0x20,   0x85,   0xA0,   0x1680, 0x2000, 0x2001, 0x2002,
                                   0x2003, 0x2004, 0x2005, 0x2006, 0x2007, 0x2008, 0x2009, 0x200A,
                                   0x2028, 0x2029, 0x202F, 0x205F, 0x3000};
  std::u32string got;
  for (char32_t c = 0; c <= 0x3000; ++c) {
    if (IsPythonSpace(c)) got.push_back(c);
  }
  EXPECT_EQ(got, expected);
}

TEST(LowerTest, PerCharacterIsFullMappingWithoutContext) {
  std::u32string out;
  AppendLower(U'A', &out);
  AppendLower(0x0130, &out);  // 'İ'.lower() == 'i\u0307'
  AppendLower(0x03A3, &out);  // 'Σ'.lower() == 'σ' (alone: not final)
  AppendLower(0x00C9, &out);  // É
  AppendLower(0x4E16, &out);  // 世 unchanged
  EXPECT_EQ(out, (std::u32string{U'a', U'i', 0x0307, 0x03C3, 0x00E9, 0x4E16}));
}

TEST(LowerTest, WholeStringAppliesFinalSigma) {
  // 'ΟΔΟΣ ΣΑ'.lower() == 'οδος σα'
  EXPECT_EQ(Lower(U"\u039F\u0394\u039F\u03A3 \u03A3\u0391"),
            U"\u03BF\u03B4\u03BF\u03C2 \u03C3\u03B1");
  EXPECT_EQ(Lower(U"ABC def"), U"abc def");
}

TEST(NormalizeTest, NfdAndNfcMatchPython) {
  // unicodedata.normalize('NFD', 'é\u212b') == 'e\u0301A\u030a'; NFC of that is 'éÅ'.
  EXPECT_EQ(Nfd(U"\u00E9\u212B"), U"e\u0301A\u030A");
  EXPECT_EQ(Nfc(U"e\u0301A\u030A"), U"\u00E9\u00C5");
  EXPECT_EQ(Nfc(U"\u212B"), U"\u00C5");
  EXPECT_EQ(Nfd(U"plain"), U"plain");
}

TEST(UnicodeTest, PythonSplitAndStripUseStrIsspace) {
  // U+3000 (ideographic space) and U+0085 (NEL) are whitespace to Python; U+200B is not.
  const std::u32string text = U"\u3000 a\tb\u0085c\u200Bd  ";
  EXPECT_EQ(SplitOnPythonWhitespace(text),
            (std::vector<std::u32string>{U"a", U"b", U"c\u200Bd"}));
  EXPECT_EQ(PythonLStrip(text), std::u32string_view(U"a\tb\u0085c\u200Bd  "));
  EXPECT_EQ(PythonRStrip(text), std::u32string_view(U"\u3000 a\tb\u0085c\u200Bd"));
  EXPECT_TRUE(SplitOnPythonWhitespace(U" \t ").empty());
}

}  // namespace
}  // namespace loom::text
