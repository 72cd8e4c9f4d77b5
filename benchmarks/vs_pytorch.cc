// vs_pytorch: loom's Trainer against the plain PyTorch training loop a user would write in
// Python (benchmarks/vs_pytorch_loop.py, run by the Python torch of the same LibTorch:
// @libtorch//:python.sh — the pinned 2.11 wheel by default, Debian's python3-torch 1.13 under
// --config=debian), on the same BERT weights, examples, optimizer and schedule.
//
//   ./bazelw run -c opt //benchmarks:vs_pytorch [-- ROUNDS [ONLY]]
//       ROUNDS default 3; ONLY runs the cases whose "<model> <precision> <attention>" contains
//       it ("tiny", "medium fp32", "bf16", "sdpa", "tiny fp32 eager", ...)
//   ./bazelw run -c opt //benchmarks:vs_pytorch -- ROUNDS ONLY loom
//       only loom's side with its defaults, ROUNDS runs (for profiling, e.g. under perf record)
//
// Models: tiny (hidden 64, 2 layers, 2 heads, intermediate 256, seq 64, batch 8) and medium
// (hidden 256, 4 layers, 4 heads, intermediate 1024, seq 128, batch 8), fp32 and bf16 (CPU
// autocast), with each attention implementation the build has: eager, and sdpa
// (at::scaled_dot_product_attention / F.scaled_dot_product_attention) on LibTorch >= 2.1.1;
// on 1.13 one line says sdpa needs LibTorch 2.x (--config=torch2). The first lines give the
// CPU's flags and bf16 support (precision/cpu_features.h). Each side runs with its defaults
// (loom: threads/thread_plan.h; PyTorch: no variables set) and with every setting of the two
// thread pools (LibTorch's OpenMP, OpenBLAS) at 1 and at every core; rounds alternate between
// loom and PyTorch and between settings, and each figure is the best round's steady-state
// samples/s (the steps after the first). Prints per model, precision and attention: the table,
// "loom/PyTorch with defaults N.NNx" (goal >= 2.0 tiny, >= 1.2 medium, fp32) and "loom defaults
// / PyTorch best M.MMx" (goal >= 1.0).
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/torch_compat.h"
#include "checkpoint/safetensors.h"
#include "glog/logging.h"
#include "logging/process_logging.h"
#include "models/bert/pretrained.h"
#include "nlohmann/json.hpp"
#include "benchmarks/python_side.h"
#include "precision/cpu_features.h"
#include "threads/thread_plan.h"
#include "trainer/flow_callbacks.h"
#include "trainer/trainer.h"

namespace loom::benchmarks {
namespace {

using models::bert::AttnImplementation;
using models::bert::AttnImplementationName;
using models::bert::BertConfig;
using models::bert::BertForSequenceClassification;

struct Workload {
  std::string name;
  int64_t hidden, layers, heads, intermediate, seq, batch, steps;
  AttnImplementation attention = AttnImplementation::kEager;
  std::string Attention() const { return std::string(AttnImplementationName(attention)); }
};

struct Threads {
  int torch;
  int blas;
  std::string Name() const { return absl::StrFormat("OMP %d / OpenBLAS %d", torch, blas); }
};

constexpr int64_t kExamples = 256;
constexpr int64_t kVocab = 1000;
constexpr int64_t kWarmup = 10;
constexpr double kLr = 1e-4;

BertConfig Config(const Workload& w) {
  BertConfig c;
  c.vocab_size = kVocab;
  c.hidden_size = w.hidden;
  c.num_hidden_layers = w.layers;
  c.num_attention_heads = w.heads;
  c.intermediate_size = w.intermediate;
  c.max_position_embeddings = w.seq;
  c.set_num_labels(2);
  c.attn_implementation = w.attention;
  return c;
}

// Attention masks with some padding, labels from the first token.
data::TensorMap Examples(const Workload& w) {
  at::Generator gen = at::detail::createCPUGenerator(3);
  at::Tensor ids = at::randint(1, kVocab, {kExamples, w.seq}, gen, at::kLong);
  at::Tensor lengths = at::randint(w.seq / 2, w.seq + 1, {kExamples}, gen, at::kLong);
  at::Tensor mask = at::arange(w.seq).unsqueeze(0).lt(lengths.unsqueeze(1)).to(at::kLong);
  ids = ids * mask;
  return {{"input_ids", ids}, {"attention_mask", mask}, {"labels", ids.select(1, 0).remainder(2)}};
}

class StepClock : public trainer::TrainerCallback {
 public:
  std::string Name() const override { return "StepClock"; }
  absl::Status OnStepEnd(const trainer::Event& e) override {
    const double now =
        std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
    if (e.state.global_step == 1) first_ = now;
    last_ = now;
    return absl::OkStatus();
  }
  double Seconds() const { return last_ - first_; }

 private:
  double first_ = 0, last_ = 0;
};

double LoomSamplesPerSecond(const Workload& w, bool bf16, const std::optional<Threads>& t,
                            const std::string& scratch) {
  auto model = *BertForSequenceClassification::Create(Config(w), 7);
  auto clock = std::make_shared<StepClock>();
  trainer::TrainerOptions o;
  o.model = model;
  o.args.set_output_dir(scratch + "/loom_out");
  o.args.set_max_steps(w.steps);
  o.args.set_per_device_train_batch_size(w.batch);
  o.args.set_learning_rate(kLr);
  o.args.set_warmup_steps(kWarmup);
  o.args.set_weight_decay(0.01);
  o.args.set_logging_steps(100000);
  o.args.set_save_strategy("no");
  o.args.add_report_to("none");
  o.args.set_disable_tqdm(true);
  o.args.set_bf16(bf16);
  o.train_dataset = *data::TensorDataset::Create(Examples(w));
  o.callbacks = {clock};
  if (t) o.threads = threads::ManualThreadPlan(t->torch, t->blas);
  auto created = trainer::Trainer::Create(std::move(o));
  if (!created.ok()) {
    std::cerr << created.status() << "\n";
    std::exit(1);
  }
  (*created)->RemoveCallback<trainer::PrinterCallback>();
  if (absl::Status s = (*created)->Train().status(); !s.ok()) {
    std::cerr << s << "\n";
    std::exit(1);
  }
  return (w.steps - 1) * w.batch / clock->Seconds();
}

double PythonSamplesPerSecond(const Workload& w, bool bf16, const std::optional<Threads>& t,
                              const std::string& runfiles, const std::string& scratch) {
  std::string env =
      "env -u OMP_NUM_THREADS -u OPENBLAS_NUM_THREADS -u GOTO_NUM_THREADS -u MKL_NUM_THREADS -u "
      "LOCAL_WORLD_SIZE";
  if (t) absl::StrAppend(&env, " OMP_NUM_THREADS=", t->torch, " OPENBLAS_NUM_THREADS=", t->blas);
  const std::string script = absl::StrCat(
      runfiles, "/benchmarks/vs_pytorch_loop.py ", runfiles, "/tests/models/bert_reference.py ",
      scratch, "/model ", scratch, "/data.safetensors", " --steps ", w.steps, " --batch ",
      w.batch, " --lr ", kLr, " --warmup ", kWarmup, " --attn_implementation ", w.Attention(),
      bf16 ? " --bf16" : "");
  return RunPythonForJson(runfiles, env, script)["samples_per_second"].get<double>();
}

void Compare(const Workload& w, bool bf16, int rounds, const std::string& runfiles) {
  const std::string scratch =
      (std::filesystem::temp_directory_path() / absl::StrCat("loom_vs_pytorch_", getpid())).string();
  std::filesystem::create_directories(scratch);
  auto model = *BertForSequenceClassification::Create(Config(w), 7);
  (void)*models::bert::SaveBertForSequenceClassification(*model, scratch + "/model");
  data::TensorMap examples = Examples(w);
  (void)checkpoint::SaveSafetensors(scratch + "/data.safetensors",
                                    checkpoint::NamedTensors(examples.begin(), examples.end()));
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  std::vector<std::optional<Threads>> settings = {std::nullopt, Threads{1, 1}};
  if (cores > 1) {
    settings.insert(settings.end(), {Threads{1, cores}, Threads{cores, 1}, Threads{cores, cores}});
  }
  std::map<int, double> loom, torch;
  for (int r = 0; r < rounds; ++r) {
    for (size_t i = 0; i < settings.size(); ++i) {
      loom[i] = std::max(loom[i], LoomSamplesPerSecond(w, bf16, settings[i], scratch));
      torch[i] = std::max(torch[i], PythonSamplesPerSecond(w, bf16, settings[i], runfiles, scratch));
    }
  }
  std::filesystem::remove_all(scratch);
  std::cout << absl::StrFormat(
      "\n%s (hidden %d, %d layers, seq %d, batch %d, %d steps), %s, attention %s: samples/s\n",
      w.name, w.hidden, w.layers, w.seq, w.batch, w.steps, bf16 ? "bf16" : "fp32", w.Attention());
  size_t best_torch = 0, best_loom = 0;
  for (size_t i = 0; i < settings.size(); ++i) {
    const std::string name = settings[i] ? settings[i]->Name() : "defaults";
    std::cout << absl::StrFormat("  %-22s loom %9.1f   PyTorch %9.1f   (%.2fx)\n", name, loom[i],
                                 torch[i], loom[i] / torch[i]);
    if (torch[i] > torch[best_torch]) best_torch = i;
    if (loom[i] > loom[best_loom]) best_loom = i;
  }
  const auto name = [&](size_t i) { return settings[i] ? settings[i]->Name() : "defaults"; };
  std::cout << absl::StrFormat("  loom/PyTorch with defaults %.2fx\n", loom[0] / torch[0]);
  std::cout << absl::StrFormat("  loom defaults / PyTorch best (%s) %.2fx\n", name(best_torch),
                               loom[0] / torch[best_torch]);
  std::cout << absl::StrFormat("  loom best (%s) / PyTorch best %.2fx\n", name(best_loom),
                               loom[best_loom] / torch[best_torch]);
}

// Only loom's side with its defaults, `rounds` runs (for profiling).
void LoomOnly(const Workload& w, bool bf16, int rounds, const std::string& name) {
  const std::string scratch =
      (std::filesystem::temp_directory_path() / absl::StrCat("loom_vs_pytorch_", getpid()))
          .string();
  for (int r = 0; r < rounds; ++r) {
    std::cout << absl::StrFormat("%s loom defaults: %.1f samples/s\n", name,
                                 LoomSamplesPerSecond(w, bf16, std::nullopt, scratch));
  }
  std::filesystem::remove_all(scratch);
}

}  // namespace
}  // namespace loom::benchmarks

int main(int argc, char** argv) {
  using namespace loom::benchmarks;  // NOLINT
  loom::logging::InitProcessLogging(argv[0]);
  FLAGS_minloglevel = 1;
  const int rounds = argc > 1 ? std::max(1, std::atoi(argv[1])) : 3;
  const std::string only = argc > 2 ? argv[2] : "";
  const bool loom_only = argc > 3 && std::string(argv[3]) == "loom";
  const std::string runfiles = Runfiles(argv[0]);
  std::cout << "cpu: " << std::thread::hardware_concurrency() << " CPUs; "
            << loom::threads::DecideThreads(loom::threads::CurrentThreadInputs(true, 0)).Describe()
            << "\n"
            << loom::precision::CurrentBf16Support().Describe() << "\nLibTorch "
            << loom::base::kLibTorchVersion << "; best of " << rounds
            << " alternating rounds per setting\n";
  std::vector<AttnImplementation> attentions = {AttnImplementation::kEager};
  if (loom::base::kHasScaledDotProductAttention) {
    attentions.push_back(AttnImplementation::kSdpa);
  } else {
    std::cout << "attention sdpa: not measured; attn_implementation=\"sdpa\" "
                 "(at::scaled_dot_product_attention) needs LibTorch >= 2.1.1, this build links "
              << loom::base::kLibTorchVersion << " (build with --config=torch2)\n";
  }
  const Workload tiny{"tiny", 64, 2, 2, 256, 64, 8, 200};
  const Workload medium{"medium", 256, 4, 4, 1024, 128, 8, 30};
  for (Workload w : {tiny, medium}) {
    for (bool bf16 : {false, true}) {
      for (AttnImplementation attention : attentions) {
        w.attention = attention;
        const std::string name = w.name + (bf16 ? " bf16 " : " fp32 ") + w.Attention();
        if (name.find(only) == std::string::npos) continue;
        if (loom_only) {
          LoomOnly(w, bf16, rounds, name);
        } else {
          Compare(w, bf16, rounds, runfiles);
        }
      }
    }
  }
  return 0;
}
