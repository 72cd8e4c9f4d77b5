#include "checkpoint/optimizer_state.h"

#include <ATen/ATen.h>
#include <torch/csrc/jit/serialization/pickle.h>
#include <torch/optim/adagrad.h>
#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/rmsprop.h>
#include <torch/optim/sgd.h>

#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/status_matchers.h"
#include "base/torch_compat.h"
#include "checkpoint/torch_pickle.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "optim/adafactor.h"
#include "optim/fused_cpu_optim.h"
#include "optim/hf_adamw.h"
#include "optim/param_state.h"

namespace loom::checkpoint {
namespace {

using ::loom::base::testing::StatusIs;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::Eq;
using ::testing::HasSubstr;
using ::testing::Not;
using Groups = std::vector<torch::optim::OptimizerParamGroup>;
using Factory = std::function<std::unique_ptr<torch::optim::Optimizer>(Groups)>;

std::string TempPath(const std::string& name) {
  const char* root = std::getenv("TEST_TMPDIR");
  return std::string(root ? root : "/tmp") + "/" + name;
}

std::vector<at::Tensor> MakeParams() {
  std::vector<at::Tensor> params = {at::arange(6, at::kFloat).reshape({2, 3}) * 0.1,
                                    at::arange(3, at::kFloat) * -0.2, at::ones({4})};
  for (at::Tensor& p : params) p.set_requires_grad(true);
  return params;
}

std::vector<at::Tensor> Clone(const std::vector<at::Tensor>& params) {
  std::vector<at::Tensor> out;
  for (const at::Tensor& p : params) out.push_back(p.detach().clone().set_requires_grad(true));
  return out;
}

// Two groups like HF's decay / no-decay split.
Groups GroupsOf(const std::vector<at::Tensor>& params) {
  return {torch::optim::OptimizerParamGroup({params[0], params[1]}),
          torch::optim::OptimizerParamGroup({params[2]})};
}

void Step(torch::optim::Optimizer& optimizer, const std::vector<at::Tensor>& params, int t) {
  for (size_t i = 0; i < params.size(); ++i) {
    params[i].mutable_grad() =
        at::sin(at::arange(params[i].numel(), at::kFloat) * static_cast<double>(i + 1) + t)
            .reshape(params[i].sizes());
  }
  optimizer.step();
}

std::vector<std::string> Keys(const c10::IValue& dict) {
  std::vector<std::string> keys;
  for (const auto& e : dict.toGenericDict()) keys.push_back(e.key().toStringRef());
  return keys;
}

c10::IValue Get(const c10::IValue& dict, const std::string& key) {
  return dict.toGenericDict().at(key);
}

// Steps an optimizer 3 times, saves optimizer.pt, restores it into a fresh optimizer (built with
// different hyperparameters) over copies of the parameters, steps both twice more and expects
// identical parameters.
void ExpectResumesExactly(const Factory& make, const Factory& make_other, const std::string& file) {
  std::vector<at::Tensor> a = MakeParams();
  std::unique_ptr<torch::optim::Optimizer> opt_a = make(GroupsOf(a));
  for (int t = 0; t < 3; ++t) Step(*opt_a, a, t);
  const std::string path = TempPath(file);
  ASSERT_OK(SaveOptimizerState(path, *opt_a));

  std::vector<at::Tensor> b = Clone(a);
  std::unique_ptr<torch::optim::Optimizer> opt_b = make_other(GroupsOf(b));
  ASSERT_OK(LoadOptimizerState(path, *opt_b));
  for (int t = 3; t < 5; ++t) {
    Step(*opt_a, a, t);
    Step(*opt_b, b, t);
  }
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(at::equal(a[i], b[i])) << file << " " << i;
}

TEST(OptimizerStateTest, AdamWLayoutIsTorchs) {
  std::vector<at::Tensor> params = MakeParams();
  torch::optim::AdamW opt(GroupsOf(params), torch::optim::AdamWOptions(0.01).weight_decay(0.5));
  Step(opt, params, 0);
  Step(opt, params, 1);
  ASSERT_OK_AND_ASSIGN(c10::IValue sd, OptimizerStateDict(opt));
  EXPECT_THAT(Keys(sd), ElementsAre("state", "param_groups"));
  const auto groups = Get(sd, "param_groups").toList();
  ASSERT_EQ(groups.size(), 2u);
  if (LOOM_TORCH_AT_LEAST(2, 11)) {  // torch 2.11's layout
    EXPECT_THAT(Keys(groups.get(0)),
                ElementsAre("lr", "betas", "eps", "weight_decay", "amsgrad", "maximize", "foreach",
                            "capturable", "differentiable", "fused", "decoupled_weight_decay",
                            "params"));
    EXPECT_TRUE(Get(groups.get(0), "decoupled_weight_decay").toBool());
  } else {
    EXPECT_THAT(Keys(groups.get(0)), ElementsAre("lr", "betas", "eps", "weight_decay", "amsgrad",
                                                 "foreach", "maximize", "capturable", "params"));
  }
  EXPECT_EQ(Get(groups.get(0), "lr").toDouble(), 0.01);
  EXPECT_EQ(Get(groups.get(0), "weight_decay").toDouble(), 0.5);
  EXPECT_EQ(Get(groups.get(0), "betas").toTupleRef().elements()[1].toDouble(), 0.999);
  EXPECT_TRUE(Get(groups.get(0), "foreach").isNone());
  EXPECT_THAT(Get(groups.get(0), "params").toIntVector(), ElementsAre(0, 1));
  EXPECT_THAT(Get(groups.get(1), "params").toIntVector(), ElementsAre(2));

  const auto state = Get(sd, "state").toGenericDict();
  ASSERT_EQ(state.size(), 3u);
  const c10::IValue s1 = state.at(int64_t{1});
  EXPECT_THAT(Keys(s1), ElementsAre("step", "exp_avg", "exp_avg_sq"));
  const at::Tensor step = Get(s1, "step").toTensor();
  EXPECT_EQ(step.scalar_type(), at::kFloat);
  EXPECT_EQ(step.dim(), 0);
  EXPECT_EQ(step.item<float>(), 2.0f);
  const auto& live = static_cast<const torch::optim::AdamWParamState&>(
      *opt.state().at(optim::ParamStateKey(params[1])));
  EXPECT_TRUE(at::equal(Get(s1, "exp_avg").toTensor(), live.exp_avg()));
  EXPECT_TRUE(at::equal(Get(s1, "exp_avg_sq").toTensor(), live.exp_avg_sq()));
}

TEST(OptimizerStateTest, FusedOptimizersSaySoOnTorch2) {
  // torch 2.x's AdamW(fused=True) writes fused True (transformers' adamw_torch_fused), and
  // its load_state_dict takes the flag back; torch 1.13's AdamW had no such key, its Adam False.
  std::vector<at::Tensor> params = MakeParams();
  optim::FusedCpuAdamW fused(GroupsOf(params), torch::optim::AdamWOptions(0.01));
  torch::optim::AdamW plain(GroupsOf(params), torch::optim::AdamWOptions(0.01));
  optim::FusedCpuAdam fused_adam(GroupsOf(params), torch::optim::AdamOptions(0.01));
  ASSERT_OK_AND_ASSIGN(c10::IValue a, OptimizerStateDict(fused));
  ASSERT_OK_AND_ASSIGN(c10::IValue b, OptimizerStateDict(plain));
  ASSERT_OK_AND_ASSIGN(c10::IValue c, OptimizerStateDict(fused_adam));
  const c10::IValue fused_group = Get(a, "param_groups").toList().get(1);
  const c10::IValue plain_group = Get(b, "param_groups").toList().get(1);
  const c10::IValue adam_group = Get(c, "param_groups").toList().get(1);
  EXPECT_EQ(Keys(fused_group), Keys(plain_group));  // same keys, same order
  if (LOOM_TORCH_AT_LEAST(2, 11)) {
    EXPECT_TRUE(Get(fused_group, "fused").toBool());
    EXPECT_TRUE(Get(plain_group, "fused").isNone());
    EXPECT_TRUE(Get(adam_group, "fused").toBool());
  } else {
    EXPECT_THAT(Keys(fused_group), Not(Contains("fused")));
    EXPECT_FALSE(Get(adam_group, "fused").toBool());
  }
}

TEST(OptimizerStateTest, EveryOptimizerResumesExactly) {
  using namespace torch::optim;  // NOLINT: many option types below
  auto f = [](auto make) -> Factory { return make; };
  ExpectResumesExactly(
      f([](Groups g) { return std::make_unique<AdamW>(g, AdamWOptions(0.01).weight_decay(0.1)); }),
      f([](Groups g) { return std::make_unique<AdamW>(g, AdamWOptions(0.5)); }), "adamw.pt");
  ExpectResumesExactly(
      f([](Groups g) { return std::make_unique<Adam>(g, AdamOptions(0.01).amsgrad(true)); }),
      f([](Groups g) { return std::make_unique<Adam>(g, AdamOptions(0.3)); }), "adam.pt");
  ExpectResumesExactly(
      f([](Groups g) {
        return std::make_unique<SGD>(g, SGDOptions(0.1).momentum(0.9).nesterov(true));
      }),
      f([](Groups g) { return std::make_unique<SGD>(g, SGDOptions(0.7)); }), "sgd.pt");
  ExpectResumesExactly(
      f([](Groups g) {
        return std::make_unique<Adagrad>(g, AdagradOptions(0.1).initial_accumulator_value(0.2));
      }),
      f([](Groups g) { return std::make_unique<Adagrad>(g, AdagradOptions(0.9)); }), "adagrad.pt");
  ExpectResumesExactly(
      f([](Groups g) {
        return std::make_unique<RMSprop>(g, RMSpropOptions(0.01).momentum(0.5).centered(true));
      }),
      f([](Groups g) { return std::make_unique<RMSprop>(g, RMSpropOptions(0.2)); }), "rmsprop.pt");
  ExpectResumesExactly(
      f([](Groups g) {
        return std::make_unique<optim::HfAdamW>(g, optim::HfAdamWOptions(0.01).weight_decay(0.1));
      }),
      f([](Groups g) { return std::make_unique<optim::HfAdamW>(g, optim::HfAdamWOptions(0.4)); }),
      "hf_adamw.pt");
  ExpectResumesExactly(
      f([](Groups g) {
        return std::make_unique<optim::Adafactor>(
            g, optim::AdafactorOptions(0.01).beta1(0.9).relative_step(false));
      }),
      f([](Groups g) { return std::make_unique<optim::Adafactor>(g, optim::AdafactorOptions()); }),
      "adafactor.pt");
}

TEST(OptimizerStateTest, AcceptsPythonSpellings) {
  // Python writes int weight decays, int steps for some optimizers, and maybe lists for betas;
  // a scheduler adds initial_lr.
  std::vector<at::Tensor> params = MakeParams();
  torch::optim::AdamW opt(GroupsOf(params));
  ASSERT_OK_AND_ASSIGN(c10::IValue sd, OptimizerStateDict(opt));
  auto groups = Get(sd, "param_groups").toList();
  for (size_t i = 0; i < groups.size(); ++i) {
    auto g = groups.get(i).toGenericDict();
    g.insert_or_assign("weight_decay", int64_t{0});
    g.insert_or_assign("betas", c10::List<double>({0.8, 0.9}));
    g.insert_or_assign("initial_lr", 0.001);
    g.insert_or_assign("differentiable", false);
  }
  c10::impl::GenericDict s(c10::StringType::get(), c10::AnyType::get());
  s.insert("step", int64_t{7});
  s.insert("exp_avg", at::ones({3}, at::kDouble));
  s.insert("exp_avg_sq", at::ones({3}, at::kDouble));
  Get(sd, "state").toGenericDict().insert(int64_t{1}, s);
  Get(sd, "state").toGenericDict().insert(int64_t{99}, s);  // no such parameter: ignored
  ASSERT_OK(LoadOptimizerStateDict(opt, sd));
  const auto& options =
      static_cast<const torch::optim::AdamWOptions&>(opt.param_groups()[1].options());
  EXPECT_EQ(options.weight_decay(), 0.0);
  EXPECT_EQ(std::get<0>(options.betas()), 0.8);
  const auto& state = static_cast<const torch::optim::AdamWParamState&>(
      *opt.state().at(optim::ParamStateKey(params[1])));
  EXPECT_EQ(state.step(), 7);
  EXPECT_EQ(state.exp_avg().scalar_type(), at::kFloat);  // cast to the parameter's dtype
  EXPECT_EQ(opt.state().size(), 1u);
}

TEST(OptimizerStateTest, MismatchesAreReportedAndChangeNothing) {
  std::vector<at::Tensor> params = MakeParams();
  torch::optim::AdamW opt(GroupsOf(params), torch::optim::AdamWOptions(0.01));
  Step(opt, params, 0);
  ASSERT_OK_AND_ASSIGN(const c10::IValue good, OptimizerStateDict(opt));
  auto variant = [&](const std::function<void(c10::impl::GenericDict&)>& edit) {
    c10::IValue sd = torch::jit::pickle_load(torch::jit::pickle_save(good));  // deep copy
    c10::impl::GenericDict d = sd.toGenericDict();
    edit(d);
    return sd;
  };
  auto group = [](c10::impl::GenericDict& d, int i) {
    return d.at("param_groups").toList().get(i).toGenericDict();
  };
  auto expect = [&](const c10::IValue& sd, const std::string& message) {
    EXPECT_THAT(LoadOptimizerStateDict(opt, sd),
                StatusIs(absl::StatusCode::kInvalidArgument, Eq(message)));
  };
  expect(variant([](auto& d) {
           auto groups = d.at("param_groups").toList();
           groups.erase(groups.begin() + 1);
         }),
         "loaded state dict has a different number of parameter groups (1 in the file, 2 in the "
         "optimizer)");
  expect(variant([&](auto& d) {
           group(d, 1).insert_or_assign("params", c10::List<int64_t>({2, 3}));
         }),
         "loaded state dict contains a parameter group that doesn't match the size of "
         "optimizer's group (param_groups[1] has 2 parameters in the file, 1 in the optimizer)");
  expect(variant([&](auto& d) { group(d, 0).insert_or_assign("maximize", true); }),
         "param_groups[0][\"maximize\"] must be False: LibTorch's optimizers do not maximize");
  expect(variant([&](auto& d) { (void)group(d, 0).erase("betas"); }),
         "loading AdamW hyperparameters: param_groups[0][\"betas\"] is missing");
  expect(variant([&](auto& d) { group(d, 1).insert_or_assign("lr", "fast"); }),
         "loading AdamW hyperparameters: param_groups[1][\"lr\"] is a String, not a number");
  expect(variant([](auto& d) {
           d.at("state")
               .toGenericDict()
               .at(int64_t{0})
               .toGenericDict()
               .insert_or_assign("exp_avg", at::zeros({3, 2}));
         }),
         "loading AdamW state: state[0][\"exp_avg\"] has shape [3, 2] where [2, 3] is needed");
  expect(variant([](auto& d) {
           d.at("state")
               .toGenericDict()
               .at(int64_t{2})
               .toGenericDict()
               .insert_or_assign("momentum_buffer", at::zeros({4}));
         }),
         "loading AdamW state: state[2] has key \"momentum_buffer\", which LibTorch's optimizer "
         "cannot use (known: exp_avg, exp_avg_sq, max_exp_avg_sq, step)");
  expect(
      variant([](auto& d) {
        d.at("state").toGenericDict().at(int64_t{2}).toGenericDict().insert_or_assign("step", -1.5);
      }),
      "loading AdamW state: state[2][\"step\"] is not a step count (a non-negative integer, "
      "or a tensor holding one)");
  expect(variant([](auto& d) { (void)d.erase("state"); }), "optimizer state[\"state\"] is missing");
  expect(c10::IValue(int64_t{3}), "optimizer state is a Int, not a dict");
  // Nothing changed: lr and state are those of the step above.
  EXPECT_EQ(opt.param_groups()[0].options().get_lr(), 0.01);
  EXPECT_EQ(static_cast<const torch::optim::AdamWParamState&>(
                *opt.state().at(optim::ParamStateKey(params[0])))
                .step(),
            1);
}

TEST(OptimizerStateTest, UnknownOptimizerTypes) {
  struct MyOptions : torch::optim::OptimizerCloneableOptions<MyOptions> {
    double get_lr() const override { return 1; }
    void set_lr(double) override {}
  };
  struct MyOptimizer : torch::optim::Optimizer {
    explicit MyOptimizer(std::vector<at::Tensor> p)
        : Optimizer({torch::optim::OptimizerParamGroup(std::move(p))},
                    std::make_unique<MyOptions>()) {}
    at::Tensor step(LossClosure) override { return {}; }
  };
  MyOptimizer opt(MakeParams());
  EXPECT_THAT(OptimizerStateDict(opt).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       Eq("optimizer.pt supports the optimizers AdamW, Adam, SGD, Adagrad, "
                          "RMSprop, transformers.AdamW (adamw_hf), transformers.Adafactor "
                          "(adafactor); this optimizer's options are of another type")));
  EXPECT_THAT(SaveOptimizerState(TempPath("my.pt"), opt),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("writing ")));
}

}  // namespace
}  // namespace loom::checkpoint
