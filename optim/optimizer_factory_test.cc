#include "optim/optimizer_factory.h"

#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/adagrad.h>
#include <torch/optim/adamw.h>
#include <torch/optim/rmsprop.h>
#include <torch/optim/sgd.h>

#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "optim/adafactor.h"
#include "optim/fused_cpu_optim.h"
#include "optim/hf_adamw.h"

namespace loom::optim {
namespace {

using ::loom::base::testing::IsOkAndHolds;
using ::loom::base::testing::StatusIs;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Pair;
using ::testing::SizeIs;

// Double-precision parameters so that closed forms can be checked tightly: "w" (decays),
// "b" (a bias: no decay).
struct TinyImpl : torch::nn::Module {
  TinyImpl() {
    w = register_parameter("w", torch::tensor({1.0, -2.0}, torch::kDouble));
    b = register_parameter("bias", torch::tensor({0.5}, torch::kDouble));
  }
  at::Tensor w, b;
};

args::TrainingArguments Args(const std::string& optim) {
  args::TrainingArguments a;
  a.set_optim(optim);
  a.set_learning_rate(0.1);
  a.set_weight_decay(0.5);
  return a;
}

TEST(CreateOptimizerTest, BuildsTheClassHfUsesWithTwoGroups) {
  struct Expect {
    std::string optim;
    bool (*is_class)(torch::optim::Optimizer*);
  };
  const std::vector<Expect> cases = {
      {"adamw_torch", [](auto* o) { return dynamic_cast<torch::optim::AdamW*>(o) != nullptr; }},
      {"adamw_torch_fused", [](auto* o) { return dynamic_cast<FusedCpuAdamW*>(o) != nullptr; }},
      {"adamw_hf", [](auto* o) { return dynamic_cast<HfAdamW*>(o) != nullptr; }},
      {"adafactor", [](auto* o) { return dynamic_cast<Adafactor*>(o) != nullptr; }},
      {"sgd", [](auto* o) { return dynamic_cast<torch::optim::SGD*>(o) != nullptr; }},
      {"adagrad", [](auto* o) { return dynamic_cast<torch::optim::Adagrad*>(o) != nullptr; }},
      {"rmsprop", [](auto* o) { return dynamic_cast<torch::optim::RMSprop*>(o) != nullptr; }},
  };
  for (const Expect& e : cases) {
    SCOPED_TRACE(e.optim);
    TinyImpl model;
    ASSERT_OK_AND_ASSIGN(auto optimizer, CreateOptimizer(Args(e.optim), model));
    EXPECT_TRUE(e.is_class(optimizer.get()));
    EXPECT_EQ(optimizer->defaults().get_lr(), 0.1);
    ASSERT_THAT(optimizer->param_groups(), SizeIs(2));
    EXPECT_TRUE(optimizer->param_groups()[0].params()[0].is_same(model.w));
    EXPECT_TRUE(optimizer->param_groups()[1].params()[0].is_same(model.b));
    for (const auto& group : optimizer->param_groups()) EXPECT_EQ(group.options().get_lr(), 0.1);
  }
  EXPECT_EQ(SupportedOptimizerNames().size(), cases.size());
}

TEST(CreateOptimizerTest, AdamKwargsAndGroupWeightDecay) {
  TinyImpl model;
  args::TrainingArguments a = Args("adamw_torch");
  a.set_adam_beta1(0.8);
  a.set_adam_beta2(0.9);
  a.set_adam_epsilon(1e-5);
  ASSERT_OK_AND_ASSIGN(auto optimizer, CreateOptimizer(a, model));
  const auto& decay =
      static_cast<const torch::optim::AdamWOptions&>(optimizer->param_groups()[0].options());
  const auto& no_decay =
      static_cast<const torch::optim::AdamWOptions&>(optimizer->param_groups()[1].options());
  EXPECT_EQ(decay.betas(), std::make_tuple(0.8, 0.9));
  EXPECT_EQ(decay.eps(), 1e-5);
  EXPECT_EQ(decay.weight_decay(), 0.5);
  EXPECT_EQ(no_decay.weight_decay(), 0.0);
  EXPECT_EQ(no_decay.eps(), 1e-5);
}

TEST(CreateOptimizerTest, AdafactorAsTheTrainerConfiguresIt) {
  TinyImpl model;
  ASSERT_OK_AND_ASSIGN(auto optimizer, CreateOptimizer(Args("adafactor"), model));
  const auto& o = static_cast<const AdafactorOptions&>(optimizer->param_groups()[0].options());
  EXPECT_EQ(o.lr(), c10::optional<double>(0.1));
  EXPECT_FALSE(o.scale_parameter());
  EXPECT_FALSE(o.relative_step());
  EXPECT_FALSE(o.warmup_init());
  EXPECT_FALSE(o.beta1().has_value());
  EXPECT_EQ(o.eps(), std::make_tuple(1e-30, 1e-3));
  EXPECT_EQ(o.clip_threshold(), 1.0);
  EXPECT_EQ(o.decay_rate(), -0.8);
  EXPECT_EQ(o.weight_decay(), 0.5);
}

// One adamw_hf step in closed form: m = (1-b1) g, v = (1-b2) g^2, then
// p -= lr sqrt(1-b2)/(1-b1) * m / (sqrt(v) + eps), then p -= lr * wd * p (decay group only).
TEST(CreateOptimizerTest, AdamwHfFirstStepClosedForm) {
  TinyImpl model;
  args::TrainingArguments a = Args("adamw_hf");
  a.set_adam_epsilon(1e-3);
  ASSERT_OK_AND_ASSIGN(auto optimizer, CreateOptimizer(a, model));
  model.w.mutable_grad() = torch::tensor({0.5, 2.0}, torch::kDouble);
  model.b.mutable_grad() = torch::tensor({-1.0}, torch::kDouble);
  optimizer->step();
  const double b1 = 0.9, b2 = 0.999, lr = 0.1, eps = 1e-3, wd = 0.5;
  auto expected = [&](double p, double g, double decay) {
    const double m = (1 - b1) * g, v = (1 - b2) * g * g;
    const double after = p - lr * std::sqrt(1 - b2) / (1 - b1) * m / (std::sqrt(v) + eps);
    return after - lr * decay * after;
  };
  EXPECT_NEAR(model.w[0].item<double>(), expected(1.0, 0.5, wd), 1e-15);
  EXPECT_NEAR(model.w[1].item<double>(), expected(-2.0, 2.0, wd), 1e-15);
  EXPECT_NEAR(model.b[0].item<double>(), expected(0.5, -1.0, 0.0), 1e-15);
}

// A zero gradient still decays the parameter (embedding rows that saw no token); an
// undefined gradient skips it entirely, for every optimizer.
TEST(CreateOptimizerTest, ZeroGradientDecaysUndefinedGradientSkips) {
  for (const std::string& optim : SupportedOptimizerNames()) {
    SCOPED_TRACE(optim);
    TinyImpl model;
    ASSERT_OK_AND_ASSIGN(auto optimizer, CreateOptimizer(Args(optim), model));
    model.w.mutable_grad() = torch::zeros({2}, torch::kDouble);
    optimizer->step();
    // p = 1, g = 0, lr = 0.1, wd = 0.5. Decoupled decay (AdamW variants, Adafactor) and
    // SGD's L2 term give 1 - lr*wd; Adagrad and RMSprop normalise the L2 gradient wd*p.
    const std::map<std::string, double> expected = {
        {"adamw_torch", 0.95},
        {"adamw_torch_fused", 0.95},
        {"adamw_hf", 0.95},
        {"adafactor", 0.95},
        {"sgd", 0.95},
        {"adagrad", 1.0 - 0.1 * 0.5 / (0.5 + 1e-10)},
        {"rmsprop", 1.0 - 0.1 * 0.5 / (std::sqrt(0.01 * 0.25) + 1e-8)},
    };
    EXPECT_NEAR(model.w[0].item<double>(), expected.at(optim), 1e-12);
    EXPECT_EQ(model.b[0].item<double>(), 0.5);  // no grad: untouched
  }
}

TEST(CreateOptimizerTest, FusedIsTheSameArithmeticAsAdamwTorch) {
  std::vector<std::vector<double>> results;
  for (const std::string optim : {"adamw_torch", "adamw_torch_fused"}) {
    TinyImpl model;
    ASSERT_OK_AND_ASSIGN(auto optimizer, CreateOptimizer(Args(optim), model));
    for (int k = 0; k < 3; ++k) {
      model.w.mutable_grad() = torch::tensor({0.3 * k - 0.2, 1.5}, torch::kDouble);
      optimizer->step();
    }
    results.push_back({model.w[0].item<double>(), model.w[1].item<double>()});
  }
  EXPECT_EQ(results[0], results[1]);
}

TEST(CreateOptimizerTest, UnknownOptimListsTheSupportedNames) {
  TinyImpl model;
  EXPECT_THAT(CreateOptimizer(Args("adamw_apex_fused"), model),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("--optim adamw_apex_fused"),
                             HasSubstr("adamw_torch, adamw_torch_fused, adamw_hf, adafactor, "
                                       "sgd, adagrad, rmsprop"))));
}

TEST(CreateOptimizerTest, InvalidHyperparametersNameTheFlag) {
  TinyImpl model;
  args::TrainingArguments a = Args("adamw_torch");
  a.set_learning_rate(-1);
  EXPECT_THAT(CreateOptimizer(a, model),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--learning_rate -1")));
  a = Args("adamw_hf");
  a.set_adam_beta2(1.0);
  EXPECT_THAT(CreateOptimizer(a, model),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--adam_beta2 1")));
  a = Args("adamw_torch");
  a.set_adam_epsilon(-1e-8);
  EXPECT_THAT(CreateOptimizer(a, model),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--adam_epsilon")));
  a = Args("sgd");
  a.set_learning_rate(std::nan(""));
  EXPECT_THAT(CreateOptimizer(a, model),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--learning_rate nan")));
  // Like Python, a negative group weight decay is not checked by torch's constructors.
  a = Args("adamw_torch");
  a.set_weight_decay(-0.1);
  EXPECT_OK(CreateOptimizer(a, model).status());
}

TEST(ParseOptimArgsTest, HfSyntax) {
  EXPECT_THAT(ParseOptimArgs(""), IsOkAndHolds(IsEmpty()));
  EXPECT_THAT(ParseOptimArgs(" a = 1 , b=x "),
              IsOkAndHolds(ElementsAre(Pair("a", "1"), Pair("b", "x"))));
  EXPECT_THAT(ParseOptimArgs("a=1,"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("--optim_args"), HasSubstr("entry \"\" is not key=value"))));
  EXPECT_THAT(ParseOptimArgs("a=b=c"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("\"a=b=c\"")));
  EXPECT_THAT(ParseOptimArgs("novalue"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("\"novalue\"")));
}

TEST(CreateOptimizerTest, AdamwHfCarriesHfsDeprecationWarning) {
  TinyImpl model;
  std::vector<std::string> warnings;
  ASSERT_OK(CreateOptimizer(Args("adamw_hf"), model, &warnings).status());
  EXPECT_THAT(warnings, ElementsAre(AllOf(HasSubstr("adamw_hf"), HasSubstr("deprecated"))));
  warnings.clear();
  ASSERT_OK(CreateOptimizer(Args("adamw_torch"), model, &warnings).status());
  EXPECT_THAT(warnings, IsEmpty());
}

TEST(CreateOptimizerTest, OptimArgsAreValidatedThenIgnoredWithAWarning) {
  TinyImpl model;
  args::TrainingArguments a = Args("adamw_torch");
  a.set_optim_args("use_kahan_summation=True");
  std::vector<std::string> warnings;
  ASSERT_OK(CreateOptimizer(a, model, &warnings).status());
  EXPECT_THAT(warnings, ElementsAre(AllOf(HasSubstr("--optim_args"), HasSubstr("ignored"),
                                          HasSubstr("adamw_torch"))));
  a.set_optim_args("broken");
  EXPECT_THAT(CreateOptimizer(a, model),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--optim_args")));
}

}  // namespace
}  // namespace loom::optim
