// The Trainer fires HF's callback events in HF's order (transformers 4.38 _inner_training_loop,
// _maybe_log_save_evaluate, evaluate, predict; the `callbacks` argument of Trainer.__init__).
// A recording callback writes "event@global_step" for every event; the
// golden lists below are derived by hand from HF's loop, as follows.
//
// Run: 10 training examples in batches of 2 -> 5 micro-batches per epoch; GA 2; 2 epochs.
//   num_update_steps_per_epoch = 5 // 2 = 2, max_steps = ceil(2 * 2) = 4.
//   logging_steps 2, eval_strategy steps / eval_steps 2, save_strategy steps / save_steps 3;
//   5 eval examples in batches of 2 -> 3 prediction steps per evaluation.
// HF's loop, per micro-batch (`step` = index in the epoch, `total` = count across epochs):
//   - on_step_begin when step % GA == 0 (the index in the epoch, so after an odd-length epoch
//     the window that straddles the boundary gets a second on_step_begin);
//   - when total % GA == 0 (no short-epoch rule: 5 > GA): optimizer step, global_step += 1,
//     state.epoch = epoch + (step + 1) / 5, on_step_end, then _maybe_log_save_evaluate:
//       log (on_log) if should_log, then evaluate (on_prediction_step per eval batch, on_log of
//       the eval metrics, on_evaluate) if should_evaluate, then save (on_save) if should_save;
//   - otherwise on_substep_end;
//   - after the epoch: on_epoch_end, _maybe_log_save_evaluate (nothing left to do here: every
//     flag was consumed at the step; the handler clears should_log in on_log, should_evaluate
//     in on_evaluate, should_save in on_save, all three in on_step_begin).
// DefaultFlowCallback.on_step_end: should_log at global_step 2, 4; should_evaluate at 2, 4;
// should_save at 3; at global_step >= max_steps (4) should_training_stop and, loom's choice
// (trainer/flow_callbacks.h), should_save with the "steps" strategy, so step 4 also saves.
// should_training_stop ends the epoch loop after step 4 (micro-batch 3 of epoch 1); the
// epoch still ends (on_epoch_end); then the final metrics are logged (on_log) and
// on_train_end fires.
//
//   epoch 0: mb0 total 1: step_begin@0, substep_end@0
//            mb1 total 2: step_end@1
//            mb2 total 3: step_begin@1, substep_end@1
//            mb3 total 4: step_end@2, log@2, 3 x prediction_step@2, log@2 (eval), evaluate@2
//            mb4 total 5: step_begin@2 (4 % 2 == 0), substep_end@2
//            epoch_end@2
//   epoch 1: mb0 total 6: step_begin@2, step_end@3, save@3   (window: e0 mb4 + e1 mb0)
//            mb1 total 7: substep_end@3                      (1 % 2 != 0: no step_begin)
//            mb2 total 8: step_begin@3, step_end@4, log@4, 3 x prediction_step@4, log@4,
//                         evaluate@4, save@4 -> stop
//            epoch_end@4, log@4 (train metrics), train_end@4
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/trainer/test_util.h"
#include "tests/trainer/tiny_model.h"
#include "trainer/trainer.h"

namespace loom::trainer::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;

// Appends "event@global_step" per event; on_log also names what was logged (train step log,
// eval metrics or the final train metrics), on_step_end the epoch.
class RecordingCallback : public TrainerCallback {
 public:
  std::string Name() const override { return "RecordingCallback"; }
  absl::Status OnInitEnd(const Event& e) override { return Add("init_end", e); }
  absl::Status OnTrainBegin(const Event& e) override { return Add("train_begin", e); }
  absl::Status OnTrainEnd(const Event& e) override { return Add("train_end", e); }
  absl::Status OnEpochBegin(const Event& e) override { return Add("epoch_begin", e); }
  absl::Status OnEpochEnd(const Event& e) override { return Add("epoch_end", e); }
  absl::Status OnStepBegin(const Event& e) override { return Add("step_begin", e); }
  absl::Status OnSubstepEnd(const Event& e) override { return Add("substep_end", e); }
  absl::Status OnStepEnd(const Event& e) override {
    epochs.push_back(e.state.epoch.value_or(-1));
    return Add("step_end", e);
  }
  absl::Status OnEvaluate(const Event& e) override { return Add("evaluate", e); }
  absl::Status OnPredict(const Event& e) override { return Add("predict", e); }
  absl::Status OnSave(const Event& e) override { return Add("save", e); }
  absl::Status OnPredictionStep(const Event& e) override { return Add("prediction_step", e); }
  absl::Status OnLog(const Event& e) override {
    std::string what = "?";
    if (e.logs->contains("train_loss")) {
      what = "train_metrics";
    } else if (e.logs->contains("eval_loss")) {
      what = "eval";
    } else if (e.logs->contains("loss")) {
      what = "loss";
    } else if (e.logs->contains("test_loss")) {
      what = "test";
    }
    return Add(absl::StrCat("log(", what, ")"), e);
  }

  std::vector<std::string> events;
  std::vector<double> epochs;

 private:
  absl::Status Add(const std::string& name, const Event& e) {
    events.push_back(absl::StrCat(name, "@", e.state.global_step));
    return absl::OkStatus();
  }
};

class CallbackTraceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    out_dir_ = absl::StrCat(::testing::TempDir(), "/callback_trace");
    std::filesystem::remove_all(out_dir_);
    ASSERT_OK_AND_ASSIGN(args::TrainingArguments args,
                         ParseArgs({{"output_dir", out_dir_},
                                    {"per_device_train_batch_size", 2},
                                    {"per_device_eval_batch_size", 2},
                                    {"gradient_accumulation_steps", 2},
                                    {"num_train_epochs", 2},
                                    {"logging_steps", 2},
                                    {"eval_strategy", "steps"},
                                    {"eval_steps", 2},
                                    {"save_strategy", "steps"},
                                    {"save_steps", 3},
                                    {"learning_rate", 0.01},
                                    {"report_to", "none"},
                                    {"disable_tqdm", true}}));
    torch::manual_seed(0);
    TrainerOptions options;
    options.model = std::make_shared<TinyClassifier>();
    options.args = args;
    options.train_dataset = ClassificationDataset(10, /*seed=*/1);
    options.eval_dataset = ClassificationDataset(5, /*seed=*/2);
    options.callbacks.push_back(recorder_);
    ASSERT_OK_AND_ASSIGN(trainer_, Trainer::Create(std::move(options)));
  }

  std::string out_dir_;
  std::shared_ptr<RecordingCallback> recorder_ = std::make_shared<RecordingCallback>();
  std::unique_ptr<Trainer> trainer_;
};

TEST_F(CallbackTraceTest, TrainFiresHfEventsInOrder) {
  ASSERT_OK(trainer_->Train());
  const std::vector<std::string> eval_at_2 = {"prediction_step@2", "prediction_step@2",
                                              "prediction_step@2", "log(eval)@2", "evaluate@2"};
  const std::vector<std::string> eval_at_4 = {"prediction_step@4", "prediction_step@4",
                                              "prediction_step@4", "log(eval)@4", "evaluate@4"};
  std::vector<std::string> golden = {"init_end@0", "train_begin@0",
                                     // Epoch 0.
                                     "epoch_begin@0", "step_begin@0", "substep_end@0", "step_end@1",
                                     "step_begin@1", "substep_end@1", "step_end@2", "log(loss)@2"};
  golden.insert(golden.end(), eval_at_2.begin(), eval_at_2.end());
  golden.insert(golden.end(), {"step_begin@2", "substep_end@2", "epoch_end@2",
                               // Epoch 1.
                               "epoch_begin@2", "step_begin@2", "step_end@3", "save@3",
                               "substep_end@3", "step_begin@3", "step_end@4", "log(loss)@4"});
  golden.insert(golden.end(), eval_at_4.begin(), eval_at_4.end());
  golden.insert(golden.end(), {"save@4", "epoch_end@4", "log(train_metrics)@4", "train_end@4"});
  EXPECT_THAT(recorder_->events, ElementsAreArray(golden));
  // state.epoch at each step end: epoch + (micro-batch index + 1) / 5.
  EXPECT_THAT(recorder_->epochs, ElementsAre(0.4, 0.8, 1.2, 1.6));
  EXPECT_EQ(trainer_->state().global_step, 4);
  EXPECT_EQ(trainer_->state().max_steps, 4);
  // on_save came after the checkpoint folder was written.
  EXPECT_TRUE(std::filesystem::is_directory(out_dir_ + "/checkpoint-3"));
  EXPECT_TRUE(std::filesystem::is_directory(out_dir_ + "/checkpoint-4"));
  EXPECT_FALSE(std::filesystem::exists(out_dir_ + "/checkpoint-2"));
}

// Outside training: evaluate() = prediction steps, on_log of the metrics, on_evaluate;
// predict() = prediction steps, on_predict, and no on_log (HF's predict does not log).
TEST_F(CallbackTraceTest, EvaluateAndPredictOutsideTraining) {
  recorder_->events.clear();
  ASSERT_OK(trainer_->Evaluate());
  EXPECT_THAT(recorder_->events, ElementsAre("prediction_step@0", "prediction_step@0",
                                             "prediction_step@0", "log(eval)@0", "evaluate@0"));
  recorder_->events.clear();
  ASSERT_OK(trainer_->Predict(ClassificationDataset(3, /*seed=*/3)));
  EXPECT_THAT(recorder_->events,
              ElementsAre("prediction_step@0", "prediction_step@0", "predict@0"));
}

// logging_first_step adds a log at step 1; eval_delay 3 skips the evaluation at step 2.
TEST(CallbackTraceFlowTest, LoggingFirstStepAndEvalDelay) {
  const std::string out_dir = absl::StrCat(::testing::TempDir(), "/callback_trace_flow");
  std::filesystem::remove_all(out_dir);
  ASSERT_OK_AND_ASSIGN(args::TrainingArguments args, ParseArgs({{"output_dir", out_dir},
                                                                {"per_device_train_batch_size", 2},
                                                                {"per_device_eval_batch_size", 5},
                                                                {"max_steps", 4},
                                                                {"logging_steps", 2},
                                                                {"logging_first_step", true},
                                                                {"eval_strategy", "steps"},
                                                                {"eval_steps", 2},
                                                                {"eval_delay", 3},
                                                                {"save_strategy", "no"},
                                                                {"report_to", "none"},
                                                                {"disable_tqdm", true}}));
  auto recorder = std::make_shared<RecordingCallback>();
  TrainerOptions options;
  options.model = std::make_shared<TinyClassifier>();
  options.args = args;
  options.train_dataset = ClassificationDataset(10, /*seed=*/1);
  options.eval_dataset = ClassificationDataset(5, /*seed=*/2);
  options.callbacks.push_back(recorder);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Trainer> trainer, Trainer::Create(std::move(options)));
  ASSERT_OK(trainer->Train());
  // GA 1: every micro-batch is a step (no substep_end). One eval batch of 5.
  EXPECT_THAT(recorder->events,
              ElementsAre("init_end@0", "train_begin@0", "epoch_begin@0",  //
                          "step_begin@0", "step_end@1", "log(loss)@1",     // logging_first_step
                          "step_begin@1", "step_end@2", "log(loss)@2",     // eval delayed
                          "step_begin@2", "step_end@3",                    //
                          "step_begin@3", "step_end@4", "log(loss)@4", "prediction_step@4",
                          "log(eval)@4", "evaluate@4",  // 4 >= eval_delay
                          "epoch_end@4", "log(train_metrics)@4", "train_end@4"));
}

// "epoch" strategies for logging, evaluation and saving, same data and GA as above. HF's
// DefaultFlowCallback.on_epoch_end sets should_log / should_evaluate / should_save, and the
// loop's _maybe_log_save_evaluate after on_epoch_end acts on them (log -> evaluate -> save);
// on_step_end only stops at max_steps (loom does not also save there with "epoch": the epoch
// end that follows saves checkpoint-4 once, see trainer/flow_callbacks.h).
//   epoch 0: step_begin@0, substep_end@0, step_end@1, step_begin@1, substep_end@1, step_end@2,
//            step_begin@2, substep_end@2, epoch_end@2, log@2, 3 x prediction_step@2,
//            log(eval)@2, evaluate@2, save@2
//   epoch 1: step_begin@2, step_end@3, substep_end@3, step_begin@3, step_end@4 (stop),
//            epoch_end@4, log@4, 3 x prediction_step@4, log(eval)@4, evaluate@4, save@4,
//            log(train metrics)@4, train_end@4
TEST(CallbackTraceEpochTest, EpochStrategiesActAfterOnEpochEnd) {
  const std::string out_dir = absl::StrCat(::testing::TempDir(), "/callback_trace_epoch");
  std::filesystem::remove_all(out_dir);
  ASSERT_OK_AND_ASSIGN(args::TrainingArguments args, ParseArgs({{"output_dir", out_dir},
                                                                {"per_device_train_batch_size", 2},
                                                                {"per_device_eval_batch_size", 2},
                                                                {"gradient_accumulation_steps", 2},
                                                                {"num_train_epochs", 2},
                                                                {"logging_strategy", "epoch"},
                                                                {"eval_strategy", "epoch"},
                                                                {"save_strategy", "epoch"},
                                                                {"report_to", "none"},
                                                                {"disable_tqdm", true}}));
  auto recorder = std::make_shared<RecordingCallback>();
  TrainerOptions options;
  options.model = std::make_shared<TinyClassifier>();
  options.args = args;
  options.train_dataset = ClassificationDataset(10, /*seed=*/1);
  options.eval_dataset = ClassificationDataset(5, /*seed=*/2);
  options.callbacks.push_back(recorder);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Trainer> trainer, Trainer::Create(std::move(options)));
  ASSERT_OK_AND_ASSIGN(TrainOutput out, trainer->Train());
  std::vector<std::string> golden = {"init_end@0",
                                     "train_begin@0",
                                     "epoch_begin@0",
                                     "step_begin@0",
                                     "substep_end@0",
                                     "step_end@1",
                                     "step_begin@1",
                                     "substep_end@1",
                                     "step_end@2",
                                     "step_begin@2",
                                     "substep_end@2",
                                     "epoch_end@2",
                                     "log(loss)@2",
                                     "prediction_step@2",
                                     "prediction_step@2",
                                     "prediction_step@2",
                                     "log(eval)@2",
                                     "evaluate@2",
                                     "save@2",
                                     "epoch_begin@2",
                                     "step_begin@2",
                                     "step_end@3",
                                     "substep_end@3",
                                     "step_begin@3",
                                     "step_end@4",
                                     "epoch_end@4",
                                     "log(loss)@4",
                                     "prediction_step@4",
                                     "prediction_step@4",
                                     "prediction_step@4",
                                     "log(eval)@4",
                                     "evaluate@4",
                                     "save@4",
                                     "log(train_metrics)@4",
                                     "train_end@4"};
  EXPECT_THAT(recorder->events, ElementsAreArray(golden));
  EXPECT_TRUE(std::filesystem::is_directory(out_dir + "/checkpoint-2"));
  EXPECT_TRUE(std::filesystem::is_directory(out_dir + "/checkpoint-4"));
  // The epoch-end logs carry state.epoch of the last optimizer step (0.8: micro-batch 3 of 5),
  // not the end of the epoch; the final metrics carry it too (HF's log() adds it in place).
  const auto& history = trainer->state().log_history;
  ASSERT_FALSE(history.empty());
  EXPECT_EQ(history.front().at("epoch").get<double>(), 0.8);
  EXPECT_EQ(history.front().at("step").get<int64_t>(), 2);
  EXPECT_EQ(out.metrics.at("epoch").get<double>(), 1.6);
}

}  // namespace
}  // namespace loom::trainer::testing
