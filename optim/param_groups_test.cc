#include "optim/param_groups.h"

#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>

#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::optim {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

// A layer norm that is not torch::nn::LayerNorm: HF still decays its weight (it only
// recognises nn.LayerNorm), but not its "bias".
struct RmsNormImpl : torch::nn::Module {
  RmsNormImpl() {
    register_parameter("weight", torch::ones({4}));
    register_parameter("bias", torch::zeros({4}));
  }
};

struct LayerImpl : torch::nn::Module {
  LayerImpl() {
    register_module("attn", torch::nn::Linear(4, 4));
    register_module("LayerNorm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({4})));
    register_module("rms", std::make_shared<RmsNormImpl>());
  }
};

struct ModelImpl : torch::nn::Module {
  ModelImpl() {
    register_parameter("bias_scale", torch::ones({2}));  // "bias" anywhere in the name
    register_parameter("temperature", torch::ones({1}));
    register_module("embed", torch::nn::Linear(torch::nn::LinearOptions(3, 4).bias(false)));
    torch::nn::ModuleList layers;
    layers->push_back(std::make_shared<LayerImpl>());
    layers->push_back(std::make_shared<LayerImpl>());
    register_module("layers", layers);
    register_module("final_norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({4})));
  }
};

TEST(DecayParameterNamesTest, ExcludesLayerNormAnywhereAndEveryBiasName) {
  ModelImpl model;
  // HF's traversal: children first (in registration order, recursively), then own params.
  EXPECT_THAT(DecayParameterNames(model),
              ElementsAre("embed.weight", "layers.0.attn.weight", "layers.0.rms.weight",
                          "layers.1.attn.weight", "layers.1.rms.weight", "temperature"));
}

TEST(DecayParameterNamesTest, TopLevelLayerNormKeepsItsOwnWeight) {
  // HF always adds the model's own parameters; only LayerNorm *children* are skipped.
  torch::nn::LayerNormImpl norm(torch::nn::LayerNormOptions({3}));
  EXPECT_THAT(DecayParameterNames(norm), ElementsAre("weight"));
}

TEST(HfParamGroupsTest, TwoGroupsInNamedParametersOrder) {
  ModelImpl model;
  const std::vector<ParamGroup> groups = HfParamGroups(model, 0.01);
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].weight_decay, 0.01);
  EXPECT_EQ(groups[1].weight_decay, 0.0);
  EXPECT_THAT(groups[0].names,
              ElementsAre("temperature", "embed.weight", "layers.0.attn.weight",
                          "layers.0.rms.weight", "layers.1.attn.weight", "layers.1.rms.weight"));
  EXPECT_THAT(groups[1].names,
              ElementsAre("bias_scale", "layers.0.attn.bias", "layers.0.LayerNorm.weight",
                          "layers.0.LayerNorm.bias", "layers.0.rms.bias", "layers.1.attn.bias",
                          "layers.1.LayerNorm.weight", "layers.1.LayerNorm.bias",
                          "layers.1.rms.bias", "final_norm.weight", "final_norm.bias"));
  // The tensors are the module's own (same storage), parallel to the names.
  auto named = model.named_parameters();
  for (const ParamGroup& g : groups) {
    ASSERT_EQ(g.names.size(), g.params.size());
    for (size_t i = 0; i < g.names.size(); ++i) {
      EXPECT_TRUE(g.params[i].is_same(named[g.names[i]])) << g.names[i];
    }
  }
}

TEST(HfParamGroupsTest, SkipsFrozenParametersAndKeepsEmptyGroups) {
  torch::nn::Module model;
  model.register_parameter("w", torch::ones({2}));
  model.register_parameter("frozen", torch::ones({2}), /*requires_grad=*/false);
  const std::vector<ParamGroup> groups = HfParamGroups(model, 0.5);
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_THAT(groups[0].names, ElementsAre("w"));
  EXPECT_THAT(groups[1].names, IsEmpty());
  // DecayParameterNames itself does not look at requires_grad (HF neither).
  EXPECT_THAT(DecayParameterNames(model), ElementsAre("w", "frozen"));
}

TEST(HfParamGroupsTest, TiedWeightAppearsOnceUnderItsFirstName) {
  struct TiedImpl : torch::nn::Module {
    TiedImpl() {
      auto encoder = register_module("encoder", torch::nn::Linear(2, 2));
      auto decoder = register_module("decoder", std::make_shared<torch::nn::Module>());
      decoder->register_parameter("weight", encoder->weight);
    }
  } model;
  EXPECT_THAT(DecayParameterNames(model), ElementsAre("encoder.weight", "decoder.weight"));
  const std::vector<ParamGroup> groups = HfParamGroups(model, 0.1);
  EXPECT_THAT(groups[0].names, ElementsAre("encoder.weight"));
  EXPECT_THAT(groups[1].names, ElementsAre("encoder.bias"));
}

}  // namespace
}  // namespace loom::optim
