// Trainer::SaveCheckpoint / SaveModel / LoadForResume / FinishCheckpoints (interim: the
// checkpoint folder and file layers of issue 4 are being written; this keeps HF's best-metric
// bookkeeping and writes trainer_state.json + training_args.bin).
#include "absl/strings/str_cat.h"
#include "args/training_args_file.h"
#include "base/file_util.h"
#include "base/status_macros.h"
#include "trainer/trainer.h"

namespace loom::trainer {

absl::Status Trainer::SaveModel(std::optional<std::string> output_dir) {
  return absl::UnimplementedError("SaveModel: model files land with issue 4");
}

absl::Status Trainer::SaveCheckpoint(const Metrics* metrics) {
  state_.total_flos += current_flos_;
  current_flos_ = 0;
  const std::string dir = absl::StrCat(args_.output_dir(), "/checkpoint-", state_.global_step);
  if (metrics != nullptr && !args_.metric_for_best_model().empty()) {
    std::string name = args_.metric_for_best_model();
    if (name.rfind("eval_", 0) != 0) name = "eval_" + name;
    ASSIGN_OR_RETURN(double value, MetricValue(*metrics, name), "--metric_for_best_model");
    const bool better = !state_.best_metric.has_value() ||
                        !state_.best_model_checkpoint.has_value() ||
                        (args_.greater_is_better() ? value > *state_.best_metric
                                                   : value < *state_.best_metric);
    if (better) {
      state_.best_metric = value;
      state_.best_model_checkpoint = dir;
    }
  }
  if (!is_world_process_zero()) return absl::OkStatus();
  RETURN_IF_ERROR(base::MakeDirs(dir));
  RETURN_IF_ERROR(args::SaveTrainingArgs(args_, dir + "/training_args.bin"));
  return state_.SaveToJson(dir + "/trainer_state.json");
}

absl::StatusOr<Trainer::ResumedCheckpoint> Trainer::LoadForResume(const ResumeFrom&, int64_t) {
  return absl::UnimplementedError("resume_from_checkpoint lands with issue 4");
}

absl::Status Trainer::FinishCheckpoints() { return absl::OkStatus(); }

}  // namespace loom::trainer
