// DefaultFlowCallback / EarlyStoppingCallback / PrinterCallback / ProgressCallback against the
// rules of transformers 4.41 trainer_callback.py.
#include "trainer/flow_callbacks.h"

#include <sstream>

#include "args/training_args.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::trainer {
namespace {

using ::loom::base::testing::StatusIs;
using ::testing::HasSubstr;

args::TrainingArguments Args(const std::function<void(args::TrainingArguments*)>& set) {
  args::TrainingArguments a;
  a.set_output_dir("out");
  set(&a);
  args::PostInitOptions options;
  options.hostname = "host";
  EXPECT_OK(args::PostInit(&a, options).status());
  return a;
}

// Runs DefaultFlowCallback.on_step_end for steps 1..max_steps with the handler's resets and
// returns, per step, which flags were raised ("L", "E", "S", "T").
std::vector<std::string> StepFlags(const args::TrainingArguments& a, TrainerState state) {
  CallbackHandler handler({std::make_shared<DefaultFlowCallback>()});
  TrainerControl control;
  std::vector<std::string> flags;
  for (int64_t step = 1; step <= state.max_steps; ++step) {
    EXPECT_OK(handler.OnStepBegin(a, state, control));
    state.global_step = step;
    EXPECT_OK(handler.OnStepEnd(a, state, control));
    std::string f;
    if (control.should_log) f += "L";
    if (control.should_evaluate) f += "E";
    if (control.should_save) f += "S";
    if (control.should_training_stop) f += "T";
    flags.push_back(f);
  }
  return flags;
}

TEST(DefaultFlowCallbackTest, StepsStrategies) {
  auto a = Args([](auto* a) {
    a->set_logging_steps(2);
    a->set_eval_strategy("steps");
    a->set_eval_steps(3);
    a->set_save_steps(4);
  });
  TrainerState s;
  s.max_steps = 7;
  s.logging_steps = 2;
  s.eval_steps = 3;
  s.save_steps = 4;
  EXPECT_THAT(StepFlags(a, s), ::testing::ElementsAre("", "L", "E", "LS", "", "LE", "ST"));
}

TEST(DefaultFlowCallbackTest, FirstStepAndEvalDelay) {
  auto a = Args([](auto* a) {
    a->set_logging_first_step(true);
    a->set_logging_steps(10);
    a->set_eval_strategy("steps");
    a->set_eval_steps(1);
    a->set_eval_delay(3);
    a->set_save_strategy("no");
  });
  TrainerState s;
  s.max_steps = 4;
  s.logging_steps = 10;
  s.eval_steps = 1;
  EXPECT_THAT(StepFlags(a, s), ::testing::ElementsAre("L", "", "E", "ET"));
}

TEST(DefaultFlowCallbackTest, EpochStrategiesActAtEpochEndOnly) {
  auto a = Args([](auto* a) {
    a->set_logging_strategy("epoch");
    a->set_eval_strategy("epoch");
    a->set_save_strategy("epoch");
    a->set_eval_delay(2);
  });
  TrainerState s;
  s.max_steps = 3;
  // No step flags except the stop at max_steps (no final save: epoch end saves it).
  EXPECT_THAT(StepFlags(a, s), ::testing::ElementsAre("", "", "T"));
  CallbackHandler handler({std::make_shared<DefaultFlowCallback>()});
  TrainerControl c;
  s.epoch = 1.0;
  ASSERT_OK(handler.OnEpochEnd(a, s, c));
  EXPECT_TRUE(c.should_log && c.should_save);
  EXPECT_FALSE(c.should_evaluate);  // epoch 1 < eval_delay 2
  s.epoch = 2.0;
  ASSERT_OK(handler.OnEpochEnd(a, s, c));
  EXPECT_TRUE(c.should_evaluate);
}

TEST(DefaultFlowCallbackTest, NoStrategiesOnlyStop) {
  auto a = Args([](auto* a) {
    a->set_logging_strategy("no");
    a->set_save_strategy("no");
  });
  TrainerState s;
  s.max_steps = 2;
  s.logging_steps = 1;
  s.save_steps = 1;
  EXPECT_THAT(StepFlags(a, s), ::testing::ElementsAre("", "T"));
}

TEST(EarlyStoppingCallbackTest, RequiresBestModelSettings) {
  EarlyStoppingCallback cb(2);
  TrainerState s;
  TrainerControl c;
  CallbackContext ctx;
  auto a = Args([](auto*) {});
  EXPECT_THAT(
      cb.OnTrainBegin(Event{a, s, c, ctx}),
      StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("--load_best_model_at_end")));
}

TEST(EarlyStoppingCallbackTest, PatienceAndThreshold) {
  auto a = Args([](auto* a) {
    a->set_eval_strategy("steps");
    a->set_save_strategy("steps");
    a->set_load_best_model_at_end(true);
    a->set_metric_for_best_model("loss");
  });
  ASSERT_FALSE(a.greater_is_better());
  EarlyStoppingCallback cb(/*patience=*/2, /*threshold=*/0.01);
  TrainerState s;
  TrainerControl c;
  CallbackContext ctx;
  ASSERT_OK(cb.OnTrainBegin(Event{a, s, c, ctx}));
  auto evaluate = [&](double loss) {
    Metrics m = Metrics::object();
    m["eval_loss"] = loss;
    Event e{a, s, c, ctx};
    e.metrics = &m;
    EXPECT_OK(cb.OnEvaluate(e));
  };
  evaluate(1.0);  // best_metric unset: improvement
  EXPECT_EQ(cb.patience_counter(), 0);
  s.best_metric = 1.0;
  evaluate(0.995);  // better, but not by more than the threshold
  EXPECT_EQ(cb.patience_counter(), 1);
  EXPECT_FALSE(c.should_training_stop);
  evaluate(0.9);  // better by 0.1: reset
  EXPECT_EQ(cb.patience_counter(), 0);
  s.best_metric = 0.9;
  evaluate(0.95);
  evaluate(0.91);
  EXPECT_EQ(cb.patience_counter(), 2);
  EXPECT_TRUE(c.should_training_stop);
}

TEST(PrinterCallbackTest, PrintsPythonDictWithoutTotalFlos) {
  std::ostringstream out;
  PrinterCallback cb(&out);
  auto a = Args([](auto*) {});
  TrainerState s;
  TrainerControl c;
  CallbackContext ctx;
  Metrics logs = Metrics::object();
  logs["loss"] = 0.5;
  logs["total_flos"] = 10.0;
  logs["epoch"] = 1.0;
  Event e{a, s, c, ctx};
  e.logs = &logs;
  ASSERT_OK(cb.OnLog(e));
  EXPECT_EQ(out.str(), "{'loss': 0.5, 'epoch': 1.0}\n");
}

TEST(ProgressCallbackTest, TrainingBarAndLogsOnPlainOutput) {
  std::ostringstream out;
  logging::ProgressOptions options;
  options.out = &out;
  options.is_tty = false;
  double now = 0;
  options.clock = [&now] { return now; };
  ProgressCallback cb(options);
  auto a = Args([](auto*) {});
  TrainerState s;
  s.max_steps = 2;
  TrainerControl c;
  CallbackContext ctx;
  ASSERT_OK(cb.OnTrainBegin(Event{a, s, c, ctx}));
  now = 1;
  s.global_step = 1;
  ASSERT_OK(cb.OnStepEnd(Event{a, s, c, ctx}));
  Metrics logs = Metrics::object();
  logs["loss"] = 0.25;
  Event e{a, s, c, ctx};
  e.logs = &logs;
  ASSERT_OK(cb.OnLog(e));
  now = 2;
  s.global_step = 2;
  ASSERT_OK(cb.OnStepEnd(Event{a, s, c, ctx}));
  ASSERT_OK(cb.OnTrainEnd(Event{a, s, c, ctx}));
  EXPECT_THAT(out.str(), HasSubstr("{'loss': 0.25}\n"));
  EXPECT_THAT(out.str(), HasSubstr("2/2 [00:02<00:00"));
}

TEST(CallbackHandlerTest, ErrorsNameCallbackAndEventAndPopByTypeOrInstance) {
  struct Failing : TrainerCallback {
    std::string Name() const override { return "Failing"; }
    absl::Status OnSave(const Event&) override { return absl::InternalError("disk full"); }
  };
  auto flow = std::make_shared<DefaultFlowCallback>();
  auto failing = std::make_shared<Failing>();
  CallbackHandler handler({flow, failing});
  EXPECT_EQ(handler.CallbackList(), "DefaultFlowCallback\nFailing");
  auto a = Args([](auto*) {});
  TrainerState s;
  TrainerControl c;
  c.should_save = true;
  EXPECT_THAT(handler.OnSave(a, s, c),
              StatusIs(absl::StatusCode::kInternal, HasSubstr("Failing.on_save: disk full")));
  EXPECT_FALSE(c.should_save);  // reset before the callbacks run, as HF does
  EXPECT_EQ(handler.PopCallback<EarlyStoppingCallback>(), nullptr);
  EXPECT_EQ(handler.PopCallback<DefaultFlowCallback>(), flow);
  EXPECT_EQ(handler.PopCallback(failing.get()), failing);
  EXPECT_EQ(handler.PopCallback(failing.get()), nullptr);
  EXPECT_TRUE(handler.callbacks().empty());
}

}  // namespace
}  // namespace loom::trainer
