#include "examples/glue/preprocess.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::examples::glue_script {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

models::bert::BertConfig ConfigWithLabels(std::map<std::string, int64_t> label2id) {
  models::bert::BertConfig config;
  config.label2id = std::move(label2id);
  return config;
}

// run_glue: a default {LABEL_i: i} config, regression, or no task -> no mapping.
TEST(ModelLabelMappingTest, DefaultLabelsRegressionAndNoTaskKeepDatasetIds) {
  std::string warning;
  const std::vector<std::string> labels = {"negative", "positive"};
  EXPECT_TRUE(ModelLabelMapping(ConfigWithLabels({{"LABEL_0", 0}, {"LABEL_1", 1}}), "sst2", false,
                                labels, &warning)
                  .empty());
  EXPECT_TRUE(ModelLabelMapping(ConfigWithLabels({{"POSITIVE", 0}, {"NEGATIVE", 1}}), "stsb", true,
                                labels, &warning)
                  .empty());
  EXPECT_TRUE(ModelLabelMapping(ConfigWithLabels({{"POSITIVE", 0}, {"NEGATIVE", 1}}), std::nullopt,
                                false, labels, &warning)
                  .empty());
  EXPECT_EQ(warning, "");
}

// The model's own ids win when its (lower-cased) names are the dataset's labels.
TEST(ModelLabelMappingTest, MatchingNamesMapDatasetIdsToModelIds) {
  std::string warning;
  EXPECT_EQ(ModelLabelMapping(ConfigWithLabels({{"POSITIVE", 0}, {"Negative", 1}}), "sst2", false,
                              {"negative", "positive"}, &warning),
            (std::map<int64_t, int64_t>{{0, 1}, {1, 0}}));
  EXPECT_EQ(warning, "");
}

TEST(ModelLabelMappingTest, OtherNamesAreIgnoredWithHfWarning) {
  std::string warning;
  EXPECT_TRUE(ModelLabelMapping(ConfigWithLabels({{"yes", 0}, {"no", 1}}), "sst2", false,
                                {"negative", "positive"}, &warning)
                  .empty());
  EXPECT_THAT(warning, HasSubstr("model labels: [no, yes], dataset labels: [negative, positive]"));
  EXPECT_THAT(warning, HasSubstr("Ignoring the model labels as a result."));
}

TEST(FormatPredictResultsTest, ClassNamesAndRegressionValues) {
  const at::Tensor logits = at::tensor({0.1f, 0.9f, 2.0f, -1.0f, 0.0f, 0.5f}).view({3, 2});
  auto text = FormatPredictResults(logits, false, {"negative", "positive"});
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text, "index\tprediction\n0\tpositive\n1\tnegative\n2\tpositive\n");
  auto reg = FormatPredictResults(at::tensor({1.23456f, -0.5f, 12.0f}).view({3, 1}), true, {});
  ASSERT_TRUE(reg.ok());
  EXPECT_EQ(*reg, "index\tprediction\n0\t1.235\n1\t-0.500\n2\t12.000\n");
  EXPECT_FALSE(FormatPredictResults(logits, false, {"only_one"}).ok());
}

TEST(SampleIndicesTest, DistinctDeterministicAndBounded) {
  const std::vector<int64_t> a = SampleIndices(100, 3);
  EXPECT_EQ(a, SampleIndices(100, 3));
  ASSERT_EQ(a.size(), 3u);
  EXPECT_TRUE(a[0] != a[1] && a[1] != a[2] && a[0] != a[2]);
  for (int64_t i : a) EXPECT_TRUE(i >= 0 && i < 100);
  EXPECT_EQ(SampleIndices(2, 3).size(), 2u);
  EXPECT_TRUE(SampleIndices(0, 3).empty());
}

TEST(TokenizeSplitTest, LabelsMappedSelectedAndRemoved) {
  auto tokenizer = text::BertTokenizer::Create(text::Vocab::FromTokens(
      {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "good", "bad", "film"}));
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  glue::GlueSplit split;
  split.name = "train";
  for (int i = 0; i < 3; ++i) {
    glue::GlueExample e;
    e.text_a = i == 1 ? "bad film" : "good film";
    e.label = static_cast<int64_t>(i == 1 ? 0 : 1);
    e.idx = i;
    split.examples.push_back(e);
  }
  TokenizeOptions o;
  o.max_length = 6;
  o.label_to_id = {{0, 1}, {1, 0}};
  o.max_examples = 2;
  auto ds = TokenizeSplit(*tokenizer, split, o);
  ASSERT_TRUE(ds.ok()) << ds.status();
  ASSERT_EQ((*ds)->Size(), 2);
  auto second = (*ds)->Get(1);
  ASSERT_TRUE(second.ok());
  // [CLS] bad film [SEP] padded to 6 with [PAD] (id 0); label 0 mapped to 1.
  EXPECT_TRUE(at::equal(second->at("input_ids"), at::tensor({2, 6, 7, 3, 0, 0}, at::kLong)));
  EXPECT_TRUE(at::equal(second->at("attention_mask"), at::tensor({1, 1, 1, 1, 0, 0}, at::kLong)));
  EXPECT_EQ(second->at("label").item<int64_t>(), 1);
  o.keep_labels = false;
  o.pad_to_max_length = false;
  auto test = TokenizeSplit(*tokenizer, split, o);
  ASSERT_TRUE(test.ok());
  auto first = (*test)->Get(0);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->count("label"), 0u);
  EXPECT_EQ(first->at("input_ids").numel(), 4);
}

}  // namespace
}  // namespace loom::examples::glue_script
