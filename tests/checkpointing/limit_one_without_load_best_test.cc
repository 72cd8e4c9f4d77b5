// Regression test for a bug this suite found: loom ran the end-of-training limit-1 clean-up
// only with load_best_model_at_end (fixed in trainer/trainer_checkpoint.cc,
// Trainer::CleanUpCheckpointsAtEnd).
//
// HF 4.41's _inner_training_loop ends with (after self.log(metrics), before on_train_end):
//   if self.args.should_save and self.state.best_model_checkpoint is not None
//       and self.args.save_total_limit == 1:
//     for checkpoint in checkpoints_sorted:
//       if not os.path.samefile(checkpoint, self.state.best_model_checkpoint):
//         shutil.rmtree(checkpoint, ignore_errors=True)
// That clean-up depends on best_model_checkpoint (set whenever metric_for_best_model is set and
// an evaluation precedes a save), not on load_best_model_at_end: with metric_for_best_model
// set, load_best_model_at_end=false and save_total_limit=1 only checkpoint-4 (the best) stays.
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/checkpointing/harness.h"

namespace loom::tests::checkpointing {
namespace {

using ::testing::ElementsAreArray;

TEST(LimitOneWithoutLoadBestTest, OnlyTheBestCheckpointRemainsAfterTraining) {
  TrainerSetup setup;
  setup.args = BaseArgs(FreshDir("limit1_no_load_best"));
  setup.args.set_save_total_limit(1);
  setup.args.set_eval_strategy("steps");
  setup.args.set_eval_steps(2);
  setup.args.set_metric_for_best_model("score");
  setup.args.set_load_best_model_at_end(false);
  setup.with_eval_dataset = true;
  setup.compute_metrics = ScriptedScore({0.3, 0.9, 0.4, 0.5, 0.6, 0.7});
  const std::string dir = setup.args.output_dir();
  auto recorder = std::make_shared<SaveRecorder>(dir);
  setup.callbacks = {recorder};
  ASSERT_OK_AND_ASSIGN(auto trainer, MakeTrainer(setup));
  ASSERT_OK(trainer->Train().status());
  EXPECT_EQ(trainer->state().best_model_checkpoint, dir + "/checkpoint-4");
  // During training loom already matches HF (rotation keeps last + best).
  ASSERT_EQ(recorder->folders().size(), 6u);
  EXPECT_THAT(recorder->folders().back().second, ElementsAreArray(CheckpointNames({4, 12})));
  // After training HF keeps only the best; the model is not reloaded (no load_best).
  EXPECT_THAT(recorder->at_train_end(), ElementsAreArray(CheckpointNames({4})));
  EXPECT_THAT(ListDir(dir), ElementsAreArray(CheckpointNames({4})));
  EXPECT_TRUE(ModelBytes(trainer->model()) == recorder->models().at(12));
}

}  // namespace
}  // namespace loom::tests::checkpointing
