#include "sharding/create_strategy.h"

#include <torch/nn/module.h>
#include <torch/optim/adamw.h>

#include <type_traits>

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "modeling/testing_models.h"
#include "sharding/replicated.h"

namespace loom::sharding {
namespace {

using ::loom::base::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;
using LinearLayer = ::loom::modeling::testing::LinearLayer;

struct Pieces {
  std::shared_ptr<LinearLayer> model = std::make_shared<LinearLayer>(3, 2);
  torch::optim::AdamW optimizer{model->parameters(), torch::optim::AdamWOptions(0.1)};
  std::unique_ptr<precision::TrainingPrecision> precision =
      *precision::TrainingPrecision::Create(precision::PrecisionPolicy{});

  absl::StatusOr<std::unique_ptr<ShardingStrategy>> Create(const args::TrainingArguments& args) {
    return CreateStrategy(StrategyOptions()
                              .set_args(&args)
                              .set_model(model.get())
                              .set_optimizer(&optimizer)
                              .set_precision(precision.get()));
  }
};

TEST(CreateStrategyTest, OneProcessWithoutAGroup) {
  Pieces p;
  ASSERT_OK_AND_ASSIGN(auto strategy, p.Create(args::TrainingArguments()));
  EXPECT_EQ(strategy->Name(), "single process");
  EXPECT_FALSE(strategy->OwnsOptimizerState());  // HF's optimizer.pt holds it
  args::TrainingArguments stage0;
  stage0.set_deepspeed(R"({"zero_optimization": {"stage": 0}})");
  ASSERT_OK_AND_ASSIGN(strategy, p.Create(stage0));
  EXPECT_EQ(strategy->Name(), "single process");
}

TEST(CreateStrategyTest, DeepSpeedStagesOneAndTwoAreZero) {
  for (int stage : {1, 2}) {
    Pieces p;
    args::TrainingArguments args;
    args.set_deepspeed(absl::StrCat(R"({"zero_optimization": {"stage": )", stage, "}}"));
    ASSERT_OK_AND_ASSIGN(auto strategy, p.Create(args));
    EXPECT_EQ(strategy->Name(), absl::StrCat("ZeRO-", stage));
    EXPECT_TRUE(strategy->OwnsOptimizerState());  // DeepSpeed's global_stepN/ files
    // The optimizer now steps on the partition: one fp32 tensor of the padded flat size (8
    // parameters of the Linear(3, 2), padded to a multiple of 2).
    ASSERT_EQ(p.optimizer.param_groups().size(), 1u);
    ASSERT_EQ(p.optimizer.param_groups()[0].params().size(), 1u);
    EXPECT_EQ(p.optimizer.param_groups()[0].params()[0].numel(), 8);
    // A second strategy over the already partitioned optimizer is refused.
    EXPECT_THAT(p.Create(args).status(), StatusIs(absl::StatusCode::kInvalidArgument,
                                                  HasSubstr("not a parameter of the model")));
  }
  Pieces bf16;
  precision::PrecisionPolicy policy;
  policy.mode = precision::PrecisionMode::kAutocast;
  policy.compute_dtype = at::kBFloat16;
  policy.autocast = precision::AutocastSpec{at::kCPU, at::kBFloat16};
  bf16.precision = *precision::TrainingPrecision::Create(policy);
  args::TrainingArguments args;
  args.set_deepspeed(R"({"zero_optimization": {"stage": 2}})");
  EXPECT_THAT(bf16.Create(args).status(),
              StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("ZeRO stage 2 with")));
}

// An empty group (a model without biases has no no-decay parameters) and a frozen parameter
// inside a group: both stay out of the partitions; the frozen one never moves.
TEST(ZeroStrategyTest, EmptyGroupsAndFrozenParameters) {
  auto model = std::make_shared<LinearLayer>(3, 2);
  model->weight.set_requires_grad(false);
  const at::Tensor frozen_before = model->weight.detach().clone();
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(std::vector<at::Tensor>{model->weight, model->bias});
  groups.emplace_back(std::vector<at::Tensor>{});
  torch::optim::AdamW optimizer(groups, torch::optim::AdamWOptions(0.1).weight_decay(0.5));
  auto precision = *precision::TrainingPrecision::Create(precision::PrecisionPolicy{});
  args::TrainingArguments args;
  args.set_deepspeed(R"({"zero_optimization": {"stage": 2}})");
  ASSERT_OK_AND_ASSIGN(auto strategy, CreateStrategy(StrategyOptions()
                                                         .set_args(&args)
                                                         .set_model(model.get())
                                                         .set_optimizer(&optimizer)
                                                         .set_precision(precision.get())));
  ASSERT_EQ(optimizer.param_groups()[0].params().size(), 1u);
  EXPECT_EQ(optimizer.param_groups()[0].params()[0].numel(), 2);  // the bias, padded to 2
  EXPECT_TRUE(optimizer.param_groups()[1].params().empty());
  const at::Tensor bias_before = model->bias.detach().clone();
  ASSERT_OK(strategy->BeforeForward(true));
  model->forward(torch::ones({4, 3})).sum().backward();
  ASSERT_OK(strategy->AfterBackward());
  ASSERT_OK(strategy->ClipGradients(1.0).status());
  ASSERT_OK(strategy->OptimizerStep().status());
  strategy->ZeroGrad();
  EXPECT_TRUE(at::equal(model->weight, frozen_before));
  EXPECT_FALSE(at::equal(model->bias, bias_before));
}

// A refused optimizer is left as it was: the checks come before any change.
TEST(ZeroStrategyTest, ARefusalChangesNothing) {
  Pieces p;
  const at::Tensor stranger = torch::zeros({3}, torch::requires_grad());
  p.optimizer.add_param_group(torch::optim::OptimizerParamGroup({stranger}));
  const void* weight_impl = p.model->weight.unsafeGetTensorImpl();
  const void* weight_data = p.model->weight.data_ptr();
  args::TrainingArguments args;
  args.set_deepspeed(R"({"zero_optimization": {"stage": 1}})");
  EXPECT_THAT(p.Create(args).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("parameter group 1")));
  EXPECT_EQ(p.optimizer.param_groups()[0].params()[0].unsafeGetTensorImpl(), weight_impl);
  EXPECT_EQ(p.model->weight.data_ptr(), weight_data);
  EXPECT_FALSE(p.model->weight.grad().defined());
}

// Strategies that shard parameters run the model's declared units, so the model is typed as
// a loom model: a plain torch module is refused when the program compiles.
template <typename T, typename = void>
constexpr bool kTakesModel = false;
template <typename T>
constexpr bool kTakesModel<T, std::void_t<decltype(StrategyOptions().set_model(
                                  std::declval<T*>()))>> = true;
static_assert(kTakesModel<modeling::Model>);
static_assert(kTakesModel<LinearLayer>);
static_assert(!kTakesModel<torch::nn::Module>);

TEST(CreateStrategyTest, ParameterShardingNeedsDeclaredUnits) {
  Pieces p;  // a loom model that declares no layers to wrap
  args::TrainingArguments args;
  args.set_deepspeed(R"({"zero_optimization": {"stage": 3}})");
  EXPECT_THAT(p.Create(args).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("ZeRO-3"), HasSubstr("layer class to wrap"),
                             HasSubstr("LinearLayer"))));
}

// HF's --fsdp errors (transformers 4.41 TrainingArguments.__post_init__ / Trainer.__init__).
TEST(CreateStrategyTest, FsdpRules) {
  Pieces p;
  args::TrainingArguments fsdp;
  fsdp.add_fsdp("full_shard");
  // HF refuses --fsdp outside distributed training; loom trains FSDP over one rank. The model
  // must declare its layers (or auto_wrap be off): LinearLayer runs as one unit.
  ASSERT_OK_AND_ASSIGN(auto one_rank, p.Create(fsdp));
  EXPECT_EQ(one_rank->Name(), "FSDP full_shard");
  EXPECT_EQ(one_rank->Topology().world_size, 1);
  EXPECT_TRUE(one_rank->Capabilities().shards_parameters);
  args::TrainingArguments both = fsdp;
  both.set_deepspeed(R"({"zero_optimization": {"stage": 2}})");
  EXPECT_THAT(CheckFsdp(both),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("Using --fsdp xxx together with --deepspeed is not possible, "
                                 "deactivate one of those flags.")));
  args::TrainingArguments hybrid;
  hybrid.add_fsdp("hybrid_shard");
  EXPECT_OK(CheckFsdp(hybrid));
  args::TrainingArguments cpu_ram = fsdp;
  cpu_ram.set_fsdp_config(R"({"cpu_ram_efficient_loading": true})");
  EXPECT_OK(CheckFsdp(cpu_ram));
  EXPECT_OK(CheckFsdp(fsdp));
  EXPECT_OK(CheckFsdp(args::TrainingArguments()));
}

TEST(CreateStrategyTest, AConfigThatDoesNotLoadNamesTheFlag) {
  Pieces p;
  args::TrainingArguments args;
  args.set_deepspeed("{bad");
  EXPECT_THAT(std::string(p.Create(args).status().message()), HasSubstr("--deepspeed"));
  args.set_deepspeed("/nonexistent/ds_config.json");
  EXPECT_THAT(std::string(p.Create(args).status().message()), HasSubstr("--deepspeed"));
  args.set_deepspeed(R"({"zero_optimization": {"stage": 5}})");
  EXPECT_THAT(std::string(p.Create(args).status().message()), HasSubstr("stage"));
}

// One process, fp32 AdamW after a step: 4 bytes per parameter, 4 per gradient, AdamW's two
// moments (8 per trainable element) plus its step scalar per tensor.
TEST(ReplicatedStrategyTest, StateBytesAreTheTensorsHeld) {
  Pieces p;
  ASSERT_OK_AND_ASSIGN(auto strategy, p.Create(args::TrainingArguments()));
  EXPECT_EQ(strategy->StateBytes().optimizer_states, 0);
  ASSERT_OK(strategy->BeforeForward(true));
  p.model->forward(torch::ones({4, 3})).sum().backward();
  ASSERT_OK(strategy->AfterBackward());
  ASSERT_OK_AND_ASSIGN(std::optional<double> norm, strategy->ClipGradients(0));
  EXPECT_FALSE(norm.has_value());
  ASSERT_OK_AND_ASSIGN(bool stepped, strategy->OptimizerStep());
  EXPECT_TRUE(stepped);
  const ModelStateBytes b = strategy->StateBytes();
  EXPECT_EQ(b.parameters, 4 * 8);
  EXPECT_EQ(b.gradients, 4 * 8);
  EXPECT_GE(b.optimizer_states, 8 * 8);
  EXPECT_LE(b.optimizer_states, 8 * 8 + 2 * 8);
  EXPECT_EQ(b.master_weights, 0);
  EXPECT_THAT(b.Describe(), HasSubstr("parameters 32 B, gradients 32 B"));
  strategy->ZeroGrad();
  // Module::zero_grad's default, as Python's: zeros in torch 1.13, None (undefined) in 2.x.
  const at::Tensor grad = p.model->weight.grad();
  EXPECT_TRUE(!grad.defined() || grad.abs().sum().item<float>() == 0.0f);
}

}  // namespace
}  // namespace loom::sharding
