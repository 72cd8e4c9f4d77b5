#include "text/sentencepiece_trainer.h"

#include <string>
#include <vector>

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "text/t5_tokenizer.h"

namespace loom::text {
namespace {

using ::testing::HasSubstr;

std::vector<std::string> Corpus() {
  const std::vector<std::string> words = {"the", "red",  "cat",   "sleeps", "under", "table",
                                          "pisica", "roșu", "doarme", "sub", "masa", "today"};
  std::vector<std::string> out;
  for (size_t i = 0; i < 300; ++i) {
    std::string line;
    for (size_t w = 0; w < 6; ++w) {
      if (w > 0) line += " ";
      line += words[(i * 7 + w * 5 + i / 3) % words.size()];
    }
    out.push_back(line + " .");
  }
  return out;
}

TEST(SentencePieceTrainerTest, SameCorpusGivesTheSameModelWithT5sIdLayout) {
  std::string a, b, error;
  ASSERT_TRUE(TrainSentencePieceModel(Corpus(), {.vocab_size = 60}, &a, &error)) << error;
  ASSERT_TRUE(TrainSentencePieceModel(Corpus(), {.vocab_size = 60}, &b, &error)) << error;
  EXPECT_EQ(a, b);
  ASSERT_OK_AND_ASSIGN(T5Tokenizer tokenizer, T5Tokenizer::Create(a));
  EXPECT_EQ(tokenizer.pad_token_id(), 0);
  EXPECT_EQ(tokenizer.eos_token_id(), 1);
  EXPECT_EQ(tokenizer.unk_token_id(), 2);
  EXPECT_LE(tokenizer.vocab_size(), 60);
  // Every training sentence round-trips, with eos appended.
  for (const std::string& line : Corpus()) {
    ASSERT_OK_AND_ASSIGN(Encoding e, tokenizer.Encode(line));
    ASSERT_FALSE(e.input_ids.empty());
    EXPECT_EQ(e.input_ids.back(), 1);
    for (int64_t id : e.input_ids) EXPECT_NE(id, 2) << line;
    EXPECT_THAT(tokenizer.Decode(e.input_ids, {.skip_special_tokens = true,
                                                  .clean_up_tokenization_spaces = false}),
                base::testing::IsOkAndHolds(line));
  }
}

TEST(SentencePieceTrainerTest, EmptyCorpusAndTinyVocabularyAreErrors) {
  std::string model, error;
  EXPECT_FALSE(TrainSentencePieceModel({}, {.vocab_size = 60}, &model, &error));
  EXPECT_THAT(error, HasSubstr("no sentences"));
  error.clear();
  EXPECT_FALSE(TrainSentencePieceModel(Corpus(), {.vocab_size = 2}, &model, &error));
  EXPECT_FALSE(error.empty());
}

}  // namespace
}  // namespace loom::text
