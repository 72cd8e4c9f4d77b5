#include "generation/logits_process.h"

#include <torch/torch.h>

#include <cmath>
#include <limits>
#include <vector>

#include "gtest/gtest.h"

namespace loom::generation {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// Scores [1, 4] = {1, -2, 3, 0.5}. Softmax by hand: e^1 = 2.71828, e^-2 = 0.13534,
// e^3 = 20.08554, e^0.5 = 1.64872, sum 24.58788 -> {0.11055, 0.00550, 0.81689, 0.06705};
// ascending: -2 (0.00550), 0.5 (cumulative 0.07256), 1 (0.18311), 3 (1).
at::Tensor Scores() { return torch::tensor({{1.0f, -2.0f, 3.0f, 0.5f}}); }

void ExpectScores(const at::Tensor& got, std::vector<float> want) {
  ASSERT_EQ(got.numel(), static_cast<int64_t>(want.size()));
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_FLOAT_EQ(got[0][i].item<float>(), want[i]) << "token " << i;
  }
}

TEST(LogitsProcessTest, RepetitionPenaltyDividesPositiveAndMultipliesNegativeSeenScores) {
  GenerationConfig g;
  g.repetition_penalty = 2.0;
  const at::Tensor seen = torch::tensor({{0, 1, 1}}, torch::kLong);  // tokens 0 and 1 occurred
  ExpectScores(ProcessLogits(g, 20, seen, Scores()), {0.5f, -4.0f, 3.0f, 0.5f});
}

TEST(LogitsProcessTest, TemperatureDividesEveryScore) {
  GenerationConfig g;
  g.top_k = 0;
  g.temperature = 0.5;
  ExpectScores(WarpLogits(g, Scores()), {2.0f, -4.0f, 6.0f, 1.0f});
}

TEST(LogitsProcessTest, TopKKeepsTheKLargest) {
  GenerationConfig g;
  g.top_k = 2;
  ExpectScores(WarpLogits(g, Scores()), {1.0f, -kInf, 3.0f, -kInf});
  g.top_k = 50;  // more than the vocabulary: nothing removed
  ExpectScores(WarpLogits(g, Scores()), {1.0f, -2.0f, 3.0f, 0.5f});
  g.num_beams = 2;  // min_tokens_to_keep 2 with beams
  g.top_k = 1;
  ExpectScores(WarpLogits(g, Scores()), {1.0f, -kInf, 3.0f, -kInf});
}

TEST(LogitsProcessTest, TopPRemovesTheTailWhoseMassIsAtMostOneMinusP) {
  GenerationConfig g;
  g.top_k = 0;
  g.top_p = 0.9;  // removes cumulative <= 0.1: tokens -2 (0.0055) and 0.5 (0.0726)
  ExpectScores(WarpLogits(g, Scores()), {1.0f, -kInf, 3.0f, -kInf});
  g.top_p = 0.7;  // removes cumulative <= 0.3: all but the 0.817 token
  ExpectScores(WarpLogits(g, Scores()), {-kInf, -kInf, 3.0f, -kInf});
  g.top_p = 0.0;  // removes everything but the most likely (min_tokens_to_keep)
  ExpectScores(WarpLogits(g, Scores()), {-kInf, -kInf, 3.0f, -kInf});
  g.top_p = 0.95;  // removes cumulative <= 0.05: token -2 only
  ExpectScores(WarpLogits(g, Scores()), {1.0f, -kInf, 3.0f, 0.5f});
}

TEST(LogitsProcessTest, WarpersComposeInHfsOrder) {
  GenerationConfig g;
  g.temperature = 2.0;  // {0.5, -1, 1.5, 0.25}
  g.top_k = 3;          // drops -1
  g.top_p = 0.6;        // softmax of {0.5, 1.5, 0.25}: {0.2224, 0.6045, 0.1732} (ascending
                        // cumulative 0.1732, 0.3955, 1): drops 0.25 and 0.5
  ExpectScores(WarpLogits(g, Scores()), {-kInf, -kInf, 1.5f, -kInf});
}

}  // namespace
}  // namespace loom::generation
