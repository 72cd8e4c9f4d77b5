#include <torch/torch.h>

#include <functional>
#include <memory>
#include <stdexcept>
#include <vector>

#include "base/status_matchers.h"
#include "checkpoint/module_state.h"
#include "data/batch.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "modeling/deferred_init.h"
#include "modeling/model.h"
#include "modeling/unit_runner.h"
#include "precision/autocast.h"
#include "models/llama/llama_for_causal_lm.h"
#include "models/llama/llama_testing.h"
#include "models/llama/llama_model.h"

namespace loom::models::llama {
namespace {

using ::loom::base::testing::StatusIs;
using ::testing::HasSubstr;

LlamaConfig Tiny(bool tied = false, int64_t kv_heads = 2) { return TinyLlamaConfig(tied, kv_heads); }

std::shared_ptr<LlamaForCausalLM> Model(const LlamaConfig& c, uint64_t seed = 3) {
  return TinyLlama(c, seed);
}

TEST(LlamaTest, StateDictKeysAreHfsInHfsOrder) {
  auto model = Model(Tiny());
  std::vector<std::string> keys;
  for (const auto& [name, t] : checkpoint::ModuleStateDict(*model)) keys.push_back(name);
  ASSERT_EQ(keys.size(), 1u + 2 * 9 + 1 + 1);
  EXPECT_EQ(keys[0], "model.embed_tokens.weight");
  EXPECT_EQ(keys[1], "model.layers.0.self_attn.q_proj.weight");
  EXPECT_EQ(keys[5], "model.layers.0.mlp.gate_proj.weight");
  EXPECT_EQ(keys[8], "model.layers.0.input_layernorm.weight");
  EXPECT_EQ(keys[9], "model.layers.0.post_attention_layernorm.weight");
  EXPECT_EQ(keys[19], "model.norm.weight");
  EXPECT_EQ(keys[20], "lm_head.weight");
  // Grouped-query attention: k and v project to kv_heads * head_dim = 2 * 4.
  EXPECT_EQ(model->model->layers[0]->as<LlamaDecoderLayer>()->self_attn->k_proj->weight.sizes(),
            (std::vector<int64_t>{8, 16}));
  EXPECT_EQ(checkpoint::ModuleStateDict(*Model(Tiny(/*tied=*/true))).size(), 20u);
}

// Initialisation is per tensor: a decoder layer built and initialised alone (sharded
// construction) gets the values whole-model construction gives it.
TEST(LlamaTest, AUnitInitialisedAloneEqualsTheWholeModelsInit) {
  const LlamaConfig c = Tiny();
  auto model = Model(c, 11);
  auto alone = std::make_shared<LlamaDecoderLayer>(c);
  InitLlamaWeights(*alone, "model.layers.1.", c, 11);
  const auto want = checkpoint::ModuleStateDict(*model->model->layers[1]);
  const auto got = checkpoint::ModuleStateDict(*alone);
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_TRUE(at::equal(want[i].second, got[i].second)) << want[i].first;
  }
  // The padding row of the embedding is zero; different seeds give different weights.
  EXPECT_EQ(model->model->embed_tokens->weight[0].abs().sum().item<float>(), 0.0f);
  EXPECT_FALSE(at::equal(model->lm_head->weight, Model(c, 12)->lm_head->weight));
}

// Deferred construction (DeepSpeed's zero.Init): no parameter holds bytes after CreateDeferred;
// materialising them — all at once, or one decoder layer alone — gives exactly Create's values.
TEST(LlamaTest, DeferredConstructionMaterialisesCreatesValues) {
  for (bool tied : {false, true}) {
    const LlamaConfig c = Tiny(tied);
    auto eager = Model(c, 21);
    ASSERT_OK_AND_ASSIGN(auto deferred, LlamaForCausalLM::CreateDeferred(c, 21));
    for (const at::Tensor& p : deferred->parameters()) {
      EXPECT_TRUE(modeling::IsDeferred(p));
      EXPECT_EQ(p.storage().nbytes(), 0u);
    }
    const modeling::ParameterFill fill = deferred->InitFill();
    ASSERT_OK(modeling::MaterializeParameters(*deferred->model->layers[1], "model.layers.1.", fill));
    EXPECT_TRUE(modeling::AnyDeferred(*deferred));
    const auto want_layer = checkpoint::ModuleStateDict(*eager->model->layers[1]);
    const auto got_layer = checkpoint::ModuleStateDict(*deferred->model->layers[1]);
    for (size_t i = 0; i < want_layer.size(); ++i) {
      EXPECT_TRUE(at::equal(want_layer[i].second, got_layer[i].second)) << want_layer[i].first;
    }
    ASSERT_OK(modeling::MaterializeParameters(*deferred, "", fill));
    EXPECT_FALSE(modeling::AnyDeferred(*deferred));
    const auto want = checkpoint::ModuleStateDict(*eager);
    const auto got = checkpoint::ModuleStateDict(*deferred);
    ASSERT_EQ(want.size(), got.size());
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(want[i].first, got[i].first);
      EXPECT_TRUE(at::equal(want[i].second, got[i].second)) << want[i].first << " tied " << tied;
    }
    EXPECT_TRUE(at::equal(eager->TryForward({{"input_ids", Ids({3, 4, 5}, 1)}})->Get("logits"),
                          deferred->TryForward({{"input_ids", Ids({3, 4, 5}, 1)}})->Get("logits")));
  }
}

// transformers 4.41 computes the rotary angles with autocast off: under bf16 CPU autocast the
// cos / sin of position 1000 are those of float32 (bf16 positions would be off by whole steps).
TEST(LlamaTest, RotaryAnglesIgnoreAutocast) {
  LlamaConfig c = Tiny();
  c.max_position_embeddings = 4096;
  const LlamaRotaryEmbedding rotary(c);
  const at::Tensor positions = torch::tensor({{1000, 1001, 3001}}, torch::kLong);
  const auto [cos32, sin32] = rotary.CosSin(positions, at::kFloat);
  precision::AutocastGuard autocast(precision::AutocastSpec{});  // CPU, bf16
  const auto [cos, sin] = rotary.CosSin(positions, at::kFloat);
  EXPECT_TRUE(at::equal(cos, cos32));
  EXPECT_TRUE(at::equal(sin, sin32));
}

TEST(LlamaTest, CachedStepsEqualTheFullForwardWithGqaAndPadding) {
  for (int64_t kv : {1, 2, 4}) {
    auto model = Model(Tiny(false, kv));
    model->eval();
    torch::NoGradGuard no_grad;
    const at::Tensor ids = Ids({0, 0, 5, 6, 7, 8, 3, 4, 5, 6, 7, 8}, 2);
    const at::Tensor mask = Ids({0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, 2);
    const at::Tensor positions = (mask.cumsum(-1) - 1).masked_fill_(mask == 0, 1);
    const at::Tensor full =
        model->Logits(model->model->Forward(ids, mask, positions, /*cache=*/nullptr));
    LlamaCache cache;
    for (int64_t t = 0; t < ids.size(1); ++t) {
      const at::Tensor step = model->NextTokenLogits(
          ids.narrow(1, t, 1), mask.narrow(1, 0, t + 1), positions.narrow(1, t, 1), &cache);
      // Padding positions attend to nothing; their outputs are never used (nor compared).
      for (int64_t row = 0; row < 2; ++row) {
        if (mask[row][t].item<int64_t>() == 0) continue;
        EXPECT_TRUE(torch::allclose(step[row], full[row][t], 1e-5, 1e-5))
            << "kv " << kv << " row " << row << " t " << t;
      }
      EXPECT_EQ(cache.Length(), t + 1);
    }
  }
}

TEST(LlamaTest, LossIsTheShiftedCrossEntropyIgnoringMinus100) {
  auto model = Model(Tiny());
  const at::Tensor ids = Ids({3, 4, 5, 6, 7, 8}, 2);
  const at::Tensor labels = Ids({3, 4, -100, 6, 7, 8}, 2);
  ASSERT_OK_AND_ASSIGN(modeling::ModelOutput out,
                       model->TryForward({{"input_ids", ids}, {"labels", labels}}));
  const at::Tensor logp = at::log_softmax(out.Get("logits"), -1);
  // Predictions at positions 0..1 of each row for labels at 1..2; row 0's label -100 is skipped.
  const double sum = -(logp[0][0][4] + logp[1][0][7] + logp[1][1][8]).item<double>();
  EXPECT_NEAR(out.loss.item<double>(), sum / 3, 1e-6);
  EXPECT_EQ(out.Get("logits").scalar_type(), at::kFloat);
}

struct UnitRecorder : modeling::UnitRunner {
  at::Tensor Run(torch::nn::Module& unit, const std::function<at::Tensor()>& forward) override {
    units.push_back(&unit);
    return forward();
  }
  std::vector<const torch::nn::Module*> units;
};

// Every LlamaDecoderLayer runs through the installed runner, with and without gradient
// checkpointing, attention dropout on: the loss and every gradient equal a plain run's.
TEST(LlamaTest, EachLayerRunsThroughTheUnitRunnerWithAndWithoutCheckpointing) {
  LlamaConfig c = Tiny();
  c.attention_dropout = 0.2;
  auto model = Model(c);
  model->train();
  ASSERT_OK_AND_ASSIGN(std::vector<modeling::FoundUnit> found,
                       modeling::FindUnits(*model, model->UnitClassNames()));
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[1].name, "model.layers.1");
  const data::Batch batch = {{"input_ids", Ids({3, 4, 5, 6, 7, 8, 9, 1}, 2)},
                             {"attention_mask", Ids({1, 1, 1, 1, 1, 1, 1, 0}, 2)},
                             {"labels", Ids({3, 4, 5, 6, 7, 8, 9, -100}, 2)}};
  torch::manual_seed(5);
  ASSERT_OK_AND_ASSIGN(modeling::ModelOutput plain, model->TryForward(batch));
  plain.loss.backward();
  std::vector<at::Tensor> plain_grads;
  for (const at::Tensor& p : model->parameters()) plain_grads.push_back(p.grad().clone());
  for (bool checkpointing : {false, true}) {
    model->zero_grad();
    if (checkpointing) {
      ASSERT_OK(model->EnableGradientCheckpointing({}));
    }
    EXPECT_EQ(model->IsGradientCheckpointing(), checkpointing);
    UnitRecorder recorder;
    ASSERT_OK(model->SetUnitRunner(&recorder));
    torch::manual_seed(5);
    ASSERT_OK_AND_ASSIGN(modeling::ModelOutput run, model->TryForward(batch));
    run.loss.backward();
    ASSERT_OK(model->SetUnitRunner(nullptr));
    model->DisableGradientCheckpointing();
    EXPECT_TRUE(at::equal(run.loss, plain.loss)) << "checkpointing " << checkpointing;
    ASSERT_EQ(recorder.units.size(), 2u);
    for (size_t i = 0; i < 2; ++i) EXPECT_EQ(recorder.units[i], found[i].module.get());
    size_t k = 0;
    for (const auto& item : model->named_parameters()) {
      EXPECT_TRUE(at::allclose(item.value().grad(), plain_grads[k++], 1e-6, 1e-8))
          << item.key() << " checkpointing " << checkpointing;
    }
  }
}

TEST(LlamaTest, BadInputsAreInvalidArgument) {
  auto model = Model(Tiny());
  EXPECT_THAT(model->TryForward({{"labels", Ids({1, 2}, 1)}}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no \"input_ids\"")));
  EXPECT_THAT(model->TryForward({{"input_ids", Ids({1, 40}, 1)}}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("input_ids values")));
  EXPECT_THAT(model->TryForward({{"input_ids", Ids({1, 2}, 1)}, {"labels", Ids({1, 2, 3}, 1)}}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("labels has shape")));
  EXPECT_THROW(model->Forward({{"input_ids", Ids({1, 2}, 2)}, {"attention_mask", Ids({1}, 1)}}),
               std::invalid_argument);
}

}  // namespace
}  // namespace loom::models::llama
