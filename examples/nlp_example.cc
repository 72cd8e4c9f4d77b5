// accelerate's complete_nlp_example in C++ on loom's Accelerator: BERT sequence
// classification on the GLUE-format demo data with gradient accumulation (Accumulate), mixed
// precision (--mixed_precision, else the launcher's), evaluation gathered across processes
// with GatherForMetrics, checkpoints with SaveState (--checkpointing_steps N: output_dir/step_N)
// and resuming with LoadState + SkipFirstBatches (--resume_from_checkpoint output_dir/step_N),
// and trackers (--with_tracking: per-step loss and per-epoch accuracy in
// output_dir/nlp_example/metrics.jsonl and TensorBoard events).
//
//   ./bazelw run //examples:nlp_example -- --output_dir /tmp/nlp --gradient_accumulation_steps 2
//   ./bazelw run //tools:launch -- --nproc_per_node 2 //examples:nlp_example --output_dir ...
#include <torch/optim/adamw.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "accelerate/accelerator.h"
#include "base/file_util.h"
#include "base/status_macros.h"
#include "data/data_loader.h"
#include "data/sampler.h"
#include "examples/tutorial_setup.h"
#include "logging/process_logging.h"
#include "optim/lr_scheduler.h"

namespace loom::examples {
namespace {

// "step_<N>" -> N (accelerate's training_difference parsing).
absl::StatusOr<int64_t> ResumeStep(const std::string& folder) {
  const std::string name = std::filesystem::path(folder).filename().string();
  int64_t step = 0;
  if (name.rfind("step_", 0) != 0 || !absl::SimpleAtoi(name.substr(5), &step)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--resume_from_checkpoint ", folder, ": expected a folder named step_<N> that "
        "--checkpointing_steps wrote"));
  }
  return step;
}

// What the training loop works on, after Accelerator::Prepare.
struct Prepared {
  std::shared_ptr<data::DataLoader> train_dataloader;
  std::shared_ptr<data::DataLoader> eval_dataloader;
  std::shared_ptr<modeling::Model> model;
  std::shared_ptr<torch::optim::Optimizer> optimizer;
  std::shared_ptr<optim::LrScheduler> lr_scheduler;
};

// Where a resumed run starts: the epoch, and the batches of it already trained.
struct ResumePoint {
  int starting_epoch = 0;
  std::optional<int64_t> resume_step;
};

// The Accelerator with the run's accumulation, precision and trackers, seeded.
absl::StatusOr<std::unique_ptr<accelerate::Accelerator>> CreateAccelerator(
    const ExampleFlags& flags) {
  accelerate::AcceleratorOptions options;
  options.set_gradient_accumulation_steps(flags.gradient_accumulation_steps)
      .set_project_dir(flags.output_dir);
  if (flags.mixed_precision) options.set_mixed_precision(*flags.mixed_precision);
  if (flags.with_tracking) options.set_log_with({"all"});
  ASSIGN_OR_RETURN(std::unique_ptr<accelerate::Accelerator> accelerator,
                   accelerate::Accelerator::Create(std::move(options)));
  RETURN_IF_ERROR(accelerator->SetSeed(flags.seed));
  if (flags.with_tracking) {
    RETURN_IF_ERROR(accelerator->InitTrackers(
        "nlp_example", {{"lr", LearningRate(flags)}, {"num_epochs", flags.num_epochs},
                        {"seed", static_cast<double>(flags.seed)},
                        {"batch_size", static_cast<double>(flags.batch_size)}}));
  }
  return accelerator;
}

// Data loaders, model, AdamW and the linear schedule, prepared by the Accelerator.
absl::StatusOr<Prepared> PrepareTraining(const ExampleFlags& flags,
                                         accelerate::Accelerator& accelerator) {
  Prepared p;
  ASSIGN_OR_RETURN(ExampleData datasets, LoadExampleData(flags));
  ASSIGN_OR_RETURN(p.train_dataloader,
                   data::DataLoader::Create(
                       data::DataLoaderOptions().set_batch_size(flags.batch_size), datasets.train,
                       std::make_unique<data::RandomSampler>(datasets.train->Size(), flags.seed),
                       datasets.collator));
  ASSIGN_OR_RETURN(
      p.eval_dataloader,
      data::DataLoader::Create(
          data::DataLoaderOptions().set_batch_size(flags.batch_size), datasets.eval,
          std::make_unique<data::SequentialSampler>(datasets.eval->Size()), datasets.collator));
  ASSIGN_OR_RETURN(p.model, LoadExampleModel(flags, 2));
  p.optimizer = std::make_shared<torch::optim::AdamW>(
      p.model->parameters(), torch::optim::AdamWOptions(LearningRate(flags)));
  // Sized by the loader before it is sharded (accelerate steps a prepared schedule once per
  // process at each optimizer step).
  ASSIGN_OR_RETURN(p.lr_scheduler,
                   optim::GetScheduler("linear", p.optimizer.get(), flags.num_warmup_steps,
                                       p.train_dataloader->NumBatches().value() * flags.num_epochs /
                                           flags.gradient_accumulation_steps));
  RETURN_IF_ERROR(accelerator.Prepare(p.model, p.optimizer, p.train_dataloader, p.eval_dataloader,
                                      p.lr_scheduler));
  return p;
}

// --resume_from_checkpoint: LoadState, and where in the epochs the saved step was.
absl::StatusOr<ResumePoint> ResumeTraining(const ExampleFlags& flags,
                                           accelerate::Accelerator& accelerator,
                                           int64_t steps_per_epoch) {
  ResumePoint resume;
  if (flags.resume_from_checkpoint.empty()) return resume;
  accelerator.Print("Resumed from checkpoint: " + flags.resume_from_checkpoint);
  RETURN_IF_ERROR(accelerator.LoadState(flags.resume_from_checkpoint));
  ASSIGN_OR_RETURN(int64_t step, ResumeStep(flags.resume_from_checkpoint));
  resume.starting_epoch = static_cast<int>(step / steps_per_epoch);
  resume.resume_step = step - resume.starting_epoch * steps_per_epoch;
  return resume;
}

// One training epoch (skipping the resumed batches in the first); SaveState every
// --checkpointing_steps. Returns true when --stop_after_steps was reached.
absl::StatusOr<bool> TrainEpoch(const ExampleFlags& flags, accelerate::Accelerator& accelerator,
                                const Prepared& p, int epoch, const ResumePoint& resume,
                                int64_t steps_per_epoch, int64_t* overall_step) {
  p.model->train();
  std::shared_ptr<data::DataLoader> active_dataloader = p.train_dataloader;
  if (resume.resume_step && epoch == resume.starting_epoch) {
    ASSIGN_OR_RETURN(active_dataloader,
                     accelerator.SkipFirstBatches(p.train_dataloader, *resume.resume_step));
    *overall_step += resume.starting_epoch * steps_per_epoch + *resume.resume_step;
  }
  ASSIGN_OR_RETURN(std::unique_ptr<data::BatchIterator> batches, active_dataloader->Epoch(epoch));
  double loss_sum = 0;
  int64_t loss_count = 0;
  while (true) {
    ASSIGN_OR_RETURN(std::optional<data::Batch> batch, batches->Next());
    if (!batch) break;
    {
      accelerate::AccumulateScope accumulate = accelerator.Accumulate();
      modeling::ModelOutput outputs = p.model->Forward(*batch);
      loss_sum += outputs.loss.item<double>();
      ++loss_count;
      RETURN_IF_ERROR(accelerator.Backward(outputs.loss));
      if (accelerator.SyncGradients()) {
        RETURN_IF_ERROR(accelerator.ClipGradNorm(1.0).status());
      }
      p.optimizer->step();
      p.lr_scheduler->Step();
      p.optimizer->zero_grad();
      *overall_step += 1;
      if (flags.with_tracking) {
        RETURN_IF_ERROR(accelerator.Log({{"loss", outputs.loss.item<double>()}}, *overall_step));
      }
    }
    if (flags.checkpointing_steps > 0 && *overall_step % flags.checkpointing_steps == 0) {
      const std::string folder = absl::StrCat("step_", *overall_step);
      RETURN_IF_ERROR(
          accelerator.SaveState(flags.output_dir.empty() ? folder : flags.output_dir + "/" + folder)
              .status());
    }
    if (flags.stop_after_steps > 0 && *overall_step == flags.stop_after_steps) {
      accelerator.Print(absl::StrCat("stopping after step ", *overall_step));
      return true;
    }
  }
  // The main process's mean training loss over its micro-batches of the epoch.
  accelerator.Print(absl::StrCat("epoch ", epoch, " train loss: ",
                                 loss_count > 0 ? loss_sum / loss_count : 0.0));
  return false;
}

// Accuracy over the evaluation set, gathered across processes (GatherForMetrics); the main
// process writes the gathered predictions to output_dir/predictions_epoch_<N>.txt.
absl::Status EvaluateEpoch(const ExampleFlags& flags, accelerate::Accelerator& accelerator,
                           const Prepared& p, int epoch, int64_t overall_step) {
  p.model->eval();
  int64_t correct = 0, total = 0;
  std::vector<int64_t> all_predictions;
  ASSIGN_OR_RETURN(std::unique_ptr<data::BatchIterator> eval_batches, p.eval_dataloader->Epoch(0));
  while (true) {
    ASSIGN_OR_RETURN(std::optional<data::Batch> batch, eval_batches->Next());
    if (!batch) break;
    at::Tensor predictions;
    {
      torch::NoGradGuard no_grad;
      predictions = p.model->Forward(*batch).Get("logits").argmax(-1);
    }
    ASSIGN_OR_RETURN(at::Tensor gathered_predictions, accelerator.GatherForMetrics(predictions));
    ASSIGN_OR_RETURN(at::Tensor references, accelerator.GatherForMetrics(batch->at("labels")));
    correct += gathered_predictions.eq(references).sum().item<int64_t>();
    total += references.size(0);
    for (int64_t i = 0; i < gathered_predictions.size(0); ++i) {
      all_predictions.push_back(gathered_predictions[i].item<int64_t>());
    }
  }
  const double accuracy = total > 0 ? static_cast<double>(correct) / total : 0.0;
  accelerator.Print(
      absl::StrCat("epoch ", epoch, ": {'accuracy': ", accuracy, "} over ", total, " examples"));
  if (flags.with_tracking) {
    RETURN_IF_ERROR(accelerator.Log({{"accuracy", accuracy}, {"epoch", static_cast<double>(epoch)}},
                                    overall_step));
  }
  if (accelerator.IsMainProcess() && !flags.output_dir.empty()) {
    // The gathered predictions, one per evaluation example, for the tests.
    RETURN_IF_ERROR(base::MakeDirs(flags.output_dir));
    const std::string path = absl::StrCat(flags.output_dir, "/predictions_epoch_", epoch, ".txt");
    std::ofstream out(path);
    for (int64_t prediction : all_predictions) out << prediction << "\n";
    out.close();
    if (!out) return absl::InternalError(absl::StrCat("writing ", path));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status Main(const ExampleFlags& flags) {
  ASSIGN_OR_RETURN(std::unique_ptr<accelerate::Accelerator> accelerator, CreateAccelerator(flags));
  ASSIGN_OR_RETURN(const Prepared prepared, PrepareTraining(flags, *accelerator));
  const int64_t steps_per_epoch = prepared.train_dataloader->NumBatches().value();
  ASSIGN_OR_RETURN(const ResumePoint resume, ResumeTraining(flags, *accelerator, steps_per_epoch));
  int64_t overall_step = 0;
  for (int epoch = resume.starting_epoch; epoch < flags.num_epochs; ++epoch) {
    ASSIGN_OR_RETURN(const bool stopped, TrainEpoch(flags, *accelerator, prepared, epoch, resume,
                                                    steps_per_epoch, &overall_step));
    if (stopped) return accelerator->EndTraining();
    RETURN_IF_ERROR(EvaluateEpoch(flags, *accelerator, prepared, epoch, overall_step));
  }
  RETURN_IF_ERROR(accelerator->EndTraining());
  RETURN_IF_ERROR(accelerator->WaitForEveryone());
  return SaveForComparison(flags, prepared.model);
}

}  // namespace loom::examples

int main(int argc, char** argv) {
  return loom::examples::ExampleMain(argc, argv, loom::examples::Main);
}
