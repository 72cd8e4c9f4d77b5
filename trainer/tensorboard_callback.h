// TensorBoardCallback: HF's integration callback for report_to "tensorboard" (transformers
// 4.41 integrations TensorBoardCallback). On the world main process, every on_log writes the
// numeric logs as scalars at state.global_step into an event file under args.logging_dir, with HF's
// rewrite_logs tags: "eval_x" -> "eval/x", "test_x" -> "test/x", anything else -> "train/x";
// the sink is flushed after each log and closed at on_train_end (reopened by a later log).
// Non-numeric values are skipped with a warning, as HF does. Unlike HF, the "args" text
// summary is not written (the sink writes scalars only).
//
// Example:
//   trainer.AddCallback(std::make_shared<TensorBoardCallback>());
#ifndef LOOM_TRAINER_TENSORBOARD_CALLBACK_H_
#define LOOM_TRAINER_TENSORBOARD_CALLBACK_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "logging/metrics_sink.h"
#include "trainer/callback.h"

namespace loom::trainer {

class TensorBoardCallback : public TrainerCallback {
 public:
  using SinkFactory =
      std::function<absl::StatusOr<std::unique_ptr<logging::MetricsSink>>(const std::string&)>;
  // `factory` opens the sink for a log dir; the default writes TensorBoard event files.
  explicit TensorBoardCallback(SinkFactory factory = nullptr);

  std::string Name() const override { return "TensorBoardCallback"; }
  absl::Status OnTrainBegin(const Event& e) override;
  absl::Status OnLog(const Event& e) override;
  absl::Status OnTrainEnd(const Event& e) override;

 private:
  absl::Status Open(const args::TrainingArguments& args);

  SinkFactory factory_;
  std::unique_ptr<logging::MetricsSink> sink_;
};

// HF rewrite_logs: the TensorBoard tag of a log key.
std::string TensorBoardTag(const std::string& key);

}  // namespace loom::trainer

#endif  // LOOM_TRAINER_TENSORBOARD_CALLBACK_H_
