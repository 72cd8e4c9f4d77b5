// CreateOptimizer for every supported --optim against Python torch 1.13 (testdata/
// optimizers.json from make_golden.py): HF's two parameter groups on a small module with a
// LayerNorm, biases, a frozen parameter, one without gradients and one whose gradient
// appears at step 2; four steps with fixed gradients and a changing group lr. adamw_hf and
// adafactor are compared with transcriptions of transformers' algorithms in the script.
#include <torch/nn/module.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "args/parser.h"
#include "args/training_args.pb.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "optim/adafactor.h"
#include "optim/optimizer_factory.h"
#include "optim/param_groups.h"
#include "tests/optim/golden_util.h"

namespace loom::optim::testing {
namespace {

using json = nlohmann::json;

// The module of make_golden.py (class Net), registered in the same order.
struct BlockImpl : torch::nn::Module {
  BlockImpl() {
    register_module("LayerNorm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({4})));
    register_module("proj", torch::nn::Linear(4, 2));
  }
};

struct NetImpl : torch::nn::Module {
  NetImpl() {
    register_parameter("scale", torch::zeros({2}));
    register_parameter("frozen", torch::zeros({3}), /*requires_grad=*/false);
    register_parameter("late", torch::zeros({2, 2}));
    register_parameter("unused", torch::zeros({3}));
    register_module("embed", torch::nn::Embedding(5, 3));
    register_module("dense", torch::nn::Linear(3, 4));
    register_module("encoder", std::make_shared<BlockImpl>());
  }
};

class OptimizerGoldenTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_OK_AND_ASSIGN(golden_, LoadGolden("optimizers.json")); }

  // A fresh Net holding the golden initial values.
  std::shared_ptr<NetImpl> MakeNet() {
    auto net = std::make_shared<NetImpl>();
    auto params = net->named_parameters();
    torch::NoGradGuard no_grad;
    for (const json& p : golden_["params"]) {
      const std::string name = p["name"];
      EXPECT_TRUE(params.contains(name)) << name;
      if (!params.contains(name)) continue;
      params[name].copy_(
          TensorFromJson(p["init"], p["shape"].get<std::vector<int64_t>>(), at::kFloat));
    }
    return net;
  }

  std::vector<int64_t> Shape(const std::string& name) {
    for (const json& p : golden_["params"]) {
      if (p["name"] == name) return p["shape"].get<std::vector<int64_t>>();
    }
    return {};
  }

  // Runs the golden gradients through `optimizer` and compares every parameter after each
  // step; `scale_lr` applies the golden lr factors to the groups first.
  void RunAndCompare(const json& c, NetImpl& net, torch::optim::Optimizer& optimizer,
                     bool scale_lr) {
    auto params = net.named_parameters();
    std::vector<double> base_lrs;
    if (scale_lr) {
      for (const auto& g : optimizer.param_groups()) base_lrs.push_back(g.options().get_lr());
    }
    const int steps = golden_["steps"];
    for (int k = 0; k < steps; ++k) {
      if (scale_lr) {
        for (size_t i = 0; i < base_lrs.size(); ++i) {
          optimizer.param_groups()[i].options().set_lr(base_lrs[i] *
                                                       golden_["lr_factors"][k].get<double>());
        }
      }
      for (const auto& item : golden_["grads"][k].items()) {
        at::Tensor& grad = params[item.key()].mutable_grad();
        grad = item.value().is_null() ? at::Tensor()
                                      : TensorFromJson(item.value(), Shape(item.key()), at::kFloat);
      }
      optimizer.step();
      for (const auto& item : c["after_step"][k].items()) {
        EXPECT_TRUE(
            AllClose(Flatten(params[item.key()]), item.value().get<std::vector<double>>(),
                     absl::StrCat(c["name"].get<std::string>(), " step ", k + 1, " ", item.key())));
      }
    }
  }

  json golden_;
};

TEST_F(OptimizerGoldenTest, GroupingMatchesHf) {
  auto net = MakeNet();
  EXPECT_EQ(DecayParameterNames(*net),
            golden_["decay_parameter_names"].get<std::vector<std::string>>());
  const std::vector<ParamGroup> groups = HfParamGroups(*net, 0.1);
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].names, golden_["group_names"][0].get<std::vector<std::string>>());
  EXPECT_EQ(groups[1].names, golden_["group_names"][1].get<std::vector<std::string>>());
}

TEST_F(OptimizerGoldenTest, EveryOptimNameMatchesPython) {
  int compared = 0;
  for (const json& c : golden_["cases"]) {
    if (!c.contains("optim")) continue;
    SCOPED_TRACE(c["name"].get<std::string>());
    args::TrainingArguments a;
    args::ArgParser parser({});
    parser.AddGroup("TrainingArguments", &a);
    nlohmann::ordered_json fields = nlohmann::ordered_json::parse(c["args"].dump());
    fields["optim"] = c["optim"];
    ASSERT_OK(parser.ParseJson(fields, "optimizers.json"));
    auto net = MakeNet();
    std::vector<std::string> warnings;
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<torch::optim::Optimizer> optimizer,
                         CreateOptimizer(a, *net, &warnings));
    // HF's deprecation notice for transformers.AdamW is the only warning.
    EXPECT_EQ(warnings.size(), c["optim"] == "adamw_hf" ? 1u : 0u);
    ASSERT_EQ(optimizer->param_groups().size(), 2u);
    EXPECT_EQ(optimizer->defaults().get_lr(), a.learning_rate());
    RunAndCompare(c, *net, *optimizer, /*scale_lr=*/true);
    ++compared;
  }
  EXPECT_EQ(compared, 9);
}

TEST_F(OptimizerGoldenTest, AdafactorOptionsMatchPython) {
  int compared = 0;
  for (const json& c : golden_["cases"]) {
    if (!c.contains("adafactor_options")) continue;
    SCOPED_TRACE(c["name"].get<std::string>());
    const json& o = c["adafactor_options"];
    AdafactorOptions options;
    if (!o["lr"].is_null()) options.lr(o["lr"].get<double>());
    if (!o["beta1"].is_null()) options.beta1(o["beta1"].get<double>());
    options.scale_parameter(o["scale_parameter"].get<bool>())
        .relative_step(o["relative_step"].get<bool>())
        .warmup_init(o["warmup_init"].get<bool>())
        .clip_threshold(o["clip_threshold"].get<double>());
    auto net = MakeNet();
    std::vector<torch::optim::OptimizerParamGroup> groups;
    for (ParamGroup& g : HfParamGroups(*net, 0.0)) {
      groups.emplace_back(g.params, std::make_unique<AdafactorOptions>(options));
    }
    Adafactor optimizer(std::move(groups), options);
    RunAndCompare(c, *net, optimizer, /*scale_lr=*/options.lr().has_value());
    ++compared;
  }
  EXPECT_EQ(compared, 2);
}

}  // namespace
}  // namespace loom::optim::testing
