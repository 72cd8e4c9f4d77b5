#include "text/llama_tokenizer.h"

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "text/sentencepiece_trainer.h"

namespace loom::text {
namespace {

using ::loom::base::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string TrainedModel() {
  std::vector<std::string> corpus;
  for (int i = 0; i < 50; ++i) {
    corpus.push_back("the quick brown fox jumps over the lazy dog " + std::to_string(i * 37));
    corpus.push_back("a small house on the hill, and a river below it.");
  }
  std::string model, error;
  EXPECT_TRUE(TrainSentencePieceModel(
      corpus, {.vocab_size = 320, .layout = SentencePieceLayout::kLlama}, &model, &error))
      << error;
  return model;
}

TEST(LlamaTokenizerTest, LlamaLayoutSpecialIdsAndBosFirst) {
  ASSERT_OK_AND_ASSIGN(LlamaTokenizer tok, LlamaTokenizer::Create(TrainedModel()));
  EXPECT_EQ(tok.unk_token_id(), 0);
  EXPECT_EQ(tok.bos_token_id(), 1);
  EXPECT_EQ(tok.eos_token_id(), 2);
  EXPECT_FALSE(tok.pad_token_id().has_value());
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> tokens, tok.Tokenize("the fox 42"));
  // Digits are split one by one (split_digits), words start with "▁".
  EXPECT_EQ(tokens.back(), "2");
  EXPECT_EQ(tokens[tokens.size() - 2], "4");
  EXPECT_EQ(tokens[0], "\xE2\x96\x81the");
  ASSERT_OK_AND_ASSIGN(Encoding enc, tok.Encode("the fox 42", {.return_token_type_ids = false}));
  EXPECT_EQ(enc.input_ids.front(), 1);
  EXPECT_EQ(enc.input_ids.size(), tokens.size() + 1);
  EXPECT_EQ(enc.attention_mask, std::vector<int64_t>(enc.input_ids.size(), 1));
  // Byte fallback: a character the model never saw becomes its UTF-8 bytes, not <unk>.
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> emoji, tok.Tokenize("\xF0\x9F\x98\x80"));
  EXPECT_THAT(emoji, ElementsAre("\xE2\x96\x81", "<0xF0>", "<0x9F>", "<0x98>", "<0x80>"));
  ASSERT_OK_AND_ASSIGN(std::string back, tok.Decode(enc.input_ids, {.skip_special_tokens = true}));
  EXPECT_EQ(back, "the fox 42");
}

TEST(LlamaTokenizerTest, SpecialTokensInTextTruncationEosAndPadding) {
  LlamaTokenizerOptions options;
  options.add_eos_token = true;
  ASSERT_OK_AND_ASSIGN(LlamaTokenizer tok, LlamaTokenizer::Create(TrainedModel(), options));
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> tokens, tok.Tokenize("fox</s>dog"));
  EXPECT_THAT(tokens, testing::Contains("</s>"));
  EncodeOptions truncated;
  truncated.max_length = 4;
  truncated.truncation = Truncation::kLongestFirst;
  ASSERT_OK_AND_ASSIGN(Encoding enc, tok.Encode("the quick brown fox", truncated));
  ASSERT_EQ(enc.input_ids.size(), 4u);
  EXPECT_EQ(enc.input_ids.front(), 1);
  EXPECT_EQ(enc.input_ids.back(), 2);
  // No truncation asked for: a text longer than model_max_length keeps every token (HF warns).
  LlamaTokenizerOptions short_max = options;
  short_max.model_max_length = 3;
  ASSERT_OK_AND_ASSIGN(LlamaTokenizer limited, LlamaTokenizer::Create(TrainedModel(), short_max));
  ASSERT_OK_AND_ASSIGN(Encoding whole, limited.Encode("the quick brown fox jumps", {}));
  EXPECT_GT(whole.input_ids.size(), 3u);
  EncodeOptions padded;
  padded.max_length = 12;
  padded.padding = Padding::kMaxLength;
  EXPECT_THAT(tok.Encode("fox", padded),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("padding token")));
  options.pad_token = "</s>";
  ASSERT_OK_AND_ASSIGN(LlamaTokenizer with_pad, LlamaTokenizer::Create(TrainedModel(), options));
  ASSERT_OK_AND_ASSIGN(Encoding pad_enc, with_pad.Encode("fox", padded));
  EXPECT_EQ(pad_enc.input_ids.size(), 12u);
  EXPECT_EQ(pad_enc.attention_mask.back(), 0);
  options.bos_token = "<bos>";
  EXPECT_THAT(LlamaTokenizer::Create(TrainedModel(), options),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("bos_token \"<bos>\"")));
}

TEST(LlamaTokenizerTest, SaveAndReloadKeepsSettingsAndRefusesForeignAddedTokens) {
  const std::string dir =
      std::string(getenv("TEST_TMPDIR") ? getenv("TEST_TMPDIR") : "/tmp") + "/llama_tok";
  std::filesystem::remove_all(dir);
  LlamaTokenizerOptions options;
  options.legacy = false;
  options.model_max_length = 128;
  ASSERT_OK_AND_ASSIGN(LlamaTokenizer tok, LlamaTokenizer::Create(TrainedModel(), options));
  ASSERT_OK(tok.SavePretrained(dir));
  ASSERT_OK_AND_ASSIGN(LlamaTokenizer back, LlamaTokenizer::FromPretrained(dir));
  EXPECT_FALSE(back.options().legacy);
  EXPECT_EQ(back.options().model_max_length, 128);
  for (const char* text : {"the lazy dog", " leading space", "a<s>b"}) {
    EXPECT_EQ(*tok.Tokenize(text), *back.Tokenize(text)) << text;
  }
  std::filesystem::remove(dir + "/tokenizer.model");
  EXPECT_THAT(LlamaTokenizer::FromPretrained(dir),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("tokenizer.model")));
}

}  // namespace
}  // namespace loom::text
