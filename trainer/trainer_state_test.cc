// The golden texts are Python's json.dumps(asdict(state), indent=2, sort_keys=True) + "\n" for
// a dict with transformers 4.41's TrainerState fields (kGolden441), produced by /usr/bin/python3,
// and the same without stateful_callbacks, the one field transformers 4.38's TrainerState lacks
// (kGolden438). //tests/resume:trainer_state_transformers_test has the real TrainerStates
// of 4.38.2 and 4.41.2 read files the Trainer wrote.
#include "trainer/trainer_state.h"

#include <cstdlib>

#include "base/file_util.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::trainer {
namespace {

using ::loom::base::testing::StatusIs;
using ::testing::HasSubstr;

constexpr char kGolden441[] =
    "{\n  \"best_metric\": 0.5,\n  \"best_model_checkpoint\": \"out/checkpoint-10\",\n  "
    "\"epoch\": 0.5,\n  \"eval_steps\": 5,\n  \"global_step\": 10,\n  "
    "\"is_hyper_param_search\": false,\n  \"is_local_process_zero\": true,\n  "
    "\"is_world_process_zero\": true,\n  \"log_history\": [\n    {\n      \"epoch\": 0.25,\n      "
    "\"grad_norm\": 1.5,\n      \"learning_rate\": 2.5e-05,\n      \"loss\": 0.6931,\n      "
    "\"step\": 5\n    },\n    {\n      \"epoch\": 0.5,\n      \"eval_loss\": 0.5,\n      "
    "\"eval_runtime\": 0.1,\n      \"step\": 10\n    }\n  ],\n  \"logging_steps\": 5,\n  "
    "\"max_steps\": 20,\n  \"num_input_tokens_seen\": 0,\n  \"num_train_epochs\": 1,\n  "
    "\"save_steps\": 10,\n  \"stateful_callbacks\": {},\n  \"total_flos\": 1234.0,\n  "
    "\"train_batch_size\": 8,\n  \"trial_name\": null,\n  \"trial_params\": null\n}\n";

constexpr char kGolden438[] =
    "{\n  \"best_metric\": 0.5,\n  \"best_model_checkpoint\": \"out/checkpoint-10\",\n  "
    "\"epoch\": 0.5,\n  \"eval_steps\": 5,\n  \"global_step\": 10,\n  "
    "\"is_hyper_param_search\": false,\n  \"is_local_process_zero\": true,\n  "
    "\"is_world_process_zero\": true,\n  \"log_history\": [\n    {\n      \"epoch\": 0.25,\n      "
    "\"grad_norm\": 1.5,\n      \"learning_rate\": 2.5e-05,\n      \"loss\": 0.6931,\n      "
    "\"step\": 5\n    },\n    {\n      \"epoch\": 0.5,\n      \"eval_loss\": 0.5,\n      "
    "\"eval_runtime\": 0.1,\n      \"step\": 10\n    }\n  ],\n  \"logging_steps\": 5,\n  "
    "\"max_steps\": 20,\n  \"num_input_tokens_seen\": 0,\n  \"num_train_epochs\": 1,\n  "
    "\"save_steps\": 10,\n  \"total_flos\": 1234.0,\n  "
    "\"train_batch_size\": 8,\n  \"trial_name\": null,\n  \"trial_params\": null\n}\n";

constexpr TrainerStateLayout k438 = TrainerStateLayout::kTransformers438;
constexpr TrainerStateLayout k441 = TrainerStateLayout::kTransformers441;

TrainerState SmallRun() {
  TrainerState s;
  s.epoch = 0.5;
  s.global_step = 10;
  s.max_steps = 20;
  s.logging_steps = 5;
  s.eval_steps = 5;
  s.save_steps = 10;
  s.train_batch_size = 8;
  s.num_train_epochs = 1;
  s.total_flos = 1234.0;
  Metrics log = Metrics::object();
  log["loss"] = 0.6931;
  log["grad_norm"] = 1.5;
  log["learning_rate"] = 2.5e-05;
  log["epoch"] = 0.25;
  log["step"] = 5;
  Metrics eval = Metrics::object();
  eval["eval_loss"] = 0.5;
  eval["eval_runtime"] = 0.1;
  eval["epoch"] = 0.5;
  eval["step"] = 10;
  s.log_history = {log, eval};
  s.best_metric = 0.5;
  s.best_model_checkpoint = "out/checkpoint-10";
  return s;
}

TEST(TrainerStateTest, ToJsonMatchesHfLayout) {
  EXPECT_EQ(SmallRun().ToJson(k441), kGolden441);
  EXPECT_EQ(SmallRun().ToJson(k438), kGolden438);
}

TEST(TrainerStateTest, FromJsonReadsHfFileAndRoundTrips) {
  ASSERT_OK_AND_ASSIGN(TrainerState s, TrainerState::FromJson(kGolden441));
  EXPECT_EQ(s.global_step, 10);
  EXPECT_EQ(s.epoch, 0.5);
  EXPECT_EQ(s.best_model_checkpoint, "out/checkpoint-10");
  ASSERT_EQ(s.log_history.size(), 2u);
  EXPECT_EQ(s.log_history[0]["learning_rate"], 2.5e-05);
  EXPECT_EQ(s.stateful_callbacks, Metrics::object());
  EXPECT_EQ(s.ToJson(k441), kGolden441);
}

TEST(TrainerStateTest, A438FileHasNoCallbackStatesAndReadsBackInEitherLayout) {
  ASSERT_OK_AND_ASSIGN(TrainerState s, TrainerState::FromJson(kGolden438));
  EXPECT_EQ(s.global_step, 10);
  EXPECT_EQ(s.best_metric, 0.5);
  EXPECT_TRUE(s.stateful_callbacks.is_null()) << "nothing to restore";
  EXPECT_EQ(s.ToJson(k438), kGolden438);
  EXPECT_EQ(s.ToJson(k441), kGolden441) << "4.41's __post_init__ makes the missing value {}";
  ASSERT_OK_AND_ASSIGN(TrainerState null_states,
                       TrainerState::FromJson(R"({"stateful_callbacks": null})"));
  EXPECT_TRUE(null_states.stateful_callbacks.is_null());
}

TEST(TrainerStateTest, CallbackStatesAreWrittenOnlyForTransformers441) {
  TrainerState s = SmallRun();
  s.stateful_callbacks["EarlyStoppingCallback"] = {
      {"args", {{"early_stopping_patience", 2}, {"early_stopping_threshold", 0.0}}},
      {"attributes", {{"early_stopping_patience_counter", 1}}}};
  EXPECT_EQ(s.ToJson(k438), kGolden438);
  ASSERT_OK_AND_ASSIGN(TrainerState back, TrainerState::FromJson(s.ToJson(k441)));
  EXPECT_EQ(back.stateful_callbacks, s.stateful_callbacks);
  EXPECT_THAT(s.ToJson(k441), HasSubstr("\"early_stopping_patience_counter\": 1"));
}

TEST(TrainerStateTest, LayoutForTheFlagsValues) {
  ASSERT_OK_AND_ASSIGN(TrainerStateLayout l438, TrainerStateLayoutFor("4.38"));
  EXPECT_EQ(l438, k438);
  ASSERT_OK_AND_ASSIGN(TrainerStateLayout l441, TrainerStateLayoutFor("4.41"));
  EXPECT_EQ(l441, k441);
  EXPECT_THAT(TrainerStateLayoutFor("4.40"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--save_for_transformers_version: '4.40' is not a valid value, "
                                 "please select one of ['4.38', '4.41']")));
}

TEST(TrainerStateTest, DefaultsAreHfDefaults) {
  ASSERT_OK_AND_ASSIGN(TrainerState s, TrainerState::FromJson("{}"));
  EXPECT_FALSE(s.epoch.has_value());
  EXPECT_EQ(s.global_step, 0);
  EXPECT_EQ(s.logging_steps, 500);
  EXPECT_EQ(s.eval_steps, 500);
  EXPECT_EQ(s.save_steps, 500);
  EXPECT_FALSE(s.train_batch_size.has_value());
  EXPECT_FALSE(s.best_metric.has_value());
  EXPECT_TRUE(s.is_world_process_zero);
  EXPECT_TRUE(s.stateful_callbacks.is_null());
}

TEST(TrainerStateTest, SaveAndLoadFile) {
  const std::string path = std::string(std::getenv("TEST_TMPDIR")) + "/trainer_state.json";
  for (const auto& [layout, golden] : {std::pair{k438, kGolden438}, std::pair{k441, kGolden441}}) {
    ASSERT_OK(SmallRun().SaveToJson(path, layout));
    ASSERT_OK_AND_ASSIGN(std::string text, base::ReadFile(path));
    EXPECT_EQ(text, golden);
    ASSERT_OK_AND_ASSIGN(TrainerState back, TrainerState::LoadFromJson(path));
    EXPECT_EQ(back.ToJson(layout), golden);
  }
}

TEST(TrainerStateTest, BadFilesAreErrorsNamingTheKey) {
  EXPECT_THAT(TrainerState::FromJson("[1]"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not a JSON object")));
  EXPECT_THAT(TrainerState::FromJson(R"({"global_step": "ten"})"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'global_step'")));
  EXPECT_THAT(TrainerState::FromJson(R"({"log_history": {"a": 1}})"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'log_history'")));
  EXPECT_THAT(TrainerState::LoadFromJson("/nonexistent/trainer_state.json"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("/nonexistent/trainer_state.json")));
}

// Found by //tests/fuzz:trainer_state_fuzzer: a count given as a float beyond int64's range (or
// NaN, which Python's json writes) was converted unchecked, which is undefined behaviour.
TEST(TrainerStateTest, CountsOutOfInt64RangeAreErrors) {
  for (const char* text : {R"({"global_step": 392233720368547758080})", R"({"max_steps": NaN})",
                           R"({"save_steps": -Infinity})", R"({"num_input_tokens_seen": 1e300})",
                           R"({"train_batch_size": 18446744073709551615})"}) {
    EXPECT_THAT(TrainerState::FromJson(text),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         HasSubstr("is not an integer that fits in 64 bits")))
        << text;
  }
  EXPECT_THAT(TrainerState::FromJson(R"({"global_step": 1e300})"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("key 'global_step': 1e+300 is not an integer")));
  ASSERT_OK_AND_ASSIGN(TrainerState s, TrainerState::FromJson(R"({"global_step": 30.0})"));
  EXPECT_EQ(s.global_step, 30);  // an integral float still reads, as before
}

TEST(TrainerControlTest, ResetsMatchHfHandler) {
  TrainerControl c{true, true, true, true, true};
  c.NewStep();
  EXPECT_TRUE(c.should_training_stop && c.should_epoch_stop);
  EXPECT_FALSE(c.should_save || c.should_evaluate || c.should_log);
  c.NewEpoch();
  EXPECT_FALSE(c.should_epoch_stop);
  c.NewTraining();
  EXPECT_FALSE(c.should_training_stop);
}

}  // namespace
}  // namespace loom::trainer
