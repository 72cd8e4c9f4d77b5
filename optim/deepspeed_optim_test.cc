// DeepSpeed's optimizer and scheduler sections: the schedules against closed forms of
// lr_schedules.py's formulas (DeepSpeed 0.13.5), the optimizer classes DeepSpeed picks,
// and the refusals.
#include "optim/deepspeed_optim.h"

#include <torch/nn/modules/linear.h>
#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>

#include <cmath>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::optim {
namespace {

using ::testing::HasSubstr;

args::DeepSpeedConfig Config(const std::string& text) {
  absl::StatusOr<args::DeepSpeedConfig> ds = args::LoadDeepSpeedConfig(text);
  EXPECT_TRUE(ds.ok()) << ds.status();
  return *ds;
}

struct Fixture {
  torch::nn::Linear model{3, 2};
  std::unique_ptr<torch::optim::Optimizer> optimizer;
  std::unique_ptr<LrScheduler> scheduler;

  explicit Fixture(const std::string& scheduler_json, double lr = 0.5) {
    optimizer = std::make_unique<torch::optim::SGD>(model->parameters(),
                                                    torch::optim::SGDOptions(lr));
    absl::StatusOr<std::unique_ptr<LrScheduler>> s =
        CreateDeepSpeedScheduler(Config(scheduler_json), optimizer.get());
    EXPECT_TRUE(s.ok()) << s.status();
    if (s.ok()) scheduler = std::move(*s);
  }
  double Lr() const { return optimizer->param_groups()[0].options().get_lr(); }
};

TEST(DeepSpeedSchedulerTest, WarmupLrLinearLeavesTheOptimizersLrUntilTheFirstStep) {
  Fixture f(R"({"scheduler": {"type": "WarmupLR", "params": {"warmup_min_lr": 0.1,
      "warmup_max_lr": 0.9, "warmup_num_steps": 4, "warmup_type": "linear"}}})");
  EXPECT_DOUBLE_EQ(f.Lr(), 0.5);
  EXPECT_EQ(f.scheduler->LastLr(), std::vector<double>{0.0});
  const std::vector<double> expected = {0.1, 0.3, 0.5, 0.7, 0.9, 0.9};
  for (double e : expected) {
    f.scheduler->Step();
    EXPECT_DOUBLE_EQ(f.Lr(), e);
    EXPECT_DOUBLE_EQ(f.scheduler->LastLr()[0], e);
  }
}

TEST(DeepSpeedSchedulerTest, WarmupLrLogType) {
  Fixture f(R"({"scheduler": {"type": "WarmupLR", "params": {"warmup_min_lr": 0,
      "warmup_max_lr": 1.0, "warmup_num_steps": 8}}})");
  for (int it = 0; it < 10; ++it) {
    f.scheduler->Step();
    EXPECT_NEAR(f.Lr(), it < 8 ? std::log(it + 1.0) / std::log(8.0) : 1.0, 1e-15) << it;
  }
}

TEST(DeepSpeedSchedulerTest, WarmupDecayLrDecaysLinearlyToZero) {
  Fixture f(R"({"scheduler": {"type": "WarmupDecayLR", "params": {"warmup_min_lr": 0,
      "warmup_max_lr": 2.0, "warmup_num_steps": 2, "warmup_type": "linear",
      "total_num_steps": 6}}})");
  // it 0,1: warmup 0, 1; it >= 2: 2 * (6 - it) / 4.
  const std::vector<double> expected = {0.0, 1.0, 2.0, 1.5, 1.0, 0.5, 0.0, 0.0};
  for (double e : expected) {
    f.scheduler->Step();
    EXPECT_DOUBLE_EQ(f.Lr(), e);
  }
}

TEST(DeepSpeedSchedulerTest, WarmupCosineLrScalesTheOptimizersLr) {
  Fixture f(R"({"scheduler": {"type": "WarmupCosineLR", "params": {"total_num_steps": 6,
      "warmup_num_steps": 2, "warmup_type": "linear", "warmup_min_ratio": 0.2,
      "cos_min_ratio": 0.0}}})", /*lr=*/4.0);
  // it 0, 1: 4 * (0.2 + 0.8 * it / 2); it >= 2: 4 * (1 + cos(pi * (it - 1) / 4)) / 2.
  std::vector<double> expected = {0.8, 2.4};
  for (int it = 2; it < 6; ++it) expected.push_back(2.0 * (1 + std::cos(M_PI * (it - 1) / 4.0)));
  for (double e : expected) {
    f.scheduler->Step();
    EXPECT_NEAR(f.Lr(), e, 1e-12);
  }
}

TEST(DeepSpeedSchedulerTest, LrRangeTestSetsItsMinLrAtOnce) {
  Fixture f(R"({"scheduler": {"type": "LRRangeTest", "params": {"lr_range_test_min_lr": 0.01,
      "lr_range_test_step_size": 2, "lr_range_test_step_rate": 3.0,
      "lr_range_test_staircase": true}}})");
  EXPECT_DOUBLE_EQ(f.Lr(), 0.01);
  // lr = 0.01 * (1 + 3 * floor((it + 1) / 2)).
  const std::vector<double> expected = {0.01, 0.04, 0.04, 0.07};
  for (double e : expected) {
    f.scheduler->Step();
    EXPECT_NEAR(f.Lr(), e, 1e-15);
  }
}

TEST(DeepSpeedSchedulerTest, StateDictRoundTrip) {
  Fixture f(R"({"scheduler": {"type": "WarmupLR", "params": {"warmup_num_steps": 4}}})");
  f.scheduler->Step();
  f.scheduler->Step();
  const c10::IValue state = f.scheduler->StateDict();
  Fixture g(R"({"scheduler": {"type": "WarmupLR", "params": {"warmup_num_steps": 4}}})");
  ASSERT_TRUE(g.scheduler->LoadStateDict(state).ok());
  EXPECT_EQ(g.scheduler->last_epoch(), 2);
  g.scheduler->Step();
  f.scheduler->Step();
  EXPECT_DOUBLE_EQ(g.Lr(), f.Lr());
}

TEST(DeepSpeedOptimizerTest, AdamIsAdamWUnlessAdamWModeIsFalse) {
  torch::nn::Linear model(3, 2);
  model->bias.set_requires_grad(false);
  auto adamw = CreateDeepSpeedOptimizer(
      Config(R"({"optimizer": {"type": "Adam", "params": {"lr": 0.01, "weight_decay": 0.1}}})"),
      *model);
  ASSERT_TRUE(adamw.ok()) << adamw.status();
  auto* as_adamw = dynamic_cast<torch::optim::AdamW*>(adamw->get());
  ASSERT_NE(as_adamw, nullptr);
  ASSERT_EQ(as_adamw->param_groups().size(), 1u);
  EXPECT_EQ(as_adamw->param_groups()[0].params().size(), 1u);  // the frozen bias left out
  EXPECT_DOUBLE_EQ(as_adamw->param_groups()[0].options().get_lr(), 0.01);
  auto adam = CreateDeepSpeedOptimizer(
      Config(R"({"optimizer": {"type": "Adam", "params": {"adam_w_mode": false}}})"), *model);
  ASSERT_TRUE(adam.ok());
  EXPECT_NE(dynamic_cast<torch::optim::Adam*>(adam->get()), nullptr);
}

TEST(DeepSpeedOptimizerTest, Refusals) {
  struct Case {
    const char* json;
    int stage;
    const char* message;
  };
  const Case cases[] = {
      {R"({"optimizer": {"type": "Lamb"}})", 2, "optimizer.type \"Lamb\" is not implemented"},
      {R"({"optimizer": {"type": "OneBitAdam"}})", 1, "not compatible with ZeRO"},
      {R"({"optimizer": {"type": "AdamW", "params": {"max_grad_norm": 1.0}}})", 0,
       "'gradient_clipping'"},
      {R"({"optimizer": {"type": "AdamW", "params": {"momentum": 0.9}}})", 0,
       "optimizer.params.momentum"},
      {R"({"optimizer": {"type": "AdamW", "params": {"amsgrad": true}}})", 0, "amsgrad"},
      {R"({"optimizer": {"type": "SGD", "params": {"lr": 0.1}}})", 2,
       "zero_allow_untested_optimizer"},
      {R"({"optimizer": {"type": "SGD"}})", 0, "optimizer.params.lr is required"},
      {R"({"optimizer": {"type": "AdamW", "params": {"lr": -1}}})", 0, "optimizer.params.lr"},
  };
  for (const Case& c : cases) {
    const absl::Status s = CheckDeepSpeedOptimizer(Config(c.json), c.stage);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << c.json;
    EXPECT_THAT(s.message(), HasSubstr(c.message)) << c.json;
  }
  EXPECT_TRUE(CheckDeepSpeedOptimizer(
                  Config(R"({"optimizer": {"type": "SGD", "params": {"lr": 0.1}},
                             "zero_allow_untested_optimizer": true})"),
                  2)
                  .ok());
  const Case schedulers[] = {
      {R"({"scheduler": {"type": "OneCycle"}})", 0, "scheduler.type \"OneCycle\""},
      {R"({"scheduler": {"type": "WarmupDecayLR"}})", 0, "total_num_steps is required"},
      {R"({"scheduler": {"type": "WarmupLR", "params": {"gamma": 2}}})", 0,
       "scheduler.params.gamma"},
  };
  for (const Case& c : schedulers) {
    const absl::Status s = CheckDeepSpeedScheduler(Config(c.json));
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << c.json;
    EXPECT_THAT(s.message(), HasSubstr(c.message)) << c.json;
  }
}

}  // namespace
}  // namespace loom::optim
