// run_synthetic: trains and evaluates a small classifier on a generated task, end to end
// through loom's Trainer, with HF's command line (the shape of HF's run_glue.py; the real
// script is //examples/glue:run_glue).
//
//   ./bazelw run //examples/synthetic:run_synthetic -- --output_dir /tmp/loom_demo
//       --do_train --do_eval --num_train_epochs 3 --learning_rate 1e-2 --logging_steps 16
//   (one command line)
//
// Writes the final model (model.safetensors, training_args.bin), {train,eval,all}_results.json
// and trainer_state.json into output_dir, TensorBoard events in logging_dir, and checkpoint-N
// folders per save_strategy. Rerunning the same command resumes from the newest checkpoint
// (HF's scripts; --overwrite_output_dir starts over). Exit status 2 for bad arguments,
// 1 when training fails.
#include <unistd.h>

#include <cstdlib>
#include <iostream>

#include "absl/status/status.h"
#include "args/parser.h"
#include "args/training_args.h"
#include "base/error_line.h"
#include "base/file_util.h"
#include "base/status_macros.h"
#include "examples/script_resume.h"
#include "examples/synthetic/synthetic_args.pb.h"
#include "examples/synthetic/synthetic_task.h"
#include "logging/process_logging.h"
#include "trainer/trainer.h"

namespace loom::examples::synthetic {
namespace {

using trainer::EvalPrediction;
using trainer::Metrics;
using trainer::Model;
using trainer::PredictionOutput;
using trainer::ResumeFrom;
using trainer::Trainer;
using trainer::TrainerOptions;
using trainer::TrainOutput;

absl::StatusOr<Metrics> Accuracy(const EvalPrediction& p) {
  if (p.predictions.empty() || p.label_ids.empty()) {
    return absl::InvalidArgumentError("accuracy needs logits and labels");
  }
  at::Tensor predicted = p.predictions.front().argmax(-1);
  Metrics m = Metrics::object();
  m["accuracy"] = predicted.eq(p.label_ids.front()).to(at::kDouble).mean().item<double>();
  return m;
}

absl::Status Run(const args::TrainingArguments& targs, const SyntheticArguments& sargs) {
  SyntheticTaskOptions task;
  task.set_seq_len(sargs.seq_len())
      .set_vocab_size(sargs.vocab_size())
      .set_hidden_size(sargs.hidden_size())
      .set_num_labels(sargs.num_labels());
  TrainerOptions options;
  options.args = targs;
  ASSIGN_OR_RETURN(options.train_dataset,
                   MakeSyntheticDataset(SyntheticTaskOptions(task)
                                            .set_num_examples(sargs.num_train_examples())
                                            .set_seed(static_cast<uint64_t>(targs.seed()))));
  ASSIGN_OR_RETURN(options.eval_dataset,
                   MakeSyntheticDataset(SyntheticTaskOptions(task)
                                            .set_num_examples(sargs.num_eval_examples())
                                            .set_seed(static_cast<uint64_t>(targs.seed()) + 1)));
  // model_init: the Trainer seeds the generators first, so the initial weights follow --seed.
  options.model_init = [task]() -> absl::StatusOr<std::shared_ptr<Model>> {
    return std::make_shared<BagOfEmbeddingsClassifier>(task);
  };
  options.compute_metrics = Accuracy;
  ASSIGN_OR_RETURN(std::unique_ptr<Trainer> trainer, Trainer::Create(std::move(options)));
  if (targs.do_train()) {
    // HF's scripts: rerunning the same command resumes from the newest checkpoint.
    ASSIGN_OR_RETURN(std::optional<ResumeFrom> resume, ResumeFromArgs(targs));
    ASSIGN_OR_RETURN(TrainOutput result, trainer->Train(resume));
    result.metrics["train_samples"] = sargs.num_train_examples();
    RETURN_IF_ERROR(trainer->SaveModel());
    trainer->LogMetrics("train", result.metrics);
    RETURN_IF_ERROR(trainer->SaveMetrics("train", result.metrics));
    RETURN_IF_ERROR(trainer->SaveState());
  }
  if (targs.do_eval()) {
    ASSIGN_OR_RETURN(Metrics metrics, trainer->Evaluate());
    metrics["eval_samples"] = sargs.num_eval_examples();
    trainer->LogMetrics("eval", metrics);
    RETURN_IF_ERROR(trainer->SaveMetrics("eval", metrics));
  }
  if (targs.do_predict()) {
    // HF run_glue: predict_results.txt ("index\tprediction", the argmax class) from the main
    // process; here the evaluation set stands in for a test set.
    ASSIGN_OR_RETURN(std::shared_ptr<const data::Dataset> test,
                     MakeSyntheticDataset(SyntheticTaskOptions(task)
                                              .set_num_examples(sargs.num_eval_examples())
                                              .set_seed(static_cast<uint64_t>(targs.seed()) + 1)));
    ASSIGN_OR_RETURN(PredictionOutput out, trainer->Predict(test));
    if (trainer->is_world_process_zero() && !out.predictions.empty()) {
      const at::Tensor predicted = out.predictions.front().argmax(-1);
      std::string text = "index\tprediction\n";
      for (int64_t i = 0; i < predicted.size(0); ++i) {
        text += std::to_string(i) + "\t" + std::to_string(predicted[i].item<int64_t>()) + "\n";
      }
      RETURN_IF_ERROR(base::WriteFileAtomically(targs.output_dir() + "/predict_results.txt", text));
    }
  }
  return absl::OkStatus();
}

}  // namespace
}  // namespace loom::examples::synthetic

int main(int argc, char** argv) {
  loom::logging::InitProcessLogging(argv[0]);
  // `bazel run` starts us in the runfiles tree; relative paths are the user's.
  if (const char* wd = std::getenv("BUILD_WORKING_DIRECTORY")) {
    if (::chdir(wd) != 0) std::cerr << "run_synthetic: cannot enter " << wd << "\n";
  }
  loom::args::TrainingArguments targs;
  loom::examples::synthetic::SyntheticArguments sargs;
  loom::args::ArgParser parser(
      {.program = "run_synthetic",
       .description = "Trains a small classifier on a generated task with loom's Trainer."});
  parser.AddGroup("TrainingArguments", &targs).AddGroup("SyntheticArguments", &sargs);
  if (absl::Status s = parser.Parse(argc, argv); !s.ok()) {
    loom::base::PrintErrorLine("run_synthetic", s.message());
    return 2;
  }
  if (parser.help_requested()) {
    std::cout << parser.Help();
    return 0;
  }
  if (absl::Status s = loom::examples::synthetic::Run(targs, sargs); !s.ok()) {
    loom::base::PrintErrorLine("run_synthetic", s.message());
    return absl::IsInvalidArgument(s) ? 2 : 1;
  }
  return 0;
}
