// Stateful callbacks across a resume (transformers 4.41 `restore_callback_states_from_checkpoint`):
// trainer_state.json stores
// EarlyStoppingCallback's patience counter and TrainerControl in HF 4.41's layout, and with
// --restore_callback_states_from_checkpoint a resumed run stops at the step an uninterrupted
// one does; without it the counter starts over (HF's behaviour). The states are written with
// --save_for_transformers_version 4.41 only: the default 4.38 layout has no stateful_callbacks
// (transformers 4.38's TrainerState has no such field), and restoring from it warns why nothing
// is restored.
//
// The scripted metric (greater is better): 0.5 at step 1, 0.6 at step 2, 0.55 afterwards, so
// with patience 3 the counter is 1, 2, 3 at steps 3, 4, 5 and training stops at step 5.
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/file_util.h"
#include "base/status_matchers.h"
#include "glog/logging.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/resume/resume_harness.h"
#include "trainer/flow_callbacks.h"

namespace loom::tests {
namespace {

struct TrainerRun {
  std::unique_ptr<trainer::Trainer> trainer;
  std::shared_ptr<trainer::Trainer*> self = std::make_shared<trainer::Trainer*>(nullptr);
};

// `version`: --save_for_transformers_version (nullopt: the default, 4.38).
TrainerRun Make(const std::string& dir, bool restore,
                std::shared_ptr<trainer::TrainerCallback> extra,
                std::optional<std::string> version = "4.41") {
  TrainerRun run;
  auto self = run.self;
  std::vector<std::shared_ptr<trainer::TrainerCallback>> callbacks = {
      std::make_shared<trainer::EarlyStoppingCallback>(3)};
  if (extra) callbacks.push_back(extra);
  auto t = MakeResumeTrainer(dir, callbacks, "steps", 1, [&](trainer::TrainerOptions& o) {
    o.args.set_eval_steps(1);
    o.args.set_load_best_model_at_end(true);
    o.args.set_metric_for_best_model("accuracy");
    o.args.set_restore_callback_states_from_checkpoint(restore);
    if (version) o.args.set_save_for_transformers_version(*version);
    o.compute_metrics = [self](const trainer::EvalPrediction&) -> absl::StatusOr<trainer::Metrics> {
      const int64_t step = (*self)->state().global_step;
      trainer::Metrics m = trainer::Metrics::object();
      m["accuracy"] = step == 1 ? 0.5 : step == 2 ? 0.6 : 0.55;
      return m;
    };
  });
  EXPECT_OK(t.status());
  run.trainer = std::move(*t);
  *run.self = run.trainer.get();
  return run;
}

std::string Dir(const std::string& name) {
  const std::string dir = std::string(std::getenv("TEST_TMPDIR")) + "/" + name;
  std::filesystem::remove_all(dir);
  return dir;
}

int64_t ResumedStopStep(bool restore, const std::string& name) {
  const std::string dir = Dir(name);
  {
    TrainerRun first = Make(dir, restore, std::make_shared<StopAfterSave>(4));
    EXPECT_OK(first.trainer->Train().status());
    EXPECT_EQ(first.trainer->state().global_step, 4);
  }
  // The checkpoint records the counter (2) and the control flags in HF's layout.
  auto text = base::ReadFile(dir + "/checkpoint-4/trainer_state.json");
  EXPECT_OK(text.status());
  const nlohmann::json cbs = nlohmann::json::parse(*text)["stateful_callbacks"];
  EXPECT_EQ(cbs["EarlyStoppingCallback"].dump(),
            R"({"args":{"early_stopping_patience":3,"early_stopping_threshold":0.0},)"
            R"("attributes":{"early_stopping_patience_counter":2}})");
  EXPECT_EQ(cbs["TrainerControl"]["args"].size(), 5u);
  EXPECT_TRUE(cbs["TrainerControl"]["attributes"].empty());
  TrainerRun second = Make(dir, restore, nullptr);
  EXPECT_OK(second.trainer->Train(trainer::ResumeFrom::Latest()).status());
  return second.trainer->state().global_step;
}

TEST(CallbackStateTest, UninterruptedRunStopsAtStep5) {
  TrainerRun run = Make(Dir("plain"), false, nullptr);
  ASSERT_OK(run.trainer->Train().status());
  EXPECT_EQ(run.trainer->state().global_step, 5);
  EXPECT_EQ(run.trainer->state().best_metric, 0.6);
}

TEST(CallbackStateTest, RestoredCounterStopsWhereTheUninterruptedRunDoes) {
  EXPECT_EQ(ResumedStopStep(/*restore=*/true, "restore"), 5);
}

TEST(CallbackStateTest, WithoutRestoreTheCounterStartsOver) {
  // Counter 1, 2, 3 at steps 5, 6, 7.
  EXPECT_EQ(ResumedStopStep(/*restore=*/false, "no_restore"), 7);
}

// Collects the WARNING lines glog writes while it is installed.
class WarningSink : public google::LogSink {
 public:
  WarningSink() { google::AddLogSink(this); }
  ~WarningSink() override { google::RemoveLogSink(this); }
  void send(google::LogSeverity severity, const char*, const char*, int, const struct ::tm*,
            const char* message, size_t message_len) override {
    if (severity != google::GLOG_WARNING) return;
    std::lock_guard<std::mutex> lock(mu_);
    text_.append(message, message_len).append("\n");
  }
  std::string text() {
    std::lock_guard<std::mutex> lock(mu_);
    return text_;
  }

 private:
  std::mutex mu_;
  std::string text_;
};

TEST(CallbackStateTest, DefaultLayoutHasNoStatesAndRestoringWarnsWhy) {
  const std::string dir = Dir("layout_4_38");
  {
    TrainerRun first = Make(dir, true, std::make_shared<StopAfterSave>(4), std::nullopt);
    ASSERT_OK(first.trainer->Train().status());
  }
  ASSERT_OK_AND_ASSIGN(std::string text, base::ReadFile(dir + "/checkpoint-4/trainer_state.json"));
  EXPECT_FALSE(nlohmann::json::parse(text).contains("stateful_callbacks"));
  WarningSink warnings;
  TrainerRun second = Make(dir, true, nullptr, std::nullopt);
  ASSERT_OK(second.trainer->Train(trainer::ResumeFrom::Latest()).status());
  // Nothing was restored: the counter starts over (1, 2, 3 at steps 5, 6, 7).
  EXPECT_EQ(second.trainer->state().global_step, 7);
  EXPECT_THAT(warnings.text(),
              ::testing::HasSubstr("checkpoint-4/trainer_state.json has no stateful_callbacks: it "
                                   "was written for transformers 4.38"));
  EXPECT_THAT(warnings.text(), ::testing::HasSubstr("no callback states to restore"));
}

}  // namespace
}  // namespace loom::tests
