// accelerator_overhead: what loom's Accelerator costs a training loop in one process — the
// same loop run plain and with the tutorial's four changes (Create, Prepare, Backward), in the
// same process.
//
//   ./bazelw run -c opt //benchmarks:accelerator_overhead
//
// Both sides: BagOfEmbeddingsClassifier (examples/synthetic/synthetic_task.h), a DataLoader
// over the same dataset with the same seeded RandomSampler and collator, AdamW, forward,
// backward, step, zero_grad for kSteps steps. The Accelerator side adds its machinery: the
// prepared model (device move, autocast guard, the strategy's hooks), the prepared optimizer
// (the strategy's step, learning-rate sync), the prepared loader (observer, device collator).
// Rounds alternate the sides; the last line prints plain steps/s over Accelerator steps/s
// inverted (Accelerator / plain, best round of each).
#include <torch/optim/adamw.h>

#include <dlfcn.h>

#include <iostream>
#include <map>

#include "accelerate/accelerator.h"
#include "base/status_macros.h"
#include "benchmark/benchmark.h"
#include "benchmarks/overhead_harness.h"
#include "data/collator.h"
#include "data/data_loader.h"
#include "data/sampler.h"
#include "examples/synthetic/synthetic_task.h"
#include "logging/process_logging.h"

namespace loom::benchmarks {
namespace {

using examples::synthetic::BagOfEmbeddingsClassifier;

constexpr int64_t kSteps = 150;
constexpr int64_t kBatch = kOverheadBatch;


std::shared_ptr<data::DataLoader> Loader() {
  return *data::DataLoader::Create(
      data::DataLoaderOptions().set_batch_size(kBatch).set_drop_last(true), OverheadDataset(),
      std::make_unique<data::RandomSampler>(OverheadDataset()->Size(), 42),
      std::make_shared<data::DefaultCollator>());
}

// `accelerator` null: the plain loop.
absl::Status Loop(accelerate::Accelerator* accelerator) {
  at::manual_seed(42);
  std::shared_ptr<modeling::Model> model =
      std::make_shared<BagOfEmbeddingsClassifier>(OverheadTask());
  std::shared_ptr<torch::optim::Optimizer> optimizer = std::make_shared<torch::optim::AdamW>(
      model->parameters(), torch::optim::AdamWOptions(5e-4));
  std::shared_ptr<data::DataLoader> loader = Loader();
  if (accelerator != nullptr) RETURN_IF_ERROR(accelerator->Prepare(model, optimizer, loader));
  model->train();
  int64_t step = 0;
  for (int64_t epoch = 0; step < kSteps; ++epoch) {
    ASSIGN_OR_RETURN(auto batches, loader->Epoch(epoch));
    while (step < kSteps) {
      ASSIGN_OR_RETURN(std::optional<data::Batch> batch, batches->Next());
      if (!batch) break;
      modeling::ModelOutput out = model->Forward(*batch);
      if (accelerator != nullptr) {
        RETURN_IF_ERROR(accelerator->Backward(out.loss));
      } else {
        out.loss.backward();
      }
      optimizer->step();
      optimizer->zero_grad();
      benchmark::DoNotOptimize(out.loss);
      ++step;
    }
  }
  return absl::OkStatus();
}

void SetBlasThreads(int n) {
  using SetThreads = void (*)(int);
  if (auto set = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"))) {
    set(n);
  }
}

void BM_Plain(benchmark::State& state) {
  for (auto _ : state) {
    if (absl::Status s = Loop(nullptr); !s.ok()) {
      state.SkipWithError(std::string(s.message()).c_str());
      return;
    }
  }
  state.SetItemsProcessed(state.iterations() * kSteps);
}

void BM_Accelerator(benchmark::State& state) {
  for (auto _ : state) {
    const int threads = at::get_num_threads();
    auto accelerator = accelerate::Accelerator::Create();
    // The same threads as the plain side: this compares the loops, not thread defaults.
    at::set_num_threads(threads);
    SetBlasThreads(1);
    if (!accelerator.ok()) {
      state.SkipWithError(std::string(accelerator.status().message()).c_str());
      return;
    }
    if (absl::Status s = Loop(accelerator->get()); !s.ok()) {
      state.SkipWithError(std::string(s.message()).c_str());
      return;
    }
  }
  state.SetItemsProcessed(state.iterations() * kSteps);
}

constexpr int kRounds = 10;


}  // namespace
}  // namespace loom::benchmarks

int main(int argc, char** argv) {
  loom::logging::InitProcessLogging(argv[0]);
  loom::benchmarks::SetBlasThreads(1);  // as trainer_overhead: the loops, not BLAS spinning
  benchmark::Initialize(&argc, argv);
  for (int r = 0; r < loom::benchmarks::kRounds; ++r) {
    benchmark::RegisterBenchmark(("Plain/round:" + std::to_string(r)).c_str(),
                                 loom::benchmarks::BM_Plain)
        ->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);
    benchmark::RegisterBenchmark(("Accelerator/round:" + std::to_string(r)).c_str(),
                                 loom::benchmarks::BM_Accelerator)
        ->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);
  }
  loom::benchmarks::BestRoundReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  const auto& m = reporter.best_;
  if (m.count("Plain") && m.count("Accelerator")) {
    std::cout << "accelerator_overhead: Accelerator steps/s / plain loop steps/s = "
              << m.at("Plain") / m.at("Accelerator") << " (best of " << loom::benchmarks::kRounds
              << " alternating " << loom::benchmarks::kSteps << "-step rounds per side)\n";
  }
  benchmark::Shutdown();
  return 0;
}
