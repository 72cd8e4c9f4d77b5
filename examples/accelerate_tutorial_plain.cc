// The 🤗 Accelerate tutorial's training loop (transformers docs, "Distributed training with
// 🤗 Accelerate", accelerate 0.27) in C++, twice:
// accelerate_tutorial_plain.cc is the single-process loop, accelerate_tutorial.cc the same
// loop with loom's Accelerator — exactly the tutorial's four changes (include, create,
// prepare instead of the device moves, Backward instead of backward), which
// tests/accelerate:tutorial_diff_test checks. BERT sequence classification on the GLUE-format
// demo data, AdamW lr 3e-5, a linear schedule, 3 epochs, a progress bar; after each epoch the
// mean training loss and the evaluation accuracy (the evaluation of the transformers tutorial
// "Fine-tune a pretrained model"; given the Accelerator, it gathers predictions across processes:
// the one change beyond the tutorial's four).
//
//   ./bazelw run //examples:accelerate_tutorial
//   ./bazelw run //tools:launch -- --nproc_per_node 2 //examples:accelerate_tutorial
#include <torch/cuda.h>
#include <torch/optim/adamw.h>

#include <iostream>
#include <memory>
#include <optional>

#include "base/status_macros.h"
#include "data/data_loader.h"
#include "data/sampler.h"
#include "examples/tutorial_setup.h"
#include "logging/process_logging.h"
#include "logging/progress.h"
#include "optim/lr_scheduler.h"

namespace loom::examples {

absl::Status Main(const ExampleFlags& flags) {
  ASSIGN_OR_RETURN(ExampleData datasets, LoadExampleData(flags));
  ASSIGN_OR_RETURN(std::shared_ptr<data::DataLoader> train_dataloader,
                   data::DataLoader::Create(
                       data::DataLoaderOptions().set_batch_size(flags.batch_size), datasets.train,
                       std::make_unique<data::RandomSampler>(datasets.train->Size(), flags.seed),
                       datasets.collator));
  ASSIGN_OR_RETURN(std::shared_ptr<data::DataLoader> eval_dataloader,
                   data::DataLoader::Create(
                       data::DataLoaderOptions().set_batch_size(flags.batch_size), datasets.eval,
                       std::make_unique<data::SequentialSampler>(datasets.eval->Size()),
                       datasets.collator));

  ASSIGN_OR_RETURN(std::shared_ptr<modeling::Model> model, LoadExampleModel(flags, 2));
  std::shared_ptr<torch::optim::Optimizer> optimizer = std::make_shared<torch::optim::AdamW>(
      model->parameters(), torch::optim::AdamWOptions(3e-5));

  const int num_epochs = flags.num_epochs;
  const int64_t num_training_steps = num_epochs * train_dataloader->NumBatches().value();
  ASSIGN_OR_RETURN(std::shared_ptr<optim::LrScheduler> lr_scheduler,
                   optim::GetScheduler("linear", optimizer.get(), 0, num_training_steps));

  const torch::Device device = torch::cuda::is_available() ? torch::kCUDA : torch::kCPU;
  model->to(device);

  logging::ProgressBar progress_bar(logging::ProgressOptions{.total = num_training_steps});
  for (int epoch = 0; epoch < num_epochs; ++epoch) {
    model->train();
    double loss_sum = 0;
    int64_t steps = 0;
    ASSIGN_OR_RETURN(std::unique_ptr<data::BatchIterator> batches, train_dataloader->Epoch(epoch));
    while (true) {
      ASSIGN_OR_RETURN(std::optional<data::Batch> batch, batches->Next());
      if (!batch) break;
      for (auto& [name, tensor] : *batch) tensor = tensor.to(device);
      modeling::ModelOutput outputs = model->Forward(*batch);
      at::Tensor loss = outputs.loss;
      loss.backward();

      optimizer->step();
      lr_scheduler->Step();
      optimizer->zero_grad();
      progress_bar.Update(1);
      loss_sum += loss.item<double>();
      ++steps;
    }
    ASSIGN_OR_RETURN(double accuracy, EvaluateAccuracy(*model, *eval_dataloader));
    PrintEpochMetrics(epoch, steps > 0 ? loss_sum / steps : 0.0, accuracy);
  }
  return SaveForComparison(flags, model);
}

}  // namespace loom::examples

int main(int argc, char** argv) {
  return loom::examples::ExampleMain(argc, argv, loom::examples::Main);
}
