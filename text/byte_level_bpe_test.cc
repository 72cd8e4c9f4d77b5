#include "text/byte_level_bpe.h"

#include <string>
#include <vector>

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace loom::text {
namespace {

using ::loom::base::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Json = nlohmann::json;

// A byte-level vocabulary (the 256 byte characters, ids 0..255) plus merges of "Ġ" (the space
// byte's character) with "a", then "Ġa" with "b": "Ġab" id 257.
Json TinyTokenizer() {
  Json vocab = Json::object();
  int id = 0;
  for (int b = 0; b < 256; ++b) {
    // GPT-2's bytes_to_unicode by hand: printable ASCII maps to itself, space to U+0120.
    std::string ch;
    if (b >= '!' && b <= '~') ch = std::string(1, static_cast<char>(b));
    else if (b == ' ') ch = "\xC4\xA0";
    else ch = "<" + std::to_string(b) + ">";  // placeholders: never looked up below
    vocab[ch] = id++;
  }
  vocab["\xC4\xA0" "a"] = 256;
  vocab["\xC4\xA0" "ab"] = 257;
  vocab["ab"] = 258;
  vocab["!!"] = 260;
  vocab["!!!!"] = 261;
  return {{"model", {{"type", "BPE"}, {"vocab", vocab},
                     {"merges", {"\xC4\xA0 a", "\xC4\xA0" "a b", "a b", "! !", "!! !!"}}}},
          {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}}},
          {"post_processor", {{"type", "TemplateProcessing"},
                              {"single", {{{"SpecialToken", {{"id", "<s>"}}}}, {{"Sequence", {{"id", "A"}}}}}},
                              {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", {259}}, {"tokens", {"<s>"}}}}}}}},
          {"decoder", {{"type", "ByteLevel"}}},
          {"added_tokens", {{{"id", 259}, {"content", "<s>"}, {"special", true}}}}};
}

TEST(ByteLevelBpeTest, MergesByRankAndTheTemplate) {
  ASSERT_OK_AND_ASSIGN(ByteLevelBpeTokenizer tok,
                       ByteLevelBpeTokenizer::FromTokenizerJson(TinyTokenizer().dump(), "t.json"));
  EXPECT_EQ(tok.size(), 262);
  // "ab ab": the regex gives "ab" and " ab"; "ab" merges by "a b" (rank 2), " ab" by "Ġ a" then
  // "Ġa b".
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> tokens, tok.Tokenize("ab ab"));
  EXPECT_THAT(tokens, ElementsAre("ab", "\xC4\xA0" "ab"));
  ASSERT_OK_AND_ASSIGN(Encoding enc, tok.Encode("ab ab", {.return_token_type_ids = false}));
  EXPECT_THAT(enc.input_ids, ElementsAre(259, 258, 257));
  ASSERT_OK_AND_ASSIGN(std::string back, tok.Decode(enc.input_ids, /*skip_special_tokens=*/true));
  EXPECT_EQ(back, "ab ab");
  ASSERT_OK_AND_ASSIGN(std::string with_special, tok.Decode(enc.input_ids, false));
  EXPECT_EQ(with_special, "<s>ab ab");
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> added, tok.Tokenize("x<s>y"));
  EXPECT_THAT(added, ElementsAre("x", "<s>", "y"));
}

// One piece of 200000 characters (a run of punctuation is one GPT-2 piece): the merges run in
// O(n log n) and the run ends; 5 x "!" is "!!!!" then "!".
TEST(ByteLevelBpeTest, LongPiecesMergeInLogLinearTime) {
  ASSERT_OK_AND_ASSIGN(ByteLevelBpeTokenizer tok,
                       ByteLevelBpeTokenizer::FromTokenizerJson(TinyTokenizer().dump(), "t.json"));
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> five, tok.Tokenize("!!!!!"));
  EXPECT_THAT(five, ElementsAre("!!!!", "!"));
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> many, tok.Tokenize(std::string(200000, '!')));
  EXPECT_EQ(many.size(), 50000u);
  Json bad = TinyTokenizer();
  bad["model"]["merges"].push_back("a a");  // "aa" is not in the vocabulary
  EXPECT_THAT(ByteLevelBpeTokenizer::FromTokenizerJson(bad.dump(), "b.json"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not in model.vocab")));
}

TEST(ByteLevelBpeTest, UnsupportedTypesAreNamed) {
  Json wordpiece = TinyTokenizer();
  wordpiece["model"]["type"] = "WordPiece";
  EXPECT_THAT(ByteLevelBpeTokenizer::FromTokenizerJson(wordpiece.dump(), "w.json"),
              StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("w.json: model type \"WordPiece\"")));
  Json normalized = TinyTokenizer();
  normalized["normalizer"] = {{"type", "NFKC"}};
  EXPECT_THAT(ByteLevelBpeTokenizer::FromTokenizerJson(normalized.dump(), "n.json"),
              StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("normalizer type \"NFKC\"")));
  Json metaspace = TinyTokenizer();
  metaspace["pre_tokenizer"] = {{"type", "Metaspace"}};
  EXPECT_THAT(ByteLevelBpeTokenizer::FromTokenizerJson(metaspace.dump(), "m.json"),
              StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("pre_tokenizer type \"Metaspace\"")));
  EXPECT_THAT(ByteLevelBpeTokenizer::FromTokenizerJson("[1]", "x.json"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("x.json")));
}

}  // namespace
}  // namespace loom::text
