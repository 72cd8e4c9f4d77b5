// trainer_overhead: how fast loom's Trainer runs optimizer steps compared with a hand-written
// LibTorch loop doing the same work on the same model and batches, in the same process.
//
//   ./bazelw run -c opt //benchmarks:trainer_overhead
//
// Both sides: BagOfEmbeddingsClassifier (examples/synthetic/synthetic_task.h), the same
// seeded data order (randperm(n, seed + epoch)), batches gathered by index from the same
// tensors, forward, backward, clip_grad_norm_(1.0), AdamW with HF's two weight-decay groups,
// a linear schedule, zero_grad. The Trainer adds its real machinery: DataLoader + collator,
// callbacks (flow, printer), loss bookkeeping, logging every `kLoggingSteps`. Each repetition
// is one Train() of kSteps steps (construction included) against kSteps baseline steps. The
// last line prints trainer steps/s / baseline steps/s (best round of each side).
#include <ATen/CPUGeneratorImpl.h>
#include <torch/types.h>
#include <torch/nn/utils/clip_grad.h>
#include <torch/optim/adamw.h>

#include <dlfcn.h>

#include <iostream>
#include <map>
#include <sstream>

#include "args/training_args.h"
#include "benchmark/benchmark.h"
#include "benchmarks/overhead_harness.h"
#include "examples/synthetic/synthetic_task.h"
#include "logging/process_logging.h"
#include "threads/thread_plan.h"
#include "trainer/trainer.h"

namespace loom::benchmarks {
namespace {

using examples::synthetic::BagOfEmbeddingsClassifier;

constexpr int64_t kSteps = 150;
constexpr int64_t kBatch = kOverheadBatch;
constexpr int64_t kLoggingSteps = 50;


void BM_HandWrittenLoop(benchmark::State& state) {
  auto ds = OverheadDataset();
  const at::Tensor ids = ds->columns().at("input_ids");
  const at::Tensor labels = ds->columns().at("labels");
  const int64_t n = ids.size(0);
  for (auto _ : state) {
    at::manual_seed(42);
    auto model = std::make_shared<BagOfEmbeddingsClassifier>(OverheadTask());
    std::vector<at::Tensor> decay, no_decay, all;
    for (const auto& p : model->named_parameters()) {
      all.push_back(p.value());
      const bool nd = p.key().find("bias") != std::string::npos || p.key().rfind("norm.", 0) == 0;
      (nd ? no_decay : decay).push_back(p.value());
    }
    torch::optim::AdamW opt({torch::optim::OptimizerParamGroup(decay),
                             torch::optim::OptimizerParamGroup(no_decay)},
                            torch::optim::AdamWOptions(5e-4).weight_decay(0.01));
    static_cast<torch::optim::AdamWOptions&>(opt.param_groups()[1].options()).weight_decay(0.0);
    int64_t step = 0;
    for (int64_t epoch = 0; step < kSteps; ++epoch) {
      at::Tensor perm = at::randperm(n, at::detail::createCPUGenerator(42 + epoch), at::kLong);
      for (int64_t b = 0; b + kBatch <= n && step < kSteps; b += kBatch, ++step) {
        at::Tensor idx = perm.narrow(0, b, kBatch);
        data::Batch batch{{"input_ids", ids.index_select(0, idx)},
                          {"labels", labels.index_select(0, idx)}};
        model->train();
        trainer::ModelOutput out = model->Forward(batch);
        out.loss.backward();
        torch::nn::utils::clip_grad_norm_(all, 1.0);
        opt.step();
        const double lr = 5e-4 * std::max(0.0, static_cast<double>(kSteps - step - 1) / kSteps);
        for (auto& g : opt.param_groups()) g.options().set_lr(lr);
        model->zero_grad();
        benchmark::DoNotOptimize(out.loss);
      }
    }
  }
  state.SetItemsProcessed(state.iterations() * kSteps);
}

void BM_Trainer(benchmark::State& state) {
  auto ds = OverheadDataset();
  for (auto _ : state) {
    trainer::TrainerOptions options;
    options.args.set_output_dir("/tmp/loom_trainer_overhead");
    options.args.set_max_steps(kSteps);
    options.args.set_per_device_train_batch_size(kBatch);
    options.args.set_learning_rate(5e-4);
    options.args.set_weight_decay(0.01);
    options.args.set_logging_steps(kLoggingSteps);
    options.args.set_save_strategy("no");
    options.args.set_disable_tqdm(true);
    options.args.add_report_to("none");
    options.args.set_dataloader_drop_last(true);
    options.train_dataset = ds;
    // The same threads as the hand-written loop (main() below), not the Trainer's defaults:
    // this benchmark compares the loops; //benchmarks:thread_defaults compares the defaults.
    options.threads = threads::ManualThreadPlan(at::get_num_threads(), 1);
    options.model_init = []() -> absl::StatusOr<std::shared_ptr<trainer::Model>> {
      return std::make_shared<BagOfEmbeddingsClassifier>(OverheadTask());
    };
    auto t = trainer::Trainer::Create(std::move(options));
    if (!t.ok()) {
      state.SkipWithError(std::string(t.status().message()).c_str());
      return;
    }
    std::ostringstream silence;
    auto* old = std::cout.rdbuf(silence.rdbuf());  // the printer callback's log lines
    auto out = (*t)->Train();
    std::cout.rdbuf(old);
    if (!out.ok()) {
      state.SkipWithError(std::string(out.status().message()).c_str());
      return;
    }
  }
  state.SetItemsProcessed(state.iterations() * kSteps);
}

// Rounds alternate the two sides (baseline, Trainer, baseline, ...) so that load from other
// processes on this 2-core machine hits both alike; the ratio uses each side's best round
// (rounds vary by 15% on a 2-vCPU VM, so 15 of them per side).
constexpr int kRounds = 15;

void RegisterRounds() {
  for (int r = 0; r < kRounds; ++r) {
    benchmark::RegisterBenchmark(("HandWrittenLoop/round:" + std::to_string(r)).c_str(),
                                 BM_HandWrittenLoop)
        ->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);
    benchmark::RegisterBenchmark(("Trainer/round:" + std::to_string(r)).c_str(), BM_Trainer)
        ->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);
  }
}


}  // namespace
}  // namespace loom::benchmarks

int main(int argc, char** argv) {
  loom::logging::InitProcessLogging(argv[0]);
  // OpenBLAS's worker thread spin-waits (sched_yield) between GEMMs; on this 2-vCPU machine it
  // takes the second hyperthread from whatever runs next and made rounds vary 4x. One BLAS
  // thread for both sides keeps the comparison about the loops.
  using SetThreads = void (*)(int);
  if (auto set = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"))) {
    set(1);
  }
  // The heap settings the Trainer applies (threads/host_heap.h), for both sides from the start.
  if (!loom::threads::ApplyHeapPlan(loom::threads::DecideHeap(loom::threads::HeapEnvironment()))
           .ok()) {
    return 1;
  }
  benchmark::Initialize(&argc, argv);
  loom::benchmarks::RegisterRounds();
  loom::benchmarks::BestRoundReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  const auto& m = reporter.best_;
  if (m.count("HandWrittenLoop") && m.count("Trainer")) {
    const double ratio = m.at("HandWrittenLoop") / m.at("Trainer");
    std::cout << "trainer_overhead: Trainer steps/s / hand-written loop steps/s = " << ratio
              << " (goal >= 0.98; best of " << loom::benchmarks::kRounds << " alternating "
              << loom::benchmarks::kSteps << "-step rounds per side)\n";
  }
  benchmark::Shutdown();
  return 0;
}
