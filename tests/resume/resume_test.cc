// Stop/resume bit-exactness: for stop points mid-epoch right after an
// evaluation, at an epoch boundary, and at an epoch-end save that leaves an accumulation
// window open, with shuffling (data_seed), dropout and windows straddling epochs, a run
// stopped after a checkpoint and resumed by a fresh Trainer ends with the same weights,
// optimizer state, schedule and log history, byte for byte, as one that never stopped.
// The run's step layout is in resume_harness.h.
#include <cstdlib>
#include <filesystem>

#include "base/status_matchers.h"
#include "gtest/gtest.h"
#include "tests/resume/resume_harness.h"

namespace loom::tests {
namespace {

std::string Dir(const std::string& name) {
  const std::string dir = std::string(std::getenv("TEST_TMPDIR")) + "/" + name;
  std::filesystem::remove_all(dir);
  return dir;
}

std::string Uninterrupted(const std::string& save_strategy, int64_t save_steps) {
  auto t = MakeResumeTrainer(Dir("uninterrupted"), {}, save_strategy, save_steps);
  EXPECT_OK(t.status());
  auto out = (*t)->Train();
  EXPECT_OK(out.status());
  EXPECT_EQ((*t)->state().global_step, 15);
  return RunDigest(**t);
}

std::string StoppedAndResumed(int64_t stop_step, const std::string& save_strategy,
                              int64_t save_steps, const std::string& name) {
  const std::string dir = Dir(name);
  {
    auto first = MakeResumeTrainer(dir, {std::make_shared<StopAfterSave>(stop_step)},
                                   save_strategy, save_steps);
    EXPECT_OK(first.status());
    auto out = (*first)->Train();
    EXPECT_OK(out.status());
    EXPECT_EQ((*first)->state().global_step, stop_step);
  }
  auto second = MakeResumeTrainer(dir, {}, save_strategy, save_steps);
  EXPECT_OK(second.status());
  auto out = (*second)->Train(trainer::ResumeFrom::Latest());
  EXPECT_OK(out.status());
  return RunDigest(**second);
}

TEST(ResumeTest, MidEpochRightAfterAnEvaluation) {
  // Step 3: micro-batch 6 of epoch 0; evaluation and save both at step 3.
  EXPECT_EQ(StoppedAndResumed(3, "steps", 3, "mid"), Uninterrupted("steps", 3));
}

TEST(ResumeTest, EpochBoundary) {
  // Step 11 ends exactly with epoch 1's last micro-batch.
  EXPECT_EQ(StoppedAndResumed(11, "steps", 11, "boundary"), Uninterrupted("steps", 11));
}

TEST(ResumeTest, EpochEndSaveWithAnOpenAccumulationWindow) {
  // save_strategy epoch: the save after epoch 0 (step 5) holds micro-batch 11's gradient,
  // which step 6 completes in epoch 1.
  EXPECT_EQ(StoppedAndResumed(5, "epoch", 500, "open_window"), Uninterrupted("epoch", 500));
}

TEST(ResumeTest, IgnoreDataSkipRestartsTheInterruptedEpoch) {
  // Stopped at step 3 (epoch 0, micro-batch 6; 6 micro-batches seen in all). Normally the
  // resumed run ends at total micro-batch 30 = epoch 2's 8th: epoch 2 + 8/11. With
  // ignore_data_skip epoch 0 starts over (totals 7..17), epoch 1 is 18..28 and total 30 is
  // epoch 2's 2nd micro-batch: epoch 2 + 2/11.
  const std::string dir = Dir("ignore_skip");
  {
    auto first = MakeResumeTrainer(dir, {std::make_shared<StopAfterSave>(3)});
    ASSERT_OK(first.status());
    ASSERT_OK((*first)->Train().status());
  }
  auto second = MakeResumeTrainer(dir, {}, "steps", 3, [](trainer::TrainerOptions& o) {
    o.args.set_ignore_data_skip(true);
  });
  ASSERT_OK(second.status());
  ASSERT_OK((*second)->Train(trainer::ResumeFrom::Latest()).status());
  EXPECT_EQ((*second)->state().global_step, 15);
  EXPECT_DOUBLE_EQ(*(*second)->state().epoch, 2 + 2.0 / 11);

  auto normal = MakeResumeTrainer(Dir("normal"), {});
  ASSERT_OK(normal.status());
  ASSERT_OK((*normal)->Train().status());
  EXPECT_DOUBLE_EQ(*(*normal)->state().epoch, 2 + 8.0 / 11);
}

}  // namespace
}  // namespace loom::tests
