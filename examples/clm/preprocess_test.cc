#include "examples/clm/preprocess.h"

#include <torch/torch.h>

#include <vector>

#include "base/status_matchers.h"
#include "examples/clm/synthetic_corpus.h"
#include "text/causal_lm_tokenizer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::examples::clm {
namespace {

using ::loom::base::testing::StatusIs;
using ::testing::HasSubstr;

TEST(ClmPreprocessTest, BlockSizeFollowsRunClmsRuleAndNeverExceedsThePositions) {
  BlockSize none = ResolveBlockSize(std::nullopt, std::nullopt, 2048);
  EXPECT_EQ(none.block_size, 1024);
  EXPECT_THAT(none.warnings[0], HasSubstr("very large `model_max_length`"));
  EXPECT_EQ(ResolveBlockSize(std::nullopt, 512, 2048).block_size, 512);
  EXPECT_EQ(ResolveBlockSize(std::nullopt, std::nullopt, 256).block_size, 256);
  BlockSize clamped = ResolveBlockSize(4096, 1024, 2048);
  EXPECT_EQ(clamped.block_size, 1024);
  EXPECT_THAT(clamped.warnings[0], HasSubstr("The block_size passed (4096) is larger"));
  BlockSize positions = ResolveBlockSize(512, std::nullopt, 256);
  EXPECT_EQ(positions.block_size, 256);
  EXPECT_THAT(positions.warnings[0], HasSubstr("max_position_embeddings 256"));
  EXPECT_TRUE(ResolveBlockSize(128, std::nullopt, 256).warnings.empty());
}

// group_texts runs on batches of 1000 examples: each batch's remainder is dropped on its own.
TEST(ClmPreprocessTest, GroupTextsDropsEachThousandExampleBatchsRemainder) {
  std::vector<std::vector<int64_t>> ids(1500, std::vector<int64_t>{1, 5, 6});  // 3 tokens each
  ASSERT_OK_AND_ASSIGN(auto grouped, GroupTexts(ids, 7, -1, "f.txt"));
  // Batch 1: 3000 tokens -> 428 blocks; batch 2: 1500 tokens -> 214 blocks.
  EXPECT_EQ(grouped->Size(), 428 + 214);
  ASSERT_OK_AND_ASSIGN(data::Example first, grouped->Get(0));
  EXPECT_TRUE(at::equal(first.at("input_ids"), torch::tensor({1, 5, 6, 1, 5, 6, 1}, torch::kLong)));
  EXPECT_TRUE(at::equal(first.at("labels"), first.at("input_ids")));
  EXPECT_EQ(first.at("attention_mask").sum().item<int64_t>(), 7);
  // Block 428 starts batch 2 afresh (batch 1's last 4 tokens were dropped).
  ASSERT_OK_AND_ASSIGN(data::Example second, grouped->Get(428));
  EXPECT_EQ(second.at("input_ids")[0].item<int64_t>(), 1);
  ASSERT_OK_AND_ASSIGN(auto limited, GroupTexts(ids, 7, 10, "f.txt"));
  EXPECT_EQ(limited->Size(), 10);
  EXPECT_THAT(GroupTexts({{1, 2}}, 7, -1, "short.txt"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("short.txt: its 2 tokens")));
}

TEST(ClmPreprocessTest, TokenizeAddsBosAndAccuracyShifts) {
  const std::vector<std::string> corpus = MakeSyntheticCorpus(200, 1);
  ASSERT_OK_AND_ASSIGN(text::LlamaTokenizer llama, BuiltinTokenizer(corpus));
  const text::CausalLmTokenizer tok(std::move(llama));
  ASSERT_OK_AND_ASSIGN(auto ids, TokenizeTexts(tok, {"the red fox.", ""}, "f.txt"));
  EXPECT_EQ(ids[0].front(), 1);
  EXPECT_EQ(ids[1], std::vector<int64_t>{1});
  trainer::EvalPrediction p;
  // preds[:, :-1] = {7, 8, 9 | 1, 2, 3}; labels[:, 1:] = {7, 0, 9 | 1, 2, 0}: 4 of 6 equal.
  p.predictions = {torch::tensor({{7, 8, 9, 4}, {1, 2, 3, 4}}, torch::kLong)};
  p.label_ids = {torch::tensor({{5, 7, 0, 9}, {5, 1, 2, 0}}, torch::kLong)};
  ASSERT_OK_AND_ASSIGN(trainer::Metrics m, ClmAccuracy()(p));
  EXPECT_DOUBLE_EQ(m["accuracy"].get<double>(), 4.0 / 6.0);
  EXPECT_TRUE(at::equal(ArgmaxLogits()(torch::tensor({{{0.1, 0.9}, {0.8, 0.2}}}), {}),
                        torch::tensor({{1, 0}}, torch::kLong)));
}

TEST(ClmPreprocessTest, SyntheticCorpusIsDeterministic) {
  EXPECT_EQ(MakeSyntheticCorpus(50, 7), MakeSyntheticCorpus(50, 7));
  EXPECT_NE(MakeSyntheticCorpus(50, 7), MakeSyntheticCorpus(50, 8));
}

}  // namespace
}  // namespace loom::examples::clm
