// The Trainer's default callbacks (transformers 4.41
// trainer_callback.py): DefaultFlowCallback decides when to log, evaluate, save and stop;
// PrinterCallback prints logs (disable_tqdm); ProgressCallback draws the training and
// prediction progress bars and writes logs above them; EarlyStoppingCallback stops training
// when the tracked metric stops improving.
//
// DefaultFlowCallback rules (4.41, with one later fix): on_step_end sets should_log at step 1
// with logging_first_step and every logging_steps steps ("steps" strategy); should_evaluate
// every eval_steps steps once global_step >= eval_delay; should_save every save_steps steps;
// at global_step >= max_steps should_training_stop, and should_save when the save strategy is
// "steps" (the final checkpoint is never lost; with "epoch" the epoch end saves it, so it is
// not written twice as 4.41 did). on_epoch_end sets should_log / should_save for "epoch"
// strategies and should_evaluate once epoch >= eval_delay.
//
// Example:
//   handler.AddCallback(std::make_shared<DefaultFlowCallback>());
//   handler.AddCallback(std::make_shared<EarlyStoppingCallback>(/*patience=*/3, /*threshold=*/0));
#ifndef LOOM_TRAINER_FLOW_CALLBACKS_H_
#define LOOM_TRAINER_FLOW_CALLBACKS_H_

#include <memory>
#include <ostream>
#include <string>

#include "logging/progress.h"
#include "trainer/callback.h"

namespace loom::trainer {

class DefaultFlowCallback : public TrainerCallback {
 public:
  std::string Name() const override { return "DefaultFlowCallback"; }
  absl::Status OnStepEnd(const Event& e) override;
  absl::Status OnEpochEnd(const Event& e) override;
};

// Prints each log (without total_flos) as Python's str(dict) on the local main process.
class PrinterCallback : public TrainerCallback {
 public:
  explicit PrinterCallback(std::ostream* out = nullptr) : out_(out) {}
  std::string Name() const override { return "PrinterCallback"; }
  absl::Status OnLog(const Event& e) override;

 private:
  std::ostream* out_;
};

// DeepSpeed's engine progress line under --deepspeed, every `steps_per_print` optimizer steps
// on the world's main process: "step=N, skipped=S, lr=[...], mom=[...]" (lr per group; mom the
// groups' betas, or momentum for SGD; skipped: steps an overflow skipped, none in fp32).
class DeepSpeedProgressCallback : public TrainerCallback {
 public:
  explicit DeepSpeedProgressCallback(int64_t steps_per_print) : every_(steps_per_print) {}
  std::string Name() const override { return "DeepSpeedProgressCallback"; }
  absl::Status OnStepEnd(const Event& e) override;
  void set_steps_per_print(int64_t n) { every_ = n; }
  // The line for the optimizer as it stands.
  static std::string Line(int64_t step, int64_t skipped, const torch::optim::Optimizer& opt);

 private:
  int64_t every_;
};

class ProgressCallback : public TrainerCallback {
 public:
  // `options` is the template for both bars (output stream, TTY, clock); total and
  // description are set per bar.
  explicit ProgressCallback(logging::ProgressOptions options = {}) : options_(options) {}
  std::string Name() const override { return "ProgressCallback"; }
  absl::Status OnTrainBegin(const Event& e) override;
  absl::Status OnStepEnd(const Event& e) override;
  absl::Status OnPredictionStep(const Event& e) override;
  absl::Status OnEvaluate(const Event& e) override;
  absl::Status OnPredict(const Event& e) override;
  absl::Status OnLog(const Event& e) override;
  absl::Status OnTrainEnd(const Event& e) override;

 private:
  logging::ProgressOptions options_;
  std::unique_ptr<logging::ProgressBar> training_bar_;
  std::unique_ptr<logging::ProgressBar> prediction_bar_;
  int64_t current_step_ = 0;
};

// HF EarlyStoppingCallback: needs load_best_model_at_end, metric_for_best_model and an
// evaluation strategy (FailedPrecondition at on_train_begin otherwise). After each evaluation
// the patience counter resets when the metric improves on state.best_metric by more than
// `threshold` (greater or smaller per greater_is_better), else grows; at `patience` it sets
// should_training_stop.
class EarlyStoppingCallback : public TrainerCallback {
 public:
  explicit EarlyStoppingCallback(int patience = 1, double threshold = 0.0)
      : patience_(patience), threshold_(threshold) {}
  std::string Name() const override { return "EarlyStoppingCallback"; }
  absl::Status OnTrainBegin(const Event& e) override;
  absl::Status OnEvaluate(const Event& e) override;
  int patience_counter() const { return counter_; }
  // {"args": {"early_stopping_patience", "early_stopping_threshold"},
  //  "attributes": {"early_stopping_patience_counter"}} (HF 4.41).
  std::optional<Metrics> ExportState() const override;
  absl::Status RestoreState(const Metrics& state) override;

 private:
  int patience_;
  double threshold_;
  int counter_ = 0;
};

}  // namespace loom::trainer

#endif  // LOOM_TRAINER_FLOW_CALLBACKS_H_
