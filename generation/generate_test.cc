#include "generation/generate.h"

#include <torch/torch.h>

#include <memory>
#include <vector>

#include "base/status_matchers.h"
#include "generation/beam_search.h"
#include "generation/logits_process.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::generation {
namespace {

using ::loom::base::testing::StatusIs;
using ::testing::HasSubstr;

// A model whose next-token logits depend only on the previous token: a fixed [vocab, vocab]
// table (row = previous token), so the expected sequences can be worked out by hand.
class TableModel : public modeling::Seq2SeqLM {
 public:
  explicit TableModel(at::Tensor table) : table_(std::move(table)) {}
  at::Tensor Encode(const at::Tensor& ids, const at::Tensor&) override {
    return at::zeros({ids.size(0), ids.size(1), 1});
  }
  std::unique_ptr<modeling::DecoderCache> NewDecoderCache() const override {
    struct NoCache : modeling::DecoderCache {
      void Reorder(const at::Tensor&) override {}
    };
    return std::make_unique<NoCache>();
  }
  at::Tensor NextTokenLogits(const at::Tensor& new_ids, const at::Tensor&, const at::Tensor&,
                             modeling::DecoderCache*) override {
    return table_.index_select(0, new_ids.select(1, -1));
  }
  modeling::GenerationConfig& generation_config() override { return generation_config_; }
  std::optional<int64_t> ConfigPadTokenId() const override { return 0; }

 private:
  at::Tensor table_;
  modeling::GenerationConfig generation_config_ = modeling::GenerationConfig::FromModel({0, 1, 0});
};

// Vocabulary {0 start/pad, 1 eos, 2, 3}: after 0 -> 2, after 2 -> 3, after 3 -> 2 (a loop) with
// eos the runner-up everywhere.
at::Tensor LoopTable() {
  return torch::tensor({{-9.0, 1.0, 3.0, 0.0},
                        {-9.0, 0.0, 0.0, 0.0},
                        {-9.0, 1.0, 0.0, 3.0},
                        {-9.0, 1.0, 3.0, 0.0}});
}

TEST(GenerateTest, GreedyFollowsArgmaxUntilMaxLength) {
  TableModel model(LoopTable());
  GenerationConfig g = model.generation_config();
  g.max_length = 6;
  ASSERT_OK_AND_ASSIGN(at::Tensor ids, Generate(model, torch::zeros({1, 3}, torch::kLong),
                                                at::Tensor(), g));
  EXPECT_TRUE(torch::equal(ids, torch::tensor({{0, 2, 3, 2, 3, 2}}, torch::kLong)));
}

TEST(GenerateTest, NoRepeatNgramAndForcedEosChangeTheGreedyPath) {
  TableModel model(LoopTable());
  GenerationConfig g = model.generation_config();
  g.max_length = 8;
  g.no_repeat_ngram_size = 2;  // "2 3" may not repeat: after 0 2 3 2 the 3 is banned -> eos
  ASSERT_OK_AND_ASSIGN(at::Tensor ids, Generate(model, torch::zeros({1, 2}, torch::kLong),
                                                at::Tensor(), g));
  EXPECT_TRUE(torch::equal(ids, torch::tensor({{0, 2, 3, 2, 1}}, torch::kLong)));
  g.no_repeat_ngram_size = 0;
  g.forced_eos_token_id = 1;
  g.max_length = 4;
  ASSERT_OK_AND_ASSIGN(ids, Generate(model, torch::zeros({1, 2}, torch::kLong), at::Tensor(), g));
  EXPECT_TRUE(torch::equal(ids, torch::tensor({{0, 2, 3, 1}}, torch::kLong)));
}

TEST(GenerateTest, FinishedRowsArePaddedAndMinLengthHoldsEosBack) {
  // Row 0 starts from token 0; the table sends 1 (eos) straight after 2 here.
  at::Tensor table = LoopTable();
  table[2] = torch::tensor({-9.0, 5.0, 0.0, 3.0});
  TableModel model(table);
  GenerationConfig g = model.generation_config();
  g.max_length = 5;
  ASSERT_OK_AND_ASSIGN(at::Tensor ids, Generate(model, torch::zeros({2, 2}, torch::kLong),
                                                at::Tensor(), g));
  EXPECT_TRUE(torch::equal(ids, torch::tensor({{0, 2, 1}, {0, 2, 1}}, torch::kLong)));
  g.min_length = 4;  // eos banned while the length is below 4: 0 2 3 2, then eos
  ASSERT_OK_AND_ASSIGN(ids, Generate(model, torch::zeros({1, 2}, torch::kLong), at::Tensor(), g));
  EXPECT_TRUE(torch::equal(ids, torch::tensor({{0, 2, 3, 2, 1}}, torch::kLong)));
}

TEST(BeamHypothesesTest, KeepsTheBestAndScoresByLength) {
  BeamHypotheses h(/*num_beams=*/2, /*length_penalty=*/1.0, EarlyStopping::kFalse, 20);
  h.Add({0, 5}, -2.0, 2);   // -1.0
  h.Add({0, 6}, -3.0, 2);   // -1.5
  h.Add({0, 7}, -1.0, 4);   // -0.25 replaces -1.5
  ASSERT_EQ(h.size(), 2u);
  EXPECT_EQ(h.beams()[0].score, -1.0);
  EXPECT_EQ(h.beams()[1].score, -0.25);
  // early_stopping false: done when best running score / length cannot beat the worst (-1.0).
  EXPECT_FALSE(h.IsDone(-2.0, 4));  // -0.5 > -1.0
  EXPECT_TRUE(h.IsDone(-4.0, 4));   // -1.0 >= ... ties count as done
  BeamHypotheses never(2, 1.0, EarlyStopping::kNever, 11);
  never.Add({0}, -2.0, 2);
  never.Add({0}, -2.0, 2);
  EXPECT_FALSE(never.IsDone(-9.0, 3));  // bound at max_length - 1 = 10: -0.9 > -1.0
  EXPECT_TRUE(never.IsDone(-10.0, 3));
}

TEST(GenerateTest, BeamSearchFindsTheBetterLongPath) {
  // From 0: 2 (logp high) then only eos-ish; 3 then a strong continuation. Beam 2 keeps both.
  TableModel model(torch::tensor({{-50.0, -50.0, 0.0, -0.2},
                                  {-50.0, 0.0, -50.0, -50.0},
                                  {-50.0, -3.0, -3.0, -3.0},
                                  {-50.0, 0.0, -50.0, -50.0}}));
  GenerationConfig g = model.generation_config();
  g.max_length = 5;
  g.num_beams = 2;
  ASSERT_OK_AND_ASSIGN(at::Tensor ids, Generate(model, torch::zeros({1, 2}, torch::kLong),
                                                at::Tensor(), g));
  // Greedy would take 2 then pay -3 more; beam search ends 0 3 eos (log p ~ -0.8 - 0) instead.
  EXPECT_TRUE(torch::equal(ids, torch::tensor({{0, 3, 1}}, torch::kLong)));
  g.num_return_sequences = 3;
  EXPECT_THAT(Generate(model, torch::zeros({1, 2}, torch::kLong), at::Tensor(), g),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("num_return_sequences")));
}

}  // namespace
}  // namespace loom::generation
