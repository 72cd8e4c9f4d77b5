// run_translation's preprocess_function, compute_metrics and generated_predictions.txt, on the
// test SentencePiece model (text/testdata/spiece.model); expectations are closed forms (BLEU 100
// for exact predictions, 0 without a shared word; gen_len counted by hand).
#include "examples/translation/preprocess.h"

#include <torch/torch.h>

#include <string>
#include <vector>

#include "base/file_util.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::examples::translation {
namespace {

using ::loom::base::testing::IsOkAndHolds;

text::T5Tokenizer Tokenizer() {
  absl::StatusOr<std::string> bytes = base::ReadFile("text/testdata/spiece.model");
  EXPECT_TRUE(bytes.ok()) << bytes.status();
  absl::StatusOr<text::T5Tokenizer> t = text::T5Tokenizer::Create(*bytes);
  EXPECT_TRUE(t.ok()) << t.status();
  return *std::move(t);
}

std::vector<int64_t> Ids(const text::T5Tokenizer& tok, const std::string& s) {
  absl::StatusOr<text::Encoding> e = tok.Encode(s);
  EXPECT_TRUE(e.ok()) << e.status();
  return e->input_ids;
}

std::vector<int64_t> Values(const at::Tensor& t) {
  const at::Tensor c = t.contiguous().to(at::kLong);
  return {c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel()};
}

// Rows right-padded with `fill` to the longest (the evaluation loop pads with -100).
at::Tensor Rows(const std::vector<std::vector<int64_t>>& rows, int64_t fill) {
  size_t width = 0;
  for (const auto& r : rows) width = std::max(width, r.size());
  at::Tensor out = at::full({static_cast<int64_t>(rows.size()), static_cast<int64_t>(width)}, fill,
                            at::kLong);
  for (size_t i = 0; i < rows.size(); ++i) {
    for (size_t j = 0; j < rows[i].size(); ++j) out[i][j] = rows[i][j];
  }
  return out;
}

TEST(TokenizePairsTest, PrefixTruncationPaddingAndIgnoredLabels) {
  const text::T5Tokenizer tok = Tokenizer();
  const std::vector<TranslationPair> pairs = {{"the cat sleeps", "pisica doarme"},
                                              {"the red house is small today", "casa"},
                                              {"unused", "unused"}};
  TokenizePairsOptions o;
  o.prefix = "translate: ";
  o.max_source_length = 6;
  o.max_target_length = 4;
  o.max_examples = 2;
  ASSERT_OK_AND_ASSIGN(auto ds, TokenizePairs(tok, pairs, o));
  ASSERT_EQ(ds->Size(), 2);
  ASSERT_OK_AND_ASSIGN(data::Example first, ds->Get(0));
  std::vector<int64_t> source = Ids(tok, "translate: the cat sleeps");
  if (source.size() > 6) {  // truncated, eos kept last
    source.resize(6);
    source.back() = tok.eos_token_id();
  }
  EXPECT_EQ(Values(first.at("input_ids")), source);
  EXPECT_EQ(Values(first.at("attention_mask")), std::vector<int64_t>(source.size(), 1));
  std::vector<int64_t> target = Ids(tok, "pisica doarme");
  if (target.size() > 4) {
    target.resize(4);
    target.back() = tok.eos_token_id();
  }
  EXPECT_EQ(Values(first.at("labels")), target);

  o.pad_to_max_length = true;
  o.max_target_length = 8;
  ASSERT_OK_AND_ASSIGN(ds, TokenizePairs(tok, pairs, o));
  ASSERT_OK_AND_ASSIGN(data::Example second, ds->Get(1));
  EXPECT_EQ(second.at("input_ids").numel(), 6);
  std::vector<int64_t> casa = Ids(tok, "casa");
  ASSERT_LT(casa.size(), 8u);
  std::vector<int64_t> labels = casa;
  labels.resize(8, -100);  // padded labels ignored by the loss
  EXPECT_EQ(Values(second.at("labels")), labels);
  o.ignore_pad_token_for_loss = false;
  ASSERT_OK_AND_ASSIGN(ds, TokenizePairs(tok, pairs, o));
  ASSERT_OK_AND_ASSIGN(second, ds->Get(1));
  labels = casa;
  labels.resize(8, tok.pad_token_id());
  EXPECT_EQ(Values(second.at("labels")), labels);
}

TEST(TranslationComputeMetricsTest, ExactPredictionsScore100AndGenLenCountsNonPadTokens) {
  const text::T5Tokenizer tok = Tokenizer();
  const std::vector<std::string> targets = {"the cat sleeps on the table .",
                                            "we read books today .", "the dog runs ."};
  std::vector<std::vector<int64_t>> generated, labels;
  double tokens = 0;
  for (const std::string& t : targets) {
    std::vector<int64_t> ids = Ids(tok, t);
    labels.push_back(ids);
    ids.insert(ids.begin(), tok.pad_token_id());  // generate starts with decoder_start = pad
    generated.push_back(ids);
    tokens += static_cast<double>(ids.size() - 1);
  }
  trainer::EvalPrediction p;
  p.predictions = {Rows(generated, -100)};
  p.label_ids = {Rows(labels, -100)};
  ASSERT_OK_AND_ASSIGN(trainer::Metrics m, TranslationComputeMetrics(tok)(p));
  EXPECT_EQ(m["bleu"].get<double>(), 100.0);
  // numpy's round(mean, 4) of the non-pad counts.
  EXPECT_EQ(m["gen_len"].get<double>(), std::nearbyint(tokens / 3 * 10000) / 10000);
  EXPECT_EQ(m.size(), 2u);

  // Nothing in common with the references: BLEU 0.
  p.predictions = {Rows({Ids(tok, "casa"), Ids(tok, "tren"), Ids(tok, "munte")}, -100)};
  ASSERT_OK_AND_ASSIGN(m, TranslationComputeMetrics(tok)(p));
  EXPECT_EQ(m["bleu"].get<double>(), 0.0);
}

TEST(GeneratedPredictionsTextTest, DecodedStrippedJoinedWithoutTrailingNewline) {
  const text::T5Tokenizer tok = Tokenizer();
  std::vector<int64_t> a = Ids(tok, "the cat sleeps .");
  a.insert(a.begin(), tok.pad_token_id());
  const at::Tensor rows = Rows({a, Ids(tok, "we read books")}, -100);
  EXPECT_THAT(GeneratedPredictionsText(tok, rows),
              IsOkAndHolds("the cat sleeps.\nwe read books"));  // clean_up: " ." -> "."
  EXPECT_FALSE(GeneratedPredictionsText(tok, at::zeros({3}, at::kLong)).ok());
}

}  // namespace
}  // namespace loom::examples::translation
