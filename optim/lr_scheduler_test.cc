// LrScheduler semantics, CreateScheduler's errors and warnings, and the torch-compatible
// state dicts. Whole-run parity with Python is in //tests/optim:scheduler_golden_test.
#include "optim/lr_scheduler.h"

#include <torch/optim/sgd.h>

#include <cmath>
#include <limits>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "base/status_matchers.h"
#include "base/torch_compat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "optim/lr_lambdas.h"

namespace loom::optim {
namespace {

using ::loom::base::testing::StatusIs;
using ::testing::AllOf;
using ::testing::DoubleEq;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Pointwise;

// Two groups: lr 0.1 (= the defaults' lr, i.e. --learning_rate) and 0.2.
std::unique_ptr<torch::optim::SGD> TwoGroupSgd() {
  std::vector<torch::optim::OptimizerParamGroup> groups;
  for (double lr : {0.1, 0.2}) {
    groups.emplace_back(std::vector<at::Tensor>{at::zeros({1})},
                        std::make_unique<torch::optim::SGDOptions>(lr));
  }
  return std::make_unique<torch::optim::SGD>(std::move(groups), torch::optim::SGDOptions(0.1));
}

args::TrainingArguments Args(const std::string& type, const std::string& kwargs = "{}") {
  args::TrainingArguments a;
  a.set_learning_rate(0.1);
  a.set_lr_scheduler_type(type);
  a.set_lr_scheduler_kwargs(kwargs);
  return a;
}

absl::Status CreateStatus(const args::TrainingArguments& a, int64_t total = 10) {
  auto optimizer = TwoGroupSgd();
  return CreateScheduler(a, optimizer.get(), total).status();
}

TEST(LambdaLrSchedulerTest, TorchLambdaLrSemantics) {
  auto optimizer = TwoGroupSgd();
  LambdaLrScheduler scheduler(optimizer.get(), [](int64_t s) { return 1.0 / (s + 1); });
  // Construction: base_lrs recorded, lr = base * λ(0), last_epoch 0, one step counted.
  EXPECT_THAT(scheduler.base_lrs(), ElementsAre(0.1, 0.2));
  EXPECT_THAT(GroupLrs(*optimizer), ElementsAre(0.1, 0.2));
  EXPECT_EQ(scheduler.last_epoch(), 0);
  EXPECT_EQ(scheduler.step_count(), 1);
  scheduler.Step();
  scheduler.Step();
  EXPECT_THAT(GroupLrs(*optimizer), ElementsAre(DoubleEq(0.1 / 3), DoubleEq(0.2 / 3)));
  EXPECT_EQ(scheduler.LastLr(), GroupLrs(*optimizer));
  EXPECT_EQ(scheduler.last_epoch(), 2);
  EXPECT_EQ(scheduler.step_count(), 3);
  EXPECT_FALSE(scheduler.steps_on_metric());
  scheduler.StepOnMetric(1.0);  // ignored by λ schedules
  EXPECT_EQ(scheduler.last_epoch(), 2);
}

// transformers 4.38 `get_linear_schedule_with_warmup` under `Trainer._inner_training_loop`:
// with warmup the first optimizer step runs with lr 0, and the
// lr logged after step k is the one step k+1 will use.
TEST(CreateSchedulerTest, LinearWarmupFromTrainingArguments) {
  auto optimizer = TwoGroupSgd();
  args::TrainingArguments a = Args("linear");
  a.set_warmup_ratio(0.25);  // ceil(0.25 * 10) = 3 warmup steps
  ASSERT_OK_AND_ASSIGN(auto scheduler, CreateScheduler(a, optimizer.get(), 10));
  std::vector<double> group0;
  for (int k = 0; k <= 11; ++k) {
    group0.push_back(GroupLrs(*optimizer)[0]);
    scheduler->Step();
  }
  const double lr = 0.1;
  EXPECT_THAT(group0,
              Pointwise(DoubleEq(), {0.0, lr / 3, lr * 2 / 3, lr, lr * 6 / 7, lr * 5 / 7,
                                     lr * 4 / 7, lr * 3 / 7, lr * 2 / 7, lr / 7, 0.0, 0.0}));
  a.set_warmup_steps(1);  // overrides the ratio
  optimizer = TwoGroupSgd();
  ASSERT_OK_AND_ASSIGN(scheduler, CreateScheduler(a, optimizer.get(), 10));
  scheduler->Step();
  EXPECT_EQ(GroupLrs(*optimizer)[0], 0.1);
}

// transformers.get_scheduler("linear", optimizer, num_warmup_steps=2, num_training_steps=4).
TEST(CreateSchedulerTest, GetSchedulerIsHfsGetScheduler) {
  auto optimizer = TwoGroupSgd();
  ASSERT_OK_AND_ASSIGN(auto scheduler, GetScheduler("linear", optimizer.get(), 2, 4));
  std::vector<double> group0;
  for (int k = 0; k <= 4; ++k) {
    group0.push_back(GroupLrs(*optimizer)[0]);
    scheduler->Step();
  }
  EXPECT_THAT(group0, Pointwise(DoubleEq(), {0.0, 0.05, 0.1, 0.05, 0.0}));
  EXPECT_FALSE(GetScheduler("sideways", optimizer.get(), 0, 4).ok());
}

TEST(CreateSchedulerTest, PolynomialUsesTheDefaultsLrForBothGroups) {
  auto optimizer = TwoGroupSgd();
  ASSERT_OK_AND_ASSIGN(auto scheduler, CreateScheduler(Args("polynomial", R"({"lr_end": 0.01})"),
                                                       optimizer.get(), 4));
  for (int k = 0; k < 4; ++k) scheduler->Step();
  // λ(4) = lr_end / lr_init = 0.1 for both groups (lr_init is the defaults' 0.1).
  EXPECT_THAT(GroupLrs(*optimizer), ElementsAre(DoubleEq(0.01), DoubleEq(0.02)));
}

TEST(CreateSchedulerTest, ReduceLrOnPlateauStepsOnMetricsOnly) {
  auto optimizer = TwoGroupSgd();
  ASSERT_OK_AND_ASSIGN(auto scheduler, CreateScheduler(Args("reduce_lr_on_plateau",
                                                            R"({"patience": 1, "factor": 0.5})"),
                                                       optimizer.get(), 10));
  EXPECT_TRUE(scheduler->steps_on_metric());
  scheduler->Step();
  EXPECT_THAT(scheduler->LastLr(), ElementsAre(0.1, 0.2));
  scheduler->StepOnMetric(1.0);  // best
  scheduler->StepOnMetric(1.0);  // 1 bad epoch (not better by the 1e-4 relative threshold)
  EXPECT_THAT(scheduler->LastLr(), ElementsAre(0.1, 0.2));
  scheduler->StepOnMetric(1.0);  // 2 > patience: halve
  EXPECT_THAT(scheduler->LastLr(), ElementsAre(0.05, 0.1));
  EXPECT_EQ(scheduler->last_epoch(), 3);
}

TEST(CreateSchedulerTest, UnknownTypeListsTheTypes) {
  EXPECT_THAT(CreateStatus(Args("cosine_annealing")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("--lr_scheduler_type cosine_annealing"),
                             HasSubstr("linear, cosine, cosine_with_restarts, polynomial, "
                                       "constant, constant_with_warmup, inverse_sqrt, "
                                       "reduce_lr_on_plateau, cosine_with_min_lr, "
                                       "warmup_stable_decay"))));
}

TEST(CreateSchedulerTest, KwargsMustBeAJsonObject) {
  for (const std::string bad : {"{", "[1, 2]", "3", "\"x\"", "{'a': 1}"}) {
    EXPECT_THAT(
        CreateStatus(Args("cosine", bad)),
        StatusIs(absl::StatusCode::kInvalidArgument,
                 AllOf(HasSubstr("--lr_scheduler_kwargs must be a JSON object"), HasSubstr(bad))))
        << bad;
  }
  EXPECT_OK(CreateStatus(Args("cosine", "")));  // unset = {}
}

TEST(CreateSchedulerTest, UnknownKeysAndBadValuesNameTheFlagAndKey) {
  EXPECT_THAT(CreateStatus(Args("cosine", R"({"num_cycle": 2})")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("--lr_scheduler_kwargs"), HasSubstr("\"num_cycle\""),
                             HasSubstr("num_cycles, last_epoch"))));
  EXPECT_THAT(CreateStatus(Args("linear", R"({"num_warmup_steps": 2})")),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("\"num_warmup_steps\"")));
  EXPECT_THAT(CreateStatus(Args("cosine", R"({"num_cycles": "2"})")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("\"num_cycles\" must be a number"), HasSubstr("cosine"))));
  EXPECT_THAT(
      CreateStatus(Args("reduce_lr_on_plateau", R"({"patience": 1.5})")),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("\"patience\" must be an integer")));
  EXPECT_THAT(CreateStatus(Args("linear", R"({"last_epoch": 3})")),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("\"last_epoch\"")));
  EXPECT_OK(CreateStatus(Args("linear", R"({"last_epoch": -1})")));
}

TEST(CreateSchedulerTest, TypeSpecificRules) {
  EXPECT_THAT(CreateStatus(Args("warmup_stable_decay", R"({"num_stable_steps": 5})")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("num_stable_steps and num_decay_steps"),
                             HasSubstr("--lr_scheduler_kwargs"))));
  EXPECT_THAT(CreateStatus(Args("polynomial", R"({"lr_end": 0.1})")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("lr_end (0.1) must be smaller than the initial lr (0.1"),
                             HasSubstr("--learning_rate"))));
  args::TrainingArguments all_warmup = Args("polynomial");
  all_warmup.set_warmup_steps(10);
  EXPECT_THAT(CreateStatus(all_warmup, 10),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--warmup_steps")));
  EXPECT_THAT(CreateStatus(Args("cosine_with_min_lr")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("needs min_lr or min_lr_rate in --lr_scheduler_kwargs")));
  EXPECT_THAT(CreateStatus(Args("cosine_with_min_lr", R"({"min_lr": 0.01, "min_lr_rate": 0.1})")),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("only one of min_lr")));
  EXPECT_OK(CreateStatus(Args("cosine_with_min_lr", R"({"min_lr": null, "min_lr_rate": 0.1})")));
  EXPECT_THAT(CreateStatus(Args("reduce_lr_on_plateau", R"({"factor": 1.0})")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("--lr_scheduler_kwargs"), HasSubstr("factor 1"))));
  EXPECT_THAT(CreateStatus(Args("reduce_lr_on_plateau", R"({"mode": "avg"})")),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("mode \"avg\"")));
  EXPECT_THAT(CreateStatus(Args("reduce_lr_on_plateau", R"({"threshold_mode": "x"})")),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("threshold_mode \"x\"")));
  EXPECT_THAT(CreateStatus(Args("reduce_lr_on_plateau", R"({"min_lr": [0.1]})")),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("expected 2 min_lrs, got 1")));
}

TEST(CreateSchedulerTest, KwargsHfIgnoresGiveAWarning) {
  for (const std::string type : {"constant", "constant_with_warmup", "inverse_sqrt"}) {
    auto optimizer = TwoGroupSgd();
    std::vector<std::string> warnings;
    ASSERT_OK(CreateScheduler(Args(type, R"({"timescale": 5})"), optimizer.get(), 10, &warnings)
                  .status());
    EXPECT_THAT(warnings, ElementsAre(AllOf(HasSubstr("--lr_scheduler_kwargs {\"timescale\":5}"),
                                            HasSubstr("ignored"), HasSubstr(type))));
    warnings.clear();
    ASSERT_OK(CreateScheduler(Args(type), optimizer.get(), 10, &warnings).status());
    EXPECT_THAT(warnings, IsEmpty());
  }
}

TEST(CreateSchedulerTest, NeedsAnOptimizer) {
  EXPECT_THAT(CreateScheduler(Args("linear"), nullptr, 10),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("create it first")));
}

// ---- state dicts ----

c10::IValue Entry(const c10::IValue& state, const std::string& key) {
  return state.toGenericDict().at(c10::IValue(key));
}

std::vector<std::string> Keys(const c10::IValue& state) {
  std::vector<std::string> keys;
  for (const auto& item : state.toGenericDict()) keys.push_back(item.key().toStringRef());
  return keys;
}

TEST(StateDictTest, LambdaLrHasTorchKeysAndValues) {
  auto optimizer = TwoGroupSgd();
  ASSERT_OK_AND_ASSIGN(auto scheduler, CreateScheduler(Args("linear"), optimizer.get(), 10));
  scheduler->Step();
  const c10::IValue state = scheduler->StateDict();
  if (LOOM_TORCH_AT_LEAST(2, 11)) {  // torch 2.11's LRScheduler.state_dict()
    EXPECT_THAT(Keys(state),
                ElementsAre("base_lrs", "last_epoch", "_step_count", "_is_initial",
                            "_get_lr_called_within_step", "_last_lr", "lr_lambdas"));
    EXPECT_FALSE(Entry(state, "_is_initial").toBool());
  } else {  // torch 1.13's
    EXPECT_THAT(Keys(state), ElementsAre("base_lrs", "last_epoch", "verbose", "_step_count",
                                         "_get_lr_called_within_step", "_last_lr", "lr_lambdas"));
    EXPECT_FALSE(Entry(state, "verbose").toBool());
  }
  EXPECT_EQ(Entry(state, "base_lrs").toDoubleVector(), std::vector<double>({0.1, 0.2}));
  EXPECT_EQ(Entry(state, "last_epoch").toInt(), 1);
  EXPECT_EQ(Entry(state, "_step_count").toInt(), 2);
  EXPECT_EQ(Entry(state, "_last_lr").toDoubleVector(), GroupLrs(*optimizer));
  // functools.partial lambdas are saved as {}, the plain function of "constant" as None.
  const auto lambdas = Entry(state, "lr_lambdas").toListRef();
  ASSERT_EQ(lambdas.size(), 2u);
  EXPECT_TRUE(lambdas[0].isGenericDict());
  EXPECT_EQ(lambdas[0].toGenericDict().size(), 0u);
  ASSERT_OK_AND_ASSIGN(auto constant, CreateScheduler(Args("constant"), optimizer.get(), 10));
  EXPECT_TRUE(Entry(constant->StateDict(), "lr_lambdas").toListRef()[0].isNone());
}

TEST(StateDictTest, LambdaLrRoundTripContinuesTheSchedule) {
  auto reference_opt = TwoGroupSgd();
  ASSERT_OK_AND_ASSIGN(auto reference, CreateScheduler(Args("cosine"), reference_opt.get(), 10));
  for (int k = 0; k < 4; ++k) reference->Step();
  const c10::IValue saved = reference->StateDict();
  reference->Step();

  // A fresh scheduler (as after a restart) restores the schedule position.
  auto resumed_opt = TwoGroupSgd();
  ASSERT_OK_AND_ASSIGN(auto resumed, CreateScheduler(Args("cosine"), resumed_opt.get(), 10));
  ASSERT_OK(resumed->LoadStateDict(saved));
  EXPECT_EQ(resumed->last_epoch(), 4);
  resumed->Step();
  EXPECT_EQ(GroupLrs(*resumed_opt), GroupLrs(*reference_opt));
  EXPECT_EQ(resumed->LastLr(), reference->LastLr());
}

TEST(StateDictTest, ReduceLrOnPlateauRoundTrip) {
  const std::string kwargs = R"({"mode": "max", "patience": 0, "cooldown": 2, "min_lr": 0.01})";
  auto optimizer = TwoGroupSgd();
  ASSERT_OK_AND_ASSIGN(auto scheduler,
                       CreateScheduler(Args("reduce_lr_on_plateau", kwargs), optimizer.get(), 10));
  c10::IValue state = scheduler->StateDict();
  if (LOOM_TORCH_AT_LEAST(2, 11)) {  // torch 2.11's ReduceLROnPlateau.state_dict()
    EXPECT_THAT(Keys(state),
                ElementsAre("factor", "default_min_lr", "min_lrs", "patience", "cooldown", "eps",
                            "last_epoch", "_last_lr", "mode_worse", "mode", "threshold",
                            "threshold_mode", "best", "cooldown_counter", "num_bad_epochs"));
    EXPECT_EQ(Entry(state, "default_min_lr").toDouble(), 0.01);
  } else {  // torch 1.13's: _last_lr only after a step
    EXPECT_THAT(Keys(state),
                ElementsAre("factor", "min_lrs", "patience", "verbose", "cooldown",
                            "cooldown_counter", "mode", "threshold", "threshold_mode", "best",
                            "num_bad_epochs", "mode_worse", "eps", "last_epoch"));
  }
  EXPECT_EQ(Entry(state, "best").toDouble(), -std::numeric_limits<double>::infinity());
  scheduler->StepOnMetric(0.5);
  scheduler->StepOnMetric(0.4);  // worse in max mode: reduce, start the cooldown
  state = scheduler->StateDict();
  if (!LOOM_TORCH_AT_LEAST(2, 11)) {
    EXPECT_EQ(Keys(state).back(), "_last_lr");
  }
  EXPECT_EQ(Entry(state, "best").toDouble(), 0.5);
  EXPECT_EQ(Entry(state, "cooldown_counter").toInt(), 2);
  EXPECT_EQ(Entry(state, "mode").toStringRef(), "max");

  auto other_opt = TwoGroupSgd();
  ASSERT_OK_AND_ASSIGN(auto other,
                       CreateScheduler(Args("reduce_lr_on_plateau"), other_opt.get(), 10));
  ASSERT_OK(other->LoadStateDict(state));
  std::ostringstream restored, original;
  restored << other->StateDict();
  original << state;
  EXPECT_EQ(restored.str(), original.str());
}

// A file of the other torch layout loads too: torch 2.11's ReduceLROnPlateau state (no
// "verbose", "default_min_lr" None for a list of min_lrs) and torch 1.13's (no
// "default_min_lr": a min_lrs list of one value is that scalar).
TEST(StateDictTest, ReduceLrOnPlateauLoadsBothTorchLayouts) {
  auto optimizer = TwoGroupSgd();
  ASSERT_OK_AND_ASSIGN(auto scheduler,
                       CreateScheduler(Args("reduce_lr_on_plateau"), optimizer.get(), 10));
  c10::impl::GenericDict state = scheduler->StateDict().toGenericDict();
  (void)state.erase("verbose");  // absent in torch 2.11 layouts already
  state.insert_or_assign("default_min_lr", c10::IValue());
  c10::impl::GenericList min_lrs(c10::FloatType::get());
  min_lrs.push_back(0.01);
  min_lrs.push_back(0.02);
  state.insert_or_assign("min_lrs", min_lrs);
  ASSERT_OK(scheduler->LoadStateDict(state));
  auto* plateau = dynamic_cast<ReduceLrOnPlateau*>(scheduler.get());
  ASSERT_NE(plateau, nullptr);
  EXPECT_FALSE(plateau->options().default_min_lr.has_value());
  EXPECT_EQ(plateau->options().min_lrs, std::vector<double>({0.01, 0.02}));

  ASSERT_EQ(state.erase("default_min_lr"), 1u);
  min_lrs.set(1, 0.01);
  ASSERT_OK(scheduler->LoadStateDict(state));
  EXPECT_EQ(plateau->options().default_min_lr, 0.01);
}

TEST(StateDictTest, LoadRejectsMalformedState) {
  auto optimizer = TwoGroupSgd();
  ASSERT_OK_AND_ASSIGN(auto scheduler, CreateScheduler(Args("linear"), optimizer.get(), 10));
  EXPECT_THAT(scheduler->LoadStateDict(c10::IValue(3)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("must be a dict")));
  c10::IValue state = scheduler->StateDict();
  ASSERT_EQ(state.toGenericDict().erase("last_epoch"), 1u);
  EXPECT_THAT(scheduler->LoadStateDict(state),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'last_epoch' is missing")));
  state = scheduler->StateDict();
  state.toGenericDict().insert_or_assign("base_lrs", c10::List<double>({0.1}));
  EXPECT_THAT(scheduler->LoadStateDict(state),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("'base_lrs' has 1 entries but the optimizer has 2")));
  // Python writes whole-number lrs as ints; they load as numbers.
  state = scheduler->StateDict();
  c10::impl::GenericList ints(c10::AnyType::get());
  ints.push_back(c10::IValue(int64_t{1}));
  ints.push_back(c10::IValue(int64_t{2}));
  state.toGenericDict().insert_or_assign("base_lrs", ints);
  EXPECT_OK(scheduler->LoadStateDict(state));
}

}  // namespace
}  // namespace loom::optim
