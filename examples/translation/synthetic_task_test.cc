// The embedded demo's task: deterministic, the translation rule holds on every pair, the files
// are HF's WMT16 JSON Lines, and the built-in tokenizer and T5 fit each other.
#include "examples/translation/synthetic_task.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "base/status_matchers.h"
#include "examples/translation/translation_data.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::examples::translation {
namespace {

std::vector<std::string> Words(const std::string& s) { return absl::StrSplit(s, ' '); }

TEST(SyntheticTranslationTest, SameSeedSameDataAndTheTranslationRuleHolds) {
  const SyntheticTranslation a = MakeSyntheticTranslation();
  const SyntheticTranslation b = MakeSyntheticTranslation();
  ASSERT_EQ(a.train.size(), 2000u);
  ASSERT_EQ(a.validation.size(), 200u);
  ASSERT_EQ(a.test.size(), 100u);
  for (size_t i = 0; i < a.train.size(); ++i) {
    EXPECT_EQ(a.train[i].source, b.train[i].source);
    EXPECT_EQ(a.train[i].target, b.train[i].target);
  }
  EXPECT_NE(a.train[0].source, a.validation[0].source);
  const SyntheticTranslation other = MakeSyntheticTranslation({.seed = 1});
  size_t differing = 0;
  for (size_t i = 0; i < a.train.size(); ++i) differing += other.train[i].source != a.train[i].source;
  EXPECT_GT(differing, 1000u);  // the seed decides the draws
  for (const TranslationPair& p : a.train) {
    const std::vector<std::string> en = Words(p.source), ro = Words(p.target);
    const auto articles = std::count(en.begin(), en.end(), "the");
    EXPECT_GE(articles, 1) << p.source;
    // "the" is dropped; every other word has exactly one translation.
    EXPECT_EQ(ro.size() + static_cast<size_t>(articles), en.size()) << p.source;
    EXPECT_EQ(en.back(), ".");
    EXPECT_EQ(ro.back(), ".");
  }
  // Adjectives follow their noun: "the red cat" -> "pisica roșu".
  bool reordered = false;
  for (const TranslationPair& p : a.train) {
    if (absl::StartsWith(p.source, "the red cat ")) {
      EXPECT_TRUE(absl::StartsWith(p.target, "pisica roșu ")) << p.target;
      reordered = true;
    }
  }
  EXPECT_TRUE(reordered);
}

TEST(SyntheticTranslationTest, JsonLinesReadBackAsPairs) {
  const SyntheticTranslation data =
      MakeSyntheticTranslation({.num_train = 5, .num_validation = 3, .num_test = 2});
  const std::string dir = ::testing::TempDir() + "/synthetic_translation";
  ASSERT_OK(WriteTranslationJsonLines(dir, data));
  ASSERT_OK_AND_ASSIGN(std::vector<TranslationPair> train,
                       ReadTranslationFile(dir + "/train.json", "--train_file", "en", "ro"));
  ASSERT_EQ(train.size(), 5u);
  for (size_t i = 0; i < train.size(); ++i) {
    EXPECT_EQ(train[i].source, data.train[i].source);
    EXPECT_EQ(train[i].target, data.train[i].target);
  }
  ASSERT_OK_AND_ASSIGN(std::vector<TranslationPair> test,
                       ReadTranslationFile(dir + "/test.json", "--test_file", "en", "ro"));
  EXPECT_EQ(test.size(), 2u);
}

TEST(SyntheticTranslationTest, BuiltinTokenizerCoversTheCorpusAndFitsTheBuiltinT5) {
  const SyntheticTranslation data = MakeSyntheticTranslation();
  std::vector<std::string> corpus;
  for (const TranslationPair& p : data.train) {
    corpus.push_back(p.source);
    corpus.push_back(p.target);
  }
  ASSERT_OK_AND_ASSIGN(text::T5Tokenizer tokenizer, BuiltinTokenizer(corpus));
  EXPECT_LE(tokenizer.vocab_size(), 200);
  EXPECT_EQ(tokenizer.size(), tokenizer.vocab_size() + 100);  // T5's sentinels
  for (const TranslationPair& p : data.validation) {
    ASSERT_OK_AND_ASSIGN(text::Encoding e, tokenizer.Encode(p.target));
    for (int64_t id : e.input_ids) EXPECT_NE(id, tokenizer.unk_token_id()) << p.target;
  }
  const models::t5::T5Config config = BuiltinT5Config(tokenizer.size());
  EXPECT_OK(config.Validate("builtin"));
  EXPECT_EQ(config.vocab_size, tokenizer.size());
  EXPECT_EQ(config.decoder_start_token_id, tokenizer.pad_token_id());
  EXPECT_EQ(config.eos_token_id, tokenizer.eos_token_id());
}

}  // namespace
}  // namespace loom::examples::translation
