#include "trainer/neftune.h"

#include <torch/torch.h>

#include <cmath>

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "modeling/hooked_embedding.h"

namespace loom::trainer {
namespace {

using ::loom::base::testing::StatusIs;

class Embedder : public modeling::Model {
 public:
  Embedder() { words = register_module("words", modeling::HookedEmbedding(10, 8)); }
  modeling::ModelOutput Forward(const data::Batch& in) override {
    modeling::ModelOutput out;
    out.outputs.push_back({"embeddings", words->forward(in.at("input_ids"))});
    return out;
  }
  modeling::ForwardHooks* InputEmbeddingHooks() override { return &words->hooks; }
  modeling::HookedEmbedding words{nullptr};
};

class NoEmbeddings : public modeling::Model {
 public:
  modeling::ModelOutput Forward(const data::Batch&) override { return {}; }
};

TEST(NeftuneTest, MagnitudeIsAlphaOverSqrtOfSeqTimesHidden) {
  const double mag = NeftuneMagnitude(4, 8, 5.0);
  EXPECT_NEAR(mag, 5.0 / std::sqrt(32.0), 1e-6);
  EXPECT_EQ(mag, static_cast<double>(static_cast<float>(mag)));  // a float32 value, as HF's
}

TEST(NeftuneTest, NoiseOnlyInTrainingAndWithinTheBound) {
  torch::manual_seed(0);
  auto model = std::make_shared<Embedder>();
  const data::Batch batch = {{"input_ids", torch::randint(0, 10, {3, 4})}};
  model->eval();
  const at::Tensor clean = model->Forward(batch).Get("embeddings").detach();
  ASSERT_OK_AND_ASSIGN(modeling::ForwardHookHandle handle, ActivateNeftune(*model, 5.0));
  model->train();
  const at::Tensor noisy = model->Forward(batch).Get("embeddings").detach();
  const at::Tensor diff = noisy - clean;
  const double bound = NeftuneMagnitude(4, 8, 5.0);
  EXPECT_LE(diff.abs().max().item<double>(), bound * (1 + 1e-6));
  EXPECT_GT(diff.abs().max().item<double>(), 0.0);
  model->eval();
  EXPECT_TRUE(torch::equal(model->Forward(batch).Get("embeddings"), clean));
  handle.Remove();
  model->train();
  EXPECT_TRUE(torch::equal(model->Forward(batch).Get("embeddings"), clean));
}

TEST(NeftuneTest, ModelsWithoutInputEmbeddingsAndBadShapes) {
  NoEmbeddings plain;
  EXPECT_THAT(ActivateNeftune(plain, 5.0),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       ::testing::HasSubstr("NoEmbeddings does not expose its input embeddings")));
  EXPECT_THROW(NeftuneNoise(torch::zeros({2, 3}), 5.0, true), std::invalid_argument);
  EXPECT_NO_THROW(NeftuneNoise(torch::zeros({2, 3}), 5.0, false));
}

}  // namespace
}  // namespace loom::trainer
