// One process of tests/accelerate's multi-process checks (run under //tools:launch, or alone):
//   accelerate_worker gather OUT_FILE [N]
//     N examples (default 37) {"x": i, "labels": i % 3} in a sequential loader of batch 8,
//     prepared; every batch's "x" through GatherForMetrics and through Gather. Rank 0 writes
//     "metrics: <the GatherForMetrics values, space-separated>" and "gather: <count>" lines.
//   accelerate_worker accumulate OUT_DIR GA MICRO_BATCH
//     A linear regression model and AdamW, 64 examples, Accumulate() with GA, 2 epochs of
//     micro-batches of MICRO_BATCH per rank. After each micro-step rank 0 appends
//     "<micro-step> <sync 0/1> <DDP windows reduced> <DDP bucket all-reduces>" to
//     OUT_DIR/comm.txt, and at the end writes OUT_DIR/model.safetensors.
//   accelerate_worker byhand OUT_DIR GA BATCH
//     One process, no Accelerator: the same model, data and optimizer with batches of BATCH
//     (the global batch), loss / GA backward per micro-batch, step and zero_grad every GA
//     micro-batches (accumulation written by hand); OUT_DIR/model.safetensors.
#include <torch/torch.h>

#include <filesystem>
#include <fstream>
#include <iostream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "accelerate/accelerator.h"
#include "base/status_macros.h"
#include "checkpoint/model_weights.h"
#include "checkpoint/module_state.h"
#include "data/collator.h"
#include "data/data_loader.h"
#include "data/dataset.h"
#include "data/sampler.h"
#include "modeling/testing_models.h"
#include "sharding/replicated.h"

namespace loom {
namespace {

// The same weights in every process.
std::shared_ptr<modeling::Model> NewRegressor() {
  torch::manual_seed(0);
  return std::make_shared<modeling::testing::LinearRegressor>(4);
}

std::shared_ptr<data::Dataset> RegressionData() {
  std::vector<data::Example> examples;
  at::Generator g = at::detail::createCPUGenerator(7);
  at::Tensor x = at::randn({64, 4}, g);
  at::Tensor y = x.matmul(at::tensor({1.0f, -2.0f, 0.5f, 3.0f})) + 0.1;
  for (int64_t i = 0; i < 64; ++i) examples.push_back({{"x", x[i]}, {"labels", y[i]}});
  return std::make_shared<data::ExampleListDataset>(std::move(examples));
}

absl::Status Save(const std::string& dir, const modeling::Model& model) {
  std::filesystem::create_directories(dir);
  return checkpoint::SaveModelWeights(dir, checkpoint::ModuleStateDict(model)).status();
}

absl::Status Gather(const std::string& out_file, int64_t n) {
  ASSIGN_OR_RETURN(auto accelerator, accelerate::Accelerator::Create());
  std::vector<data::Example> examples;
  for (int64_t i = 0; i < n; ++i) {
    examples.push_back({{"x", at::scalar_tensor(i, at::kLong)},
                        {"labels", at::scalar_tensor(i % 3, at::kLong)}});
  }
  auto dataset = std::make_shared<data::ExampleListDataset>(std::move(examples));
  ASSIGN_OR_RETURN(std::shared_ptr<data::DataLoader> loader,
                   data::DataLoader::Create(data::DataLoaderOptions().set_batch_size(8), dataset,
                                            std::make_unique<data::SequentialSampler>(n),
                                            std::make_shared<data::DefaultCollator>()));
  RETURN_IF_ERROR(accelerator->Prepare(loader));
  std::string metrics;
  int64_t gathered = 0;
  ASSIGN_OR_RETURN(auto batches, loader->Epoch(0));
  while (true) {
    ASSIGN_OR_RETURN(std::optional<data::Batch> batch, batches->Next());
    if (!batch) break;
    ASSIGN_OR_RETURN(at::Tensor all, accelerator->Gather(batch->at("x")));
    gathered += all.size(0);
    ASSIGN_OR_RETURN(at::Tensor kept, accelerator->GatherForMetrics(batch->at("x")));
    for (int64_t i = 0; i < kept.size(0); ++i) {
      absl::StrAppend(&metrics, metrics.empty() ? "" : " ", kept[i].item<int64_t>());
    }
  }
  if (accelerator->IsMainProcess()) {
    std::ofstream(out_file) << "metrics: " << metrics << "\ngather: " << gathered << "\n";
  }
  return accelerator->WaitForEveryone();
}

absl::Status Accumulate(const std::string& out_dir, int ga, int64_t micro_batch) {
  ASSIGN_OR_RETURN(auto accelerator, accelerate::Accelerator::Create(
                                         accelerate::AcceleratorOptions()
                                             .set_gradient_accumulation_steps(ga)));
  std::shared_ptr<modeling::Model> model = NewRegressor();
  std::shared_ptr<torch::optim::Optimizer> optimizer = std::make_shared<torch::optim::AdamW>(
      model->parameters(), torch::optim::AdamWOptions(1e-2));
  ASSIGN_OR_RETURN(std::shared_ptr<data::DataLoader> loader,
                   data::DataLoader::Create(
                       data::DataLoaderOptions().set_batch_size(micro_batch), RegressionData(),
                       std::make_unique<data::RandomSampler>(64, 3),
                       std::make_shared<data::DefaultCollator>()));
  RETURN_IF_ERROR(accelerator->Prepare(model, optimizer, loader));
  const auto* replicated =
      dynamic_cast<const sharding::ReplicatedStrategy*>(accelerator->state().strategy.get());
  std::ofstream comm;
  if (accelerator->IsMainProcess()) {
    std::filesystem::create_directories(out_dir);
    comm.open(out_dir + "/comm.txt");
  }
  int64_t micro_step = 0;
  model->train();
  for (int epoch = 0; epoch < 2; ++epoch) {
    ASSIGN_OR_RETURN(auto batches, loader->Epoch(epoch));
    while (true) {
      ASSIGN_OR_RETURN(std::optional<data::Batch> batch, batches->Next());
      if (!batch) break;
      accelerate::AccumulateScope scope = accelerator->Accumulate();
      modeling::ModelOutput out = model->Forward(*batch);
      RETURN_IF_ERROR(accelerator->Backward(out.loss));
      optimizer->step();
      optimizer->zero_grad();
      ++micro_step;
      const distributed::DdpStats* stats = replicated ? replicated->ddp_stats() : nullptr;
      if (comm.is_open()) {
        comm << micro_step << " " << accelerator->SyncGradients() << " "
             << (stats ? stats->syncs : -1) << " " << (stats ? stats->allreduces : -1) << "\n";
      }
    }
  }
  if (accelerator->IsMainProcess()) RETURN_IF_ERROR(Save(out_dir, *accelerator->UnwrapModel(model)));
  return accelerator->WaitForEveryone();
}

absl::Status ByHand(const std::string& out_dir, int ga, int64_t batch_size) {
  std::shared_ptr<modeling::Model> model = NewRegressor();
  torch::optim::AdamW optimizer(model->parameters(), torch::optim::AdamWOptions(1e-2));
  ASSIGN_OR_RETURN(std::shared_ptr<data::DataLoader> loader,
                   data::DataLoader::Create(
                       data::DataLoaderOptions().set_batch_size(batch_size), RegressionData(),
                       std::make_unique<data::RandomSampler>(64, 3),
                       std::make_shared<data::DefaultCollator>()));
  model->train();
  for (int epoch = 0; epoch < 2; ++epoch) {
    ASSIGN_OR_RETURN(auto batches, loader->Epoch(epoch));
    int64_t k = 0;
    const int64_t n = loader->NumBatches().value();
    while (true) {
      ASSIGN_OR_RETURN(std::optional<data::Batch> batch, batches->Next());
      if (!batch) break;
      (model->Forward(*batch).loss / static_cast<double>(ga)).backward();
      if (++k % ga == 0 || k == n) {
        optimizer.step();
        optimizer.zero_grad();
      }
    }
  }
  return Save(out_dir, *model);
}

absl::Status Run(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  auto arg = [&](int i, int64_t fallback) {
    int64_t v = fallback;
    if (argc > i) (void)absl::SimpleAtoi(argv[i], &v);
    return v;
  };
  if (mode == "gather" && argc > 2) return Gather(argv[2], arg(3, 37));
  if (mode == "accumulate" && argc > 4) {
    return Accumulate(argv[2], static_cast<int>(arg(3, 4)), arg(4, 4));
  }
  if (mode == "byhand" && argc > 4) return ByHand(argv[2], static_cast<int>(arg(3, 4)), arg(4, 8));
  return absl::InvalidArgumentError("usage: accelerate_worker gather|accumulate|byhand ...");
}

}  // namespace
}  // namespace loom

int main(int argc, char** argv) {
  absl::Status s = loom::Run(argc, argv);
  if (!s.ok()) {
    std::cerr << "accelerate_worker: " << s.message() << "\n";
    return 1;
  }
  return 0;
}
