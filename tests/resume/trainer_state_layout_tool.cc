// C++ half of trainer_state_transformers_test.sh: writes one checkpointed run per
// --save_for_transformers_version value for real transformers to read.
//
//   trainer_state_layout_tool DIR
//
// For V in 4.38 and 4.41, DIR/V is a run of the resume harness (resume_harness.h) with an
// evaluation and a checkpoint every step, load_best_model_at_end on "accuracy" (scripted 0.5,
// 0.6, 0.55, 0.55, ... so checkpoint-2 is the best), an EarlyStoppingCallback with patience 3
// (counter 2 after step 4) and a stop right after checkpoint-4's save, then Trainer::SaveState
// (DIR/V/trainer_state.json, HF's trainer.save_state()). Exits non-zero with a message on any
// error.
#include <functional>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "logging/process_logging.h"
#include "tests/resume/resume_harness.h"
#include "trainer/flow_callbacks.h"

namespace loom::tests {
namespace {

// The run's settings beyond the harness's: `version` and the scripted evaluation metric of
// the trainer `*self` points at.
std::function<void(trainer::TrainerOptions&)> Settings(const std::string& version,
                                                       std::shared_ptr<trainer::Trainer*> self) {
  return [version, self](trainer::TrainerOptions& o) {
    o.args.set_eval_steps(1);
    o.args.set_load_best_model_at_end(true);
    o.args.set_metric_for_best_model("accuracy");
    o.args.set_save_for_transformers_version(version);
    o.compute_metrics = [self](const trainer::EvalPrediction&) -> absl::StatusOr<trainer::Metrics> {
      const int64_t step = (*self)->state().global_step;
      trainer::Metrics m = trainer::Metrics::object();
      m["accuracy"] = step == 1 ? 0.5 : step == 2 ? 0.6 : 0.55;
      return m;
    };
  };
}

absl::Status WriteRun(const std::string& output_dir, const std::string& version) {
  auto self = std::make_shared<trainer::Trainer*>(nullptr);
  std::vector<std::shared_ptr<trainer::TrainerCallback>> callbacks = {
      std::make_shared<trainer::EarlyStoppingCallback>(3), std::make_shared<StopAfterSave>(4)};
  ASSIGN_OR_RETURN(std::unique_ptr<trainer::Trainer> t,
                   MakeResumeTrainer(output_dir, callbacks, "steps", 1, Settings(version, self)));
  *self = t.get();
  ASSIGN_OR_RETURN(trainer::TrainOutput out, t->Train());
  if (out.global_step != 4) {
    return absl::InternalError(absl::StrCat("expected a stop at step 4, got ", out.global_step));
  }
  return t->SaveState();
}

}  // namespace
}  // namespace loom::tests

int main(int argc, char** argv) {
  loom::logging::InitProcessLogging(argv[0]);
  if (argc != 2) {
    std::cerr << "usage: trainer_state_layout_tool DIR\n";
    return 2;
  }
  absl::Status status;
  try {
    for (const std::string version : {"4.38", "4.41"}) {
      status = loom::tests::WriteRun(absl::StrCat(argv[1], "/", version), version);
      if (!status.ok()) break;
    }
  } catch (const std::exception& e) {
    status = absl::InternalError(e.what());
  }
  if (!status.ok()) {
    std::cerr << "trainer_state_layout_tool: " << status << "\n";
    return 1;
  }
  return 0;
}
