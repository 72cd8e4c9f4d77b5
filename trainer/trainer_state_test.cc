// The golden text is Python's json.dumps(asdict(state), indent=2, sort_keys=True) + "\n" for
// a dict with transformers 4.41's TrainerState fields, produced by /usr/bin/python3.
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

constexpr char kGolden[] =
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

TEST(TrainerStateTest, ToJsonMatchesHfLayout) { EXPECT_EQ(SmallRun().ToJson(), kGolden); }

TEST(TrainerStateTest, FromJsonReadsHfFileAndRoundTrips) {
  ASSERT_OK_AND_ASSIGN(TrainerState s, TrainerState::FromJson(kGolden));
  EXPECT_EQ(s.global_step, 10);
  EXPECT_EQ(s.epoch, 0.5);
  EXPECT_EQ(s.best_model_checkpoint, "out/checkpoint-10");
  ASSERT_EQ(s.log_history.size(), 2u);
  EXPECT_EQ(s.log_history[0]["learning_rate"], 2.5e-05);
  EXPECT_EQ(s.ToJson(), kGolden);
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
}

TEST(TrainerStateTest, SaveAndLoadFile) {
  const std::string path = std::string(std::getenv("TEST_TMPDIR")) + "/trainer_state.json";
  ASSERT_OK(SmallRun().SaveToJson(path));
  ASSERT_OK_AND_ASSIGN(std::string text, base::ReadFile(path));
  EXPECT_EQ(text, kGolden);
  ASSERT_OK_AND_ASSIGN(TrainerState back, TrainerState::LoadFromJson(path));
  EXPECT_EQ(back.ToJson(), kGolden);
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
