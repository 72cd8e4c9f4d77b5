// Shared pieces of the stop/resume and crash tests (exact continuation): a small
// classifier with dropout, a fixed dataset, the TrainingArguments of the runs, and a byte
// digest of everything that must match between an uninterrupted and a resumed run.
//
// The run: 3 epochs over 41 examples in batches of 4 (11 micro-batches per epoch, the last
// one partial), gradient accumulation 2, so accumulation windows straddle epochs: steps 1-5
// in epoch 0 (micro-batch 11 left pending), step 6 completes with epoch 1's first
// micro-batch, steps 6-11 end exactly with epoch 1, steps 12-15 in epoch 2 (max_steps 15).
// Shuffling with data_seed 7, dropout 0.2 (the global generator), AdamW with weight decay
// and a linear schedule with warmup, logging every 2 steps, evaluation every 3 steps, saving
// per `save_strategy` / `save_steps`.
//
// Example:
//   ASSIGN_OR_RETURN(auto trainer, MakeResumeTrainer(output_dir, {}));
//   ASSIGN_OR_RETURN(TrainOutput out, trainer->Train());
//   std::string digest = RunDigest(*trainer);
#ifndef LOOM_TESTS_RESUME_RESUME_HARNESS_H_
#define LOOM_TESTS_RESUME_RESUME_HARNESS_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "trainer/trainer.h"

namespace loom::tests {

// The run's model: embedding (20 x 8), dropout 0.2, mean over the sequence, tanh, linear to 3
// classes, cross-entropy. With `inf_loss_token`, a training micro-batch holding that token
// first in a row has an infinite loss (a "loss spike", for the loss-scaling tests), and
// `spikes` (when given) counts those micro-batches.
std::shared_ptr<trainer::Model> MakeDropoutClassifier(
    std::optional<int64_t> inf_loss_token = std::nullopt,
    std::shared_ptr<int64_t> spikes = nullptr);

// Builds the Trainer of the run above writing into `output_dir`; `callbacks` are added.
absl::StatusOr<std::unique_ptr<trainer::Trainer>> MakeResumeTrainer(
    const std::string& output_dir, std::vector<std::shared_ptr<trainer::TrainerCallback>> callbacks,
    const std::string& save_strategy = "steps", int64_t save_steps = 3,
    const std::function<void(trainer::TrainerOptions&)>& customize = nullptr);

// The raw bytes of every parameter and every optimizer state tensor (in parameter order),
// the lr scheduler's last lrs, and the log history without wall-clock values (*_runtime,
// *_per_second), as one string: equal digests mean bit-identical training state.
std::string RunDigest(trainer::Trainer& trainer);

// Stops training right after the checkpoint of `step` is written (a "crash" at that point).
class StopAfterSave : public trainer::TrainerCallback {
 public:
  explicit StopAfterSave(int64_t step) : step_(step) {}
  std::string Name() const override { return "StopAfterSave"; }
  absl::Status OnSave(const trainer::Event& e) override {
    if (e.state.global_step == step_) e.control.should_training_stop = true;
    return absl::OkStatus();
  }

 private:
  int64_t step_;
};

}  // namespace loom::tests

#endif  // LOOM_TESTS_RESUME_RESUME_HARNESS_H_
