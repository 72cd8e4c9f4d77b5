// Stop/resume bit-exactness in 16-bit precision: a --bf16 run (CPU
// autocast) and a run through --fp16's GradScaler (unit level on CPU: fp32 weights, dynamic
// loss scaling, a batch whose loss is inf now and then so steps are skipped and the scale backs
// off and grows) stopped after a checkpoint and resumed by a fresh Trainer end byte-identical to
// the uninterrupted run — weights, AdamW state, schedule, log history and the loss scale.
// The run's layout (3 epochs of 11 micro-batches, accumulation 2, 15 steps) is resume_harness.h's.
#include <cstdlib>
#include <filesystem>

#include "base/status_matchers.h"
#include "gtest/gtest.h"
#include "precision/policy.h"
#include "tests/resume/resume_harness.h"

namespace loom::tests {
namespace {

std::string Dir(const std::string& name) {
  const std::string dir = std::string(std::getenv("TEST_TMPDIR")) + "/" + name;
  std::filesystem::remove_all(dir);
  return dir;
}

// Records the learning rate after every step (a skipped step leaves it where it was).
class LrRecorder : public trainer::TrainerCallback {
 public:
  std::string Name() const override { return "LrRecorder"; }
  absl::Status OnStepEnd(const trainer::Event& e) override {
    lrs.push_back(e.context.lr_scheduler->LastLr().front());
    return absl::OkStatus();
  }
  std::vector<double> lrs;
};

void Bf16(trainer::TrainerOptions& o) { o.args.set_bf16(true); }

void Fp16Scaler(trainer::TrainerOptions& o) {
  precision::PrecisionPolicy p;  // fp32 weights, no autocast: --fp16's step on a CPU
  p.grad_scaler = precision::GradScalerOptions();
  p.grad_scaler->growth_interval = 3;
  o.precision = p;
  o.model_init = []() -> absl::StatusOr<std::shared_ptr<trainer::Model>> {
    // Token 13 first in a row: an infinite loss, so the GradScaler skips that window's step.
    return MakeDropoutClassifier(/*inf_loss_token=*/13);
  };
}

struct RunResult {
  std::string digest;
  precision::GradScalerState scaler;
  std::vector<double> lrs;
};

RunResult Uninterrupted(const std::string& name, void (*customize)(trainer::TrainerOptions&)) {
  auto lrs = std::make_shared<LrRecorder>();
  auto t = MakeResumeTrainer(Dir(name), {lrs}, "steps", 3, customize);
  EXPECT_OK(t.status());
  EXPECT_OK((*t)->Train().status());
  EXPECT_EQ((*t)->state().global_step, 15);
  RunResult r{RunDigest(**t), {}, lrs->lrs};
  if ((*t)->grad_scaler() != nullptr) r.scaler = (*t)->grad_scaler()->State();
  return r;
}

RunResult StoppedAndResumed(const std::string& name, int64_t stop_step,
                            void (*customize)(trainer::TrainerOptions&)) {
  const std::string dir = Dir(name);
  {
    auto first =
        MakeResumeTrainer(dir, {std::make_shared<StopAfterSave>(stop_step)}, "steps", 3, customize);
    EXPECT_OK(first.status());
    EXPECT_OK((*first)->Train().status());
    EXPECT_EQ((*first)->state().global_step, stop_step);
  }
  auto second = MakeResumeTrainer(dir, {}, "steps", 3, customize);
  EXPECT_OK(second.status());
  EXPECT_OK((*second)->Train(trainer::ResumeFrom::Latest()).status());
  RunResult r{RunDigest(**second), {}, {}};
  if ((*second)->grad_scaler() != nullptr) r.scaler = (*second)->grad_scaler()->State();
  return r;
}

TEST(PrecisionResumeTest, Bf16RunResumesBitExactly) {
  const RunResult whole = Uninterrupted("bf16", Bf16);
  // The bf16 run really computes in bf16: its weights differ from the fp32 run's.
  EXPECT_NE(whole.digest, Uninterrupted("fp32", nullptr).digest);
  EXPECT_EQ(StoppedAndResumed("bf16_resumed_6", 6, Bf16).digest, whole.digest);
  EXPECT_EQ(StoppedAndResumed("bf16_resumed_9", 9, Bf16).digest, whole.digest);
}

TEST(PrecisionResumeTest, GradScalerRunResumesBitExactlyWithItsScale) {
  const RunResult whole = Uninterrupted("fp16", Fp16Scaler);
  // Steps were skipped (the lr stood still) and the scale moved: the test exercises the scaler.
  int skipped = 0;
  for (size_t i = 1; i < whole.lrs.size(); ++i) skipped += whole.lrs[i] == whole.lrs[i - 1];
  EXPECT_GT(skipped, 0);
  EXPECT_LT(skipped, 15);
  EXPECT_NE(whole.scaler.scale, 65536.0);
  for (int64_t stop : {3, 6, 9, 12}) {
    SCOPED_TRACE(stop);
    const RunResult resumed =
        StoppedAndResumed("fp16_resumed_" + std::to_string(stop), stop, Fp16Scaler);
    EXPECT_EQ(resumed.digest, whole.digest);
    EXPECT_EQ(resumed.scaler, whole.scaler);
  }
}

// Every window holding a loss spike is skipped — the lr schedule stands still for it — and
// only those; global_step counts every window all the same (HF's optimizer_step_was_skipped).
class SkipRecorder : public trainer::TrainerCallback {
 public:
  explicit SkipRecorder(std::shared_ptr<int64_t> spikes) : spikes_(std::move(spikes)) {}
  std::string Name() const override { return "SkipRecorder"; }
  absl::Status OnStepEnd(const trainer::Event& e) override {
    const double lr = e.context.lr_scheduler->LastLr().front();
    spiked.push_back(*spikes_ > seen_);
    lr_moved.push_back(lr != last_lr_);
    steps.push_back(e.state.global_step);
    seen_ = *spikes_;
    last_lr_ = lr;
    return absl::OkStatus();
  }
  std::vector<bool> spiked, lr_moved;
  std::vector<int64_t> steps;

 private:
  std::shared_ptr<int64_t> spikes_;
  int64_t seen_ = 0;
  double last_lr_ = 0;  // the schedule's lr before step 1 (warmup from 0)
};

TEST(PrecisionResumeTest, SkippedStepsAreExactlyTheSpikedWindows) {
  auto spikes = std::make_shared<int64_t>(0);
  auto recorder = std::make_shared<SkipRecorder>(spikes);
  auto t = MakeResumeTrainer(Dir("skips"), {recorder}, "no", 500, [&](trainer::TrainerOptions& o) {
    Fp16Scaler(o);
    o.model_init = [spikes]() -> absl::StatusOr<std::shared_ptr<trainer::Model>> {
      return MakeDropoutClassifier(/*inf_loss_token=*/13, spikes);
    };
  });
  ASSERT_OK(t.status());
  ASSERT_OK((*t)->Train().status());
  ASSERT_EQ(recorder->steps.size(), 15u);
  int skipped = 0;
  for (size_t i = 0; i < recorder->steps.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(recorder->steps[i], static_cast<int64_t>(i) + 1);  // global_step always advances
    // The first step runs at lr 0 (warmup) and leaves it 0 only if skipped; every other step
    // moves the linear schedule.
    EXPECT_EQ(recorder->lr_moved[i], !recorder->spiked[i]);
    skipped += recorder->spiked[i];
  }
  EXPECT_GT(skipped, 0);
  EXPECT_LT(skipped, 15);
}

TEST(PrecisionResumeTest, ScalerFileOnlyWithAGradScaler) {
  const std::string dir = Dir("scaler_file");
  auto t = MakeResumeTrainer(dir, {std::make_shared<StopAfterSave>(6)}, "steps", 3, Fp16Scaler);
  ASSERT_OK(t.status());
  ASSERT_OK((*t)->Train().status());
  EXPECT_TRUE(std::filesystem::exists(dir + "/checkpoint-6/scaler.pt"));
  EXPECT_TRUE(std::filesystem::exists(dir + "/checkpoint-3/scaler.pt"));
  // Without a GradScaler there is no scaler.pt (as HF's folders).
  const std::string plain_dir = Dir("no_scaler");
  auto plain = MakeResumeTrainer(plain_dir, {std::make_shared<StopAfterSave>(3)});
  ASSERT_OK(plain.status());
  ASSERT_OK((*plain)->Train().status());
  EXPECT_TRUE(std::filesystem::exists(plain_dir + "/checkpoint-3/optimizer.pt"));
  EXPECT_FALSE(std::filesystem::exists(plain_dir + "/checkpoint-3/scaler.pt"));
}

}  // namespace
}  // namespace loom::tests
