// Checkpoint rotation and best-model retention through the Trainer (HF 4.41's _save_checkpoint /
// _sorted_checkpoints / _rotate_checkpoints and the save_total_limit=1 clean-up at the end of
// _inner_training_loop), with exact folder lists at every on_save (after the save's rotation) and
// after training, trainer_state.json's best_model_checkpoint / best_metric, and
// load_best_model_at_end's weights compared bit for bit with the best checkpoint's
// model.safetensors.
//
// Every run is BaseArgs (harness.h): 12 steps, a checkpoint every 2 steps. With evaluation,
// eval_steps is 2 as well, and compute_metrics returns a scripted "score" per evaluation, so
// the i-th value belongs to checkpoint-(2*(i+1)).
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/checkpointing/harness.h"
#include "trainer/trainer_state.h"

namespace loom::tests::checkpointing {
namespace {

using ::testing::ElementsAreArray;
using ::testing::Optional;

using FolderLists = std::vector<std::pair<int64_t, std::vector<std::string>>>;

struct TrainedRun {
  std::string dir;
  std::shared_ptr<SaveRecorder> recorder;
  std::unique_ptr<trainer::Trainer> trainer;
};

// Trains BaseArgs into FreshDir(name) with `limit` (0: none) and, when `scores` is non-empty,
// an evaluation every 2 steps scored by them with metric_for_best_model "score".
TrainedRun TrainRun(const std::string& name, int64_t limit, std::vector<double> scores,
                    bool load_best = true, bool greater_is_better = true) {
  TrainerSetup setup;
  setup.args = BaseArgs(FreshDir(name));
  if (limit > 0) setup.args.set_save_total_limit(limit);
  if (!scores.empty()) {
    setup.args.set_eval_strategy("steps");
    setup.args.set_eval_steps(2);
    setup.args.set_metric_for_best_model("score");
    setup.args.set_greater_is_better(greater_is_better);
    setup.args.set_load_best_model_at_end(load_best);
    setup.with_eval_dataset = true;
    setup.compute_metrics = ScriptedScore(std::move(scores));
  }
  TrainedRun run;
  run.dir = setup.args.output_dir();
  run.recorder = std::make_shared<SaveRecorder>(run.dir);
  setup.callbacks = {run.recorder};
  absl::StatusOr<std::unique_ptr<trainer::Trainer>> t = MakeTrainer(setup);
  EXPECT_OK(t.status());
  if (!t.ok()) return run;
  run.trainer = std::move(*t);
  absl::StatusOr<trainer::TrainOutput> out = run.trainer->Train();
  EXPECT_OK(out.status());
  if (out.ok()) {
    EXPECT_EQ(out->global_step, 12);
  }
  return run;
}

FolderLists Lists(std::vector<std::vector<int64_t>> per_save) {
  FolderLists out;
  int64_t step = 2;
  for (const auto& steps : per_save) {
    out.push_back({step, CheckpointNames(steps)});
    step += 2;
  }
  return out;
}

// best_model_checkpoint / best_metric of a checkpoint's trainer_state.json.
void ExpectSavedBest(const std::string& folder, const std::optional<std::string>& checkpoint,
                     std::optional<double> metric) {
  SCOPED_TRACE(folder);
  absl::StatusOr<trainer::TrainerState> s =
      trainer::TrainerState::LoadFromJson(folder + "/trainer_state.json");
  ASSERT_OK(s.status());
  EXPECT_EQ(s->best_model_checkpoint, checkpoint);
  EXPECT_EQ(s->best_metric, metric);
}

TEST(RotationTest, LimitTwoWithoutBestTrackingKeepsTheTwoNewest) {
  TrainedRun run = TrainRun("limit2", 2, {});
  ASSERT_NE(run.trainer, nullptr);
  EXPECT_EQ(run.recorder->folders(), Lists({{2}, {2, 4}, {4, 6}, {6, 8}, {8, 10}, {10, 12}}));
  EXPECT_THAT(ListDir(run.dir), ElementsAreArray(CheckpointNames({10, 12})));
  EXPECT_EQ(run.trainer->state().best_model_checkpoint, std::nullopt);
  ExpectSavedBest(run.dir + "/checkpoint-12", std::nullopt, std::nullopt);
}

TEST(RotationTest, LimitTwoKeepsAnEarlyBestAndTheNewest) {
  // Best at step 2 (0.9); step 6's 0.9 only ties it, which does not replace it (HF's
  // np.greater is strict).
  TrainedRun run = TrainRun("limit2_best", 2, {0.9, 0.5, 0.9, 0.7, 0.8, 0.85});
  ASSERT_NE(run.trainer, nullptr);
  EXPECT_EQ(run.recorder->folders(), Lists({{2}, {2, 4}, {2, 6}, {2, 8}, {2, 10}, {2, 12}}));
  EXPECT_THAT(ListDir(run.dir), ElementsAreArray(CheckpointNames({2, 12})));
  EXPECT_THAT(run.recorder->at_train_end(), ElementsAreArray(CheckpointNames({2, 12})));
  const std::string best = run.dir + "/checkpoint-2";
  EXPECT_EQ(run.trainer->state().best_model_checkpoint, best);
  EXPECT_THAT(run.trainer->state().best_metric, Optional(0.9));
  ExpectSavedBest(best, best, 0.9);
  ExpectSavedBest(run.dir + "/checkpoint-12", best, 0.9);
}

TEST(RotationTest, LimitFiveKeepsFourNewestPlusAnEarlyBestWhenLowerIsBetter) {
  // greater_is_better=false: best is step 2's 0.1 (step 10's 0.2 improves on the previous
  // evaluation but not on the best).
  TrainedRun run = TrainRun("limit5_best", 5, {0.1, 0.5, 0.3, 0.4, 0.2, 0.6}, true,
                            /*greater_is_better=*/false);
  ASSERT_NE(run.trainer, nullptr);
  EXPECT_EQ(run.recorder->folders(),
            Lists({{2}, {2, 4}, {2, 4, 6}, {2, 4, 6, 8}, {2, 4, 6, 8, 10}, {2, 6, 8, 10, 12}}));
  EXPECT_THAT(ListDir(run.dir), ElementsAreArray(CheckpointNames({2, 6, 8, 10, 12})));
  const std::string best = run.dir + "/checkpoint-2";
  EXPECT_EQ(run.trainer->state().best_model_checkpoint, best);
  EXPECT_THAT(run.trainer->state().best_metric, Optional(0.1));
  ExpectSavedBest(run.dir + "/checkpoint-12", best, 0.1);
}

TEST(RotationTest, LimitFiveWithoutBestTrackingDropsTheOldest) {
  // The control for the test above: the same limit without a best keeps 4..12.
  TrainedRun run = TrainRun("limit5", 5, {});
  ASSERT_NE(run.trainer, nullptr);
  EXPECT_THAT(ListDir(run.dir), ElementsAreArray(CheckpointNames({4, 6, 8, 10, 12})));
}

TEST(RotationTest, LimitOneKeepsLastAndBestDuringTrainingAndOnlyBestAfterwards) {
  // Best at step 4 (0.9), then never beaten.
  TrainedRun run = TrainRun("limit1_best", 1, {0.3, 0.9, 0.4, 0.5, 0.6, 0.7});
  ASSERT_NE(run.trainer, nullptr);
  // At step 4 the best is the newest, so the limit stays 1 and checkpoint-2 goes; from step 6
  // on the newest differs from the best and the limit becomes 2.
  EXPECT_EQ(run.recorder->folders(), Lists({{2}, {4}, {4, 6}, {4, 8}, {4, 10}, {4, 12}}));
  // HF deletes every checkpoint but the best before on_train_end.
  EXPECT_THAT(run.recorder->at_train_end(), ElementsAreArray(CheckpointNames({4})));
  EXPECT_THAT(ListDir(run.dir), ElementsAreArray(CheckpointNames({4})));
  const std::string best = run.dir + "/checkpoint-4";
  EXPECT_EQ(run.trainer->state().best_model_checkpoint, best);
  EXPECT_THAT(run.trainer->state().best_metric, Optional(0.9));
  ExpectSavedBest(best, best, 0.9);
}

TEST(RotationTest, LimitOneWhenTheBestIsAlwaysTheNewest) {
  TrainedRun run = TrainRun("limit1_last", 1, {0.1, 0.2, 0.3, 0.4, 0.5, 0.6});
  ASSERT_NE(run.trainer, nullptr);
  EXPECT_EQ(run.recorder->folders(), Lists({{2}, {4}, {6}, {8}, {10}, {12}}));
  EXPECT_THAT(ListDir(run.dir), ElementsAreArray(CheckpointNames({12})));
  EXPECT_EQ(run.trainer->state().best_model_checkpoint, run.dir + "/checkpoint-12");
  EXPECT_THAT(run.trainer->state().best_metric, Optional(0.6));
}

// load_best_model_at_end: after training the weights are the best checkpoint's, bit for bit.
TEST(LoadBestModelAtEndTest, FinalWeightsAreTheBestCheckpointsWeights) {
  TrainedRun run = TrainRun("load_best", 0, {0.2, 0.9, 0.4, 0.5, 0.6, 0.7});
  ASSERT_NE(run.trainer, nullptr);
  EXPECT_THAT(ListDir(run.dir), ElementsAreArray(CheckpointNames({2, 4, 6, 8, 10, 12})));
  ASSERT_OK_AND_ASSIGN(TensorBytes best,
                       SafetensorsBytes(run.dir + "/checkpoint-4/model.safetensors"));
  ASSERT_OK_AND_ASSIGN(TensorBytes last,
                       SafetensorsBytes(run.dir + "/checkpoint-12/model.safetensors"));
  const TensorBytes final_weights = ModelBytes(run.trainer->model());
  ASSERT_EQ(final_weights.size(), 3u);
  EXPECT_TRUE(final_weights == best);
  EXPECT_TRUE(final_weights == run.recorder->models().at(4));
  EXPECT_FALSE(final_weights == last);
  for (const auto& [name, bytes] : final_weights) {
    SCOPED_TRACE(name);
    EXPECT_NE(bytes, last.at(name));
  }
}

TEST(LoadBestModelAtEndTest, WithoutItTheFinalWeightsAreTheLastStepsWeights) {
  // Same scores and best tracking, load_best_model_at_end=false: the model is not reloaded.
  TrainedRun run = TrainRun("no_load_best", 0, {0.2, 0.9, 0.4, 0.5, 0.6, 0.7}, /*load_best=*/false);
  ASSERT_NE(run.trainer, nullptr);
  EXPECT_EQ(run.trainer->state().best_model_checkpoint, run.dir + "/checkpoint-4");
  ASSERT_OK_AND_ASSIGN(TensorBytes last,
                       SafetensorsBytes(run.dir + "/checkpoint-12/model.safetensors"));
  EXPECT_TRUE(ModelBytes(run.trainer->model()) == last);
  EXPECT_FALSE(ModelBytes(run.trainer->model()) == run.recorder->models().at(4));
}

TEST(LoadBestModelAtEndTest, BestCheckpointSurvivesLimitTwoAndIsLoaded) {
  TrainedRun run = TrainRun("load_best_limit2", 2, {0.9, 0.5, 0.6, 0.7, 0.8, 0.85});
  ASSERT_NE(run.trainer, nullptr);
  EXPECT_THAT(ListDir(run.dir), ElementsAreArray(CheckpointNames({2, 12})));
  ASSERT_OK_AND_ASSIGN(TensorBytes best,
                       SafetensorsBytes(run.dir + "/checkpoint-2/model.safetensors"));
  EXPECT_TRUE(ModelBytes(run.trainer->model()) == best);
  EXPECT_TRUE(best == run.recorder->models().at(2));
}

TEST(LoadBestModelAtEndTest, ResumedRunKeepsAndLoadsTheBestFromBeforeTheStop) {
  // Stopped after checkpoint-6 with checkpoint-2 the best (0.9); the resumed run takes the
  // best from checkpoint-6's trainer_state.json, so rotation keeps checkpoint-2 and it is the
  // model loaded at the end.
  TrainerSetup setup;
  setup.args = BaseArgs(FreshDir("resume_best"));
  setup.args.set_save_total_limit(2);
  setup.args.set_eval_strategy("steps");
  setup.args.set_eval_steps(2);
  setup.args.set_metric_for_best_model("score");
  setup.args.set_load_best_model_at_end(true);
  setup.with_eval_dataset = true;
  const std::string dir = setup.args.output_dir();
  auto first_recorder = std::make_shared<SaveRecorder>(dir);
  {
    TrainerSetup first = setup;
    first.compute_metrics = ScriptedScore({0.9, 0.5, 0.6});
    first.callbacks = {first_recorder, std::make_shared<StopAfterSave>(6)};
    ASSERT_OK_AND_ASSIGN(auto t, MakeTrainer(first));
    ASSERT_OK(t->Train().status());
    EXPECT_EQ(t->state().global_step, 6);
  }
  EXPECT_THAT(ListDir(dir), ElementsAreArray(CheckpointNames({2, 6})));

  auto recorder = std::make_shared<SaveRecorder>(dir);
  setup.compute_metrics = ScriptedScore({0.7, 0.8, 0.85});
  setup.callbacks = {recorder};
  ASSERT_OK_AND_ASSIGN(auto t, MakeTrainer(setup));
  ASSERT_OK(t->Train(trainer::ResumeFrom::Latest()).status());
  EXPECT_EQ(t->state().global_step, 12);
  EXPECT_EQ(recorder->folders(), (FolderLists{{8, CheckpointNames({2, 8})},
                                              {10, CheckpointNames({2, 10})},
                                              {12, CheckpointNames({2, 12})}}));
  EXPECT_THAT(ListDir(dir), ElementsAreArray(CheckpointNames({2, 12})));
  EXPECT_EQ(t->state().best_model_checkpoint, dir + "/checkpoint-2");
  EXPECT_THAT(t->state().best_metric, Optional(0.9));
  EXPECT_TRUE(ModelBytes(t->model()) == first_recorder->models().at(2));
}

}  // namespace
}  // namespace loom::tests::checkpointing
