// precision: what bf16 buys on this CPU, and what gradient checkpointing saves, on a GEMM-bound
// BERT (hidden 768, 12 heads, intermediate 3072, seq 128).
//
//   ./bazelw run -c opt //benchmarks:precision
//
// Prints, in one run:
//   - the CPU's bf16 capability (precision/cpu_features.h);
//   - training samples/s through loom's Trainer in fp32 and with --bf16 (CPU autocast), the
//     steady-state steps after the first (which builds oneDNN's primitives), best of
//     alternating rounds, and their ratio as "bf16/fp32 N.NNx" — on a CPU without native bf16
//     the ratio is printed with the reason. fp32 GEMMs run in OpenBLAS (its own thread pool),
//     bf16 GEMMs in oneDNN (LibTorch's OpenMP threads), so both are measured with loom's thread
//     defaults and at every combination of the two pools at 1 thread and at every core; the
//     ratio is given for each precision's best setting and for the defaults;
//   - the peak tensor memory of one training forward+backward with and without
//     --gradient_checkpointing (a counting CPU allocator wraps LibTorch's), beyond the memory
//     the model already held.
#include <c10/core/CPUAllocator.h>
#include <torch/torch.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>

#include "absl/strings/str_format.h"
#include "benchmarks/counting_allocator.h"
#include "glog/logging.h"
#include "logging/process_logging.h"
#include "models/bert/bert_for_sequence_classification.h"
#include "precision/cpu_features.h"
#include "trainer/flow_callbacks.h"
#include "threads/thread_plan.h"
#include "trainer/trainer.h"

namespace loom::benchmarks {
namespace {

using models::bert::BertConfig;
using models::bert::BertForSequenceClassification;

constexpr int64_t kLayers = 2;        // the speed runs
constexpr int64_t kMemoryLayers = 6;  // the memory runs (one forward + backward each)
constexpr int64_t kSeq = 128;
constexpr int64_t kBatch = 8;
constexpr int64_t kSteps = 6;   // per round; the first is not timed
constexpr int kRounds = 2;      // per precision and thread setting, alternating

BertConfig Config(int64_t layers = kLayers) {
  BertConfig c;
  c.vocab_size = 2000;
  c.hidden_size = 768;
  c.num_hidden_layers = layers;
  c.num_attention_heads = 12;
  c.intermediate_size = 3072;
  c.max_position_embeddings = kSeq;
  c.set_num_labels(2);
  return c;
}

std::shared_ptr<const data::Dataset> Data() {
  at::Generator gen = at::detail::createCPUGenerator(1);
  at::Tensor ids = at::randint(1, 2000, {kBatch * kSteps, kSeq}, gen, at::kLong);
  at::Tensor labels = ids.select(1, 0).remainder(2);
  return *data::TensorDataset::Create({{"input_ids", ids}, {"labels", labels}});
}

// Wall time from the end of the first step to the end of the last.
class StepClock : public trainer::TrainerCallback {
 public:
  std::string Name() const override { return "StepClock"; }
  absl::Status OnStepEnd(const trainer::Event& e) override {
    const double now = Now();
    if (e.state.global_step == 1) first_end_ = now;
    last_end_ = now;
    return absl::OkStatus();
  }
  double SteadySeconds() const { return last_end_ - first_end_; }
  static double Now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }

 private:
  double first_end_ = 0, last_end_ = 0;
};

// LibTorch's intra-op threads (OpenMP: oneDNN's bf16 GEMMs and the elementwise ops) and
// OpenBLAS's (fp32 GEMMs) are separate pools; unset: loom's defaults (threads/thread_plan.h).
struct Threads {
  int torch;
  int blas;
};

// Samples per second of the steady steps of one Train() in the given precision.
double TrainSamplesPerSecond(bool bf16, const std::optional<Threads>& threads) {
  auto model = *BertForSequenceClassification::Create(Config(), 7);
  auto clock = std::make_shared<StepClock>();
  trainer::TrainerOptions o;
  o.model = model;
  const std::string dir = (std::filesystem::temp_directory_path() / "loom_bench_precision").string();
  o.args.set_output_dir(dir);
  o.args.set_max_steps(kSteps);
  o.args.set_per_device_train_batch_size(kBatch);
  o.args.set_logging_steps(1000);
  o.args.set_save_strategy("no");
  o.args.add_report_to("none");
  o.args.set_disable_tqdm(true);
  o.args.set_bf16(bf16);
  o.train_dataset = Data();
  o.callbacks = {clock};
  if (threads) o.threads = threads::ManualThreadPlan(threads->torch, threads->blas);
  absl::StatusOr<std::unique_ptr<trainer::Trainer>> t = trainer::Trainer::Create(std::move(o));
  if (t.ok()) (*t)->RemoveCallback<trainer::PrinterCallback>();  // keep the figures readable
  if (!t.ok() || !(*t)->Train().ok()) {
    std::cerr << "training failed\n";
    std::exit(1);
  }
  std::filesystem::remove_all(dir);
  return (kSteps - 1) * kBatch / clock->SteadySeconds();
}

struct StepMemory {
  int64_t peak = 0;   // bytes above the model's own, at the step's peak
  int64_t grads = 0;  // of which the parameters' gradients (the same with or without)
};

// One training forward + backward (dropout on) of a kMemoryLayers-layer model.
StepMemory StepPeakBytes(CountingAllocator& counter, bool checkpointing) {
  auto model = *BertForSequenceClassification::Create(Config(kMemoryLayers), 7);
  if (checkpointing) (void)model->EnableGradientCheckpointing({});
  model->train();
  at::Generator gen = at::detail::createCPUGenerator(2);
  const at::Tensor ids = at::randint(1, 2000, {kBatch, kSeq}, gen, at::kLong);
  const data::Batch batch = {{"input_ids", ids}, {"labels", ids.select(1, 0).remainder(2)}};
  const int64_t before = counter.live();
  counter.ResetPeak();
  model->Forward(batch).loss.backward();
  StepMemory m;
  m.peak = counter.peak() - before;
  for (const at::Tensor& p : model->parameters()) {
    if (p.grad().defined()) m.grads += p.grad().numel() * p.grad().element_size();
  }
  return m;
}

}  // namespace
}  // namespace loom::benchmarks

int main(int argc, char** argv) {
  using namespace loom::benchmarks;  // NOLINT
  loom::logging::InitProcessLogging(argv[0]);
  FLAGS_minloglevel = 1;  // the Trainer's INFO lines would drown the figures
  const loom::precision::CpuBf16 cpu = loom::precision::CurrentBf16Support();
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  std::cout << cpu.Describe() << "\n"
            << "model: BERT, " << kLayers << " layers, hidden 768, 12 heads, intermediate 3072, seq "
            << kSeq << ", batch " << kBatch << "; " << kSteps - 1 << " timed steps per round, best of "
            << kRounds << " alternating rounds\n";
  // loom's defaults, then every combination of the two pools at 1 thread and at every core;
  // each precision's figure is its best setting, and every setting is printed.
  std::vector<std::optional<Threads>> settings = {std::nullopt, Threads{1, 1}};
  if (cores > 1) {
    settings.insert(settings.end(), {Threads{1, cores}, Threads{cores, 1}, Threads{cores, cores}});
  }
  double best32 = 0, best16 = 0, default32 = 0, default16 = 0;
  std::string at32, at16;
  for (const std::optional<Threads>& t : settings) {
    double fp32 = 0, bf16 = 0;
    for (int r = 0; r < kRounds; ++r) {
      fp32 = std::max(fp32, TrainSamplesPerSecond(false, t));
      bf16 = std::max(bf16, TrainSamplesPerSecond(true, t));
    }
    const std::string name =
        t ? absl::StrFormat("LibTorch %d / OpenBLAS %d threads", t->torch, t->blas)
          : std::string("loom's defaults");
    std::cout << absl::StrFormat("%-32s fp32 %6.2f samples/s, bf16 %6.2f samples/s (%.2fx)\n",
                                 name, fp32, bf16, bf16 / fp32);
    if (!t) default32 = fp32, default16 = bf16;
    if (fp32 > best32) best32 = fp32, at32 = name;
    if (bf16 > best16) best16 = bf16, at16 = name;
  }
  std::cout << absl::StrFormat("best: fp32 %.2f samples/s (%s), bf16 %.2f samples/s (%s)\n", best32,
                               at32, best16, at16);
  std::cout << absl::StrFormat("bf16/fp32 %.2fx (best of each); with loom's defaults %.2fx",
                               best16 / best32, default16 / default32);
  if (cpu.support != loom::precision::Bf16Support::kNative) std::cout << "  (" << cpu.reason << ")";
  std::cout << "\n";

  static CountingAllocator counter(c10::GetCPUAllocator());
  c10::SetCPUAllocator(&counter, /*priority=*/1);
  const StepMemory plain = StepPeakBytes(counter, false);
  const StepMemory checkpointed = StepPeakBytes(counter, true);
  const double mib = 1048576.0;
  std::cout << absl::StrFormat(
      "peak memory of a training step (%d layers, batch %d x %d) beyond the model: %.1f MiB "
      "without, %.1f MiB with gradient checkpointing; activations (peak minus the %.1f MiB of "
      "parameter gradients): %.1f MiB vs %.1f MiB (%.0f%% saved)\n",
      kMemoryLayers, kBatch, kSeq, plain.peak / mib, checkpointed.peak / mib, plain.grads / mib,
      (plain.peak - plain.grads) / mib, (checkpointed.peak - checkpointed.grads) / mib,
      100.0 * (plain.peak - checkpointed.peak) / (plain.peak - plain.grads));
  return 0;
}
