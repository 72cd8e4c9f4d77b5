// sharding: DDP, ZeRO-1 and ZeRO-2 side by side on real ranks (forked processes over Gloo on
// 127.0.0.1) with a model of 50M parameters:
//
//   ./bazelw run -c opt //benchmarks:sharding [-- RANKS [STEPS]]   (default 2 ranks, 4 steps)
//
// Every strategy comes from sharding::CreateStrategy with a --deepspeed config of stage 0 (DDP),
// 1 and 2 (reduce_bucket_size 2048^2, what HF's "auto" fills in for this width), on the same
// model (12 x Linear(2048, 2048), fp32, AdamW) and batches. Per strategy:
//   - step time: forward + backward + reduction + clip + optimizer step + parameter sharing,
//     the best of the steps after the first over two rounds that alternate the strategies,
//     and its ratio to DDP (goal: ZeRO-2 <= 1.1x);
//   - rank 0's model-state bytes: what the strategy reports (StateBytes), what a counting
//     allocator measured live after the step (every CPU tensor of the process: the model
//     state plus small leftovers), and the per-stage formula — DeepSpeed 0.13.5
//     estimate_zero2_model_states_mem_needs'
//     accounting with fp32 in place of the 16-bit copies (there are none in fp32 training):
//     DDP 16P (weights 4P, gradients 4P, AdamW 8P), ZeRO-1 8P + 16P/N (full fp32 weights and
//     gradients, and per partition the averaged gradients, master weights and AdamW's two
//     moments), ZeRO-2 4P + 16P/N;
//   - ZeRO-1 and ZeRO-2 with overlap_comm (the reduction during backward; "ovl");
//   - the same for bf16 ZeRO-1 and ZeRO-2 (DeepSpeed's bf16 section), against that formula
//     itself: ZeRO-2 2P + 18P/N (bf16 weights; per partition bf16 and fp32 gradients, fp32
//     master weights, AdamW's moments), ZeRO-1 4P + 18P/N (its bf16 gradients unpartitioned).
// Parameter sharding, on BERT-base for sequence classification (109.5M parameters,
// its 12 BertLayers the wrap units; fp32, AdamW, a batch of 2 x 64 tokens per rank): DDP,
// ZeRO-2, ZeRO-3 (DeepSpeed's defaults, prefetching on) and FSDP full_shard without and with
// prefetching (forward_prefetch, backward_pre) — step time and its ratio to DDP (goal:
// ZeRO-3 / full_shard <= 1.3x), model-state bytes reported and measured against the fp32
// form of DeepSpeed 0.13.5 estimate_zero3_model_states_mem_needs, 16P/N + 4L (L: the largest layer,
// the word embeddings, which loom's root unit keeps whole like FSDP's root), and the peak of full
// parameters held during forward and backward against the root plus the largest unit (plus one
// prefetched unit).
#include <c10/core/CPUAllocator.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "args/training_args.pb.h"
#include "base/free_port.h"
#include "benchmarks/counting_allocator.h"
#include "distributed/multiprocess_testing.h"
#include "logging/process_logging.h"
#include "modeling/model.h"
#include "models/bert/bert_for_sequence_classification.h"
#include "precision/training_precision.h"
#include "sharding/create_strategy.h"
#include "sharding/param_shard/param_shard.h"

namespace loom::benchmarks {
namespace {

constexpr int kLayers = 12;
constexpr int kWidth = 2048;
constexpr int kBatch = 8;
constexpr int kRounds = 2;

struct Result {
  double step_seconds = 0;
  sharding::ModelStateBytes reported;
  int64_t measured_live = 0;  // live CPU tensor bytes after the step (rank's process)
};

// kLayers x Linear(kWidth, kWidth) in sequence, as a loom model (what strategies take).
struct Stack : modeling::Model {
  Stack() {
    torch::manual_seed(1);
    for (int i = 0; i < kLayers; ++i) {
      layers.push_back(register_module(std::to_string(i), torch::nn::Linear(kWidth, kWidth)));
    }
  }
  at::Tensor forward(at::Tensor x) {
    for (torch::nn::Linear& layer : layers) x = layer->forward(x);
    return x;
  }
  modeling::ModelOutput Forward(const data::Batch&) override { return {}; }

  std::vector<torch::nn::Linear> layers;
};

int RunStage(int stage, bool bf16, bool overlap, int rank, distributed::ProcessGroup& pg, int steps,
             CountingAllocator& counter, Result* out) {
  const int64_t baseline = counter.live();
  Result r;
  {
    auto model = std::make_shared<Stack>();
    torch::optim::AdamW opt(model->parameters(),
                            torch::optim::AdamWOptions(1e-4).weight_decay(0.01));
    precision::PrecisionPolicy policy;
    if (bf16) {
      policy.mode = precision::PrecisionMode::kHalfWeights;
      policy.compute_dtype = at::kBFloat16;
    }
    auto precision = precision::TrainingPrecision::Create(policy);
    CHILD_CHECK_OK(precision.status());
    args::TrainingArguments args;
    args.set_bf16(bf16);
    // reduce_bucket_size: what HF's "auto" gives (hidden size squared).
    args.set_deepspeed(absl::StrCat(R"({"zero_optimization": {"stage": )", stage,
                                    R"(, "reduce_bucket_size": )", int64_t{kWidth} * kWidth,
                                    overlap ? R"(, "overlap_comm": true)" : "", "}",
                                    bf16 ? R"(, "bf16": {"enabled": "auto"})" : "", "}"));
    auto strategy = sharding::CreateStrategy(sharding::StrategyOptions()
                                                 .set_args(&args)
                                                 .set_model(model.get())
                                                 .set_optimizer(&opt)
                                                 .set_precision(precision->get())
                                                 .set_process_group(&pg));
    CHILD_CHECK_OK(strategy.status());
    at::Generator gen = at::detail::createCPUGenerator(100 + rank);
    r.step_seconds = std::numeric_limits<double>::infinity();
    for (int s = 0; s < steps; ++s) {
      const at::Tensor x = at::randn({kBatch, kWidth}, gen).to(bf16 ? at::kBFloat16 : at::kFloat);
      const auto start = std::chrono::steady_clock::now();
      CHILD_CHECK_OK((*strategy)->BeforeForward(true));
      model->forward(x).pow(2).mean().backward();
      CHILD_CHECK_OK((*strategy)->AfterBackward());
      CHILD_CHECK_OK((*strategy)->ClipGradients(1.0).status());
      CHILD_CHECK_OK((*strategy)->OptimizerStep().status());
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (s == steps - 1) {
        r.reported = (*strategy)->StateBytes();
        r.measured_live = counter.live() - baseline;
      }
      (*strategy)->ZeroGrad();
      if (s > 0) r.step_seconds = std::min(r.step_seconds, seconds);
    }
  }
  *out = r;
  return 0;
}

double Formula(int stage, bool bf16, double p, int n) {
  if (bf16) return (stage == 1 ? 4 * p : 2 * p) + 18 * p / n;
  switch (stage) {
    case 0:
      return 16 * p;
    case 1:
      return 8 * p + 16 * p / n;
    default:
      return 4 * p + 16 * p / n;
  }
}

struct Row {
  int stage;
  bool bf16;
  bool overlap;  // overlap_comm
  const char* name;
};
constexpr Row kRows[] = {{0, false, false, "DDP (stage 0)"}, {1, false, false, "ZeRO-1"},
                         {2, false, false, "ZeRO-2"},        {1, false, true, "ZeRO-1 ovl"},
                         {2, false, true, "ZeRO-2 ovl"},     {1, true, false, "ZeRO-1 bf16"},
                         {2, true, false, "ZeRO-2 bf16"}};
constexpr int kNumRows = sizeof(kRows) / sizeof(kRows[0]);

// --- Parameter sharding on BERT-base. ---

struct BertRow {
  const char* name;
  bool prefetch;            // one more unit may be held (being gathered ahead)
  const char* deepspeed;    // --deepspeed config, or null
  const char* fsdp_config;  // with --fsdp "full_shard auto_wrap", or null
};
constexpr BertRow kBertRows[] = {
    {"DDP", false, nullptr, nullptr},
    {"ZeRO-2", false, R"({"zero_optimization": {"stage": 2, "reduce_bucket_size": 589824}})",
     nullptr},
    {"ZeRO-3", true, R"({"zero_optimization": {"stage": 3}})", nullptr},
    {"FSDP full_shard", false, nullptr, R"({"transformer_layer_cls_to_wrap": ["BertLayer"]})"},
    {"FSDP + prefetch", true, nullptr,
     R"({"transformer_layer_cls_to_wrap": ["BertLayer"], "forward_prefetch": true,
         "backward_prefetch": "backward_pre"})"},
};
constexpr int kNumBertRows = sizeof(kBertRows) / sizeof(kBertRows[0]);
constexpr int kBertBatch = 2;
constexpr int kBertSeq = 64;

struct BertResult {
  Result base;
  int64_t peak_gathered = -1;  // parameter sharding only
  int64_t root_bytes = 0;
  int64_t largest_unit_bytes = 0;
  int64_t params = 0;  // the model's parameter count
};

int RunBert(const BertRow& row, int rank, distributed::ProcessGroup& pg, int steps,
            CountingAllocator& counter, BertResult* out) {
  const int64_t baseline = counter.live();
  BertResult r;
  {
    models::bert::BertConfig config;
    auto model = models::bert::BertForSequenceClassification::Create(config, /*seed=*/1);
    CHILD_CHECK_OK(model.status());
    for (const at::Tensor& t : (*model)->parameters()) r.params += t.numel();
    torch::optim::AdamW opt((*model)->parameters(),
                            torch::optim::AdamWOptions(1e-5).weight_decay(0.01));
    auto precision = precision::TrainingPrecision::Create(precision::PrecisionPolicy{});
    CHILD_CHECK_OK(precision.status());
    args::TrainingArguments args;
    if (row.deepspeed != nullptr) args.set_deepspeed(row.deepspeed);
    if (row.fsdp_config != nullptr) {
      args.add_fsdp("full_shard");
      args.add_fsdp("auto_wrap");
      args.set_fsdp_config(row.fsdp_config);
    }
    auto strategy = sharding::CreateStrategy(sharding::StrategyOptions()
                                                 .set_args(&args)
                                                 .set_model(model->get())
                                                 .set_optimizer(&opt)
                                                 .set_precision(precision->get())
                                                 .set_process_group(&pg));
    CHILD_CHECK_OK(strategy.status());
    auto* sharded = dynamic_cast<sharding::ParamShardStrategy*>(strategy->get());
    if (sharded != nullptr) {
      const sharding::FullShardRunner& runner = sharded->runner();
      for (size_t u = 0; u < runner.unit_count(); ++u) {
        int64_t bytes = 0;
        for (size_t p : runner.unit_pieces(u)) bytes += runner.pieces()[p].flat->full_bytes();
        if (runner.persistent(u)) {
          r.root_bytes += bytes;
        } else {
          r.largest_unit_bytes = std::max(r.largest_unit_bytes, bytes);
        }
      }
    }
    at::Generator gen = at::detail::createCPUGenerator(100 + rank);
    r.base.step_seconds = std::numeric_limits<double>::infinity();
    for (int s = 0; s < steps; ++s) {
      data::Batch batch = {
          {"input_ids", at::randint(1, config.vocab_size, {kBertBatch, kBertSeq}, gen, at::kLong)},
          {"labels", at::randint(0, 2, {kBertBatch}, gen, at::kLong)}};
      if (sharded != nullptr) sharded->runner().ResetPeak();
      const auto start = std::chrono::steady_clock::now();
      CHILD_CHECK_OK((*strategy)->BeforeForward(true));
      auto output = (*model)->TryForward(batch);
      CHILD_CHECK_OK(output.status());
      output->loss.backward();
      CHILD_CHECK_OK((*strategy)->AfterBackward());
      if (sharded != nullptr) r.peak_gathered = sharded->runner().peak_gathered_bytes();
      CHILD_CHECK_OK((*strategy)->ClipGradients(1.0).status());
      CHILD_CHECK_OK((*strategy)->OptimizerStep().status());
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (s == steps - 1) {
        r.base.reported = (*strategy)->StateBytes();
        r.base.measured_live = counter.live() - baseline;
      }
      (*strategy)->ZeroGrad();
      if (s > 0) r.base.step_seconds = std::min(r.base.step_seconds, seconds);
    }
  }
  *out = r;
  return 0;
}

int MeasureBert(int rank, distributed::ProcessGroup& pg, int steps, CountingAllocator& counter,
                std::vector<BertResult>* out) {
  std::vector<BertResult>& results = *out;
  results.assign(kNumBertRows, BertResult());
  for (int round = 0; round < kRounds; ++round) {
    for (int i = 0; i < kNumBertRows; ++i) {
      BertResult r;
      if (int rc = RunBert(kBertRows[i], rank, pg, steps, counter, &r); rc != 0) return rc;
      if (round > 0) {
        r.base.step_seconds = std::min(r.base.step_seconds, results[i].base.step_seconds);
      }
      results[i] = r;
    }
  }
  return 0;
}

int PrintBert(const std::vector<BertResult>& results, int world, std::ofstream& out) {
  models::bert::BertConfig config;
  const double p = static_cast<double>(results[0].params);
  const double largest_layer = static_cast<double>(config.vocab_size * config.hidden_size);
  const double mib = 1024.0 * 1024.0;
  char line[640];
  std::snprintf(line, sizeof(line),
                "\nmodel: BERT-base for sequence classification = %.1fM parameters (largest layer "
                "%.1fM), fp32, AdamW; batch %d x %d tokens per rank; %d ranks\n",
                p / 1e6, largest_layer / 1e6, kBertBatch, kBertSeq, world);
  out << line;
  for (int i = 0; i < kNumBertRows; ++i) {
    const BertResult& r = results[i];
    const bool sharded = r.peak_gathered >= 0;
    const double formula = i == 0   ? 16 * p
                           : i == 1 ? 4 * p + 16 * p / world
                                    : 16 * p / world + 4 * largest_layer;
    std::snprintf(line, sizeof(line),
                  "  %-16s step %8.1f ms (%.2fx DDP)   model state on rank 0: reported %7.1f MiB "
                  "(%s), measured live %7.1f MiB, formula %7.1f MiB (reported/formula %.3f)\n",
                  kBertRows[i].name, r.base.step_seconds * 1e3,
                  r.base.step_seconds / results[0].base.step_seconds, r.base.reported.Total() / mib,
                  r.base.reported.Describe().c_str(), r.base.measured_live / mib, formula / mib,
                  r.base.reported.Total() / formula);
    out << line;
    if (sharded) {
      std::snprintf(line, sizeof(line),
                    "  %-16s peak full parameters held during forward+backward %.1f MiB (root "
                    "%.1f MiB + %s x largest unit %.1f MiB = %.1f MiB)\n",
                    "", r.peak_gathered / mib, r.root_bytes / mib,
                    kBertRows[i].prefetch ? "2 (one prefetched)" : "1", r.largest_unit_bytes / mib,
                    (r.root_bytes + (kBertRows[i].prefetch ? 2 : 1) * r.largest_unit_bytes) / mib);
      out << line;
    }
  }
  return out ? 0 : 1;
}

int Child(int rank, int world, int port, int steps, const std::string& out_path) {
  static CountingAllocator counter(c10::GetCPUAllocator());
  c10::SetCPUAllocator(&counter, /*priority=*/100);
  at::set_num_threads(1);
  auto pg = distributed::testing::JoinGroup(rank, world, port, absl::Seconds(120));
  CHILD_CHECK_OK(pg.status());
  // Rounds over every strategy in turn (this VM's speed drifts): each strategy's best step of
  // all rounds; the bytes of the last.
  std::vector<Result> results(kNumRows);
  for (int round = 0; round < kRounds; ++round) {
    for (int i = 0; i < kNumRows; ++i) {
      Result r;
      if (int rc = RunStage(kRows[i].stage, kRows[i].bf16, kRows[i].overlap, rank, *pg, steps,
                            counter, &r);
          rc != 0) {
        return rc;
      }
      if (round > 0) r.step_seconds = std::min(r.step_seconds, results[i].step_seconds);
      results[i] = r;
    }
  }
  std::vector<BertResult> bert;
  if (int rc = MeasureBert(rank, *pg, steps, counter, &bert); rc != 0) return rc;
  if (rank != 0) return 0;
  const double p = static_cast<double>(kLayers) * (int64_t{kWidth} * kWidth + kWidth);
  std::ofstream out(out_path);
  char line[512];
  std::snprintf(line, sizeof(line),
                "model: %d x Linear(%d, %d) = %.1fM parameters, fp32, AdamW; %d ranks (Gloo over "
                "127.0.0.1, 1 compute thread each); best of %d steps after the first in each of %d "
                "alternating rounds\n",
                kLayers, kWidth, kWidth, p / 1e6, world, steps - 1, kRounds);
  out << line;
  for (int i = 0; i < kNumRows; ++i) {
    const Result& r = results[i];
    const double mib = 1024.0 * 1024.0;
    const double formula = Formula(kRows[i].stage, kRows[i].bf16, p, world);
    std::snprintf(line, sizeof(line),
                  "  %-14s step %8.1f ms (%.2fx DDP)   model state on rank 0: reported %7.1f MiB "
                  "(%s), measured live %7.1f MiB, formula %7.1f MiB (reported/formula %.3f)\n",
                  kRows[i].name, r.step_seconds * 1e3, r.step_seconds / results[0].step_seconds,
                  r.reported.Total() / mib, r.reported.Describe().c_str(), r.measured_live / mib,
                  formula / mib, r.reported.Total() / formula);
    out << line;
  }
  std::snprintf(line, sizeof(line),
                "  ZeRO-1 saves %.1f MiB per rank vs DDP (formula %.1f), ZeRO-2 %.1f MiB (formula "
                "%.1f)\n",
                (results[0].reported.Total() - results[1].reported.Total()) / 1048576.0,
                (Formula(0, false, p, world) - Formula(1, false, p, world)) / 1048576.0,
                (results[0].reported.Total() - results[2].reported.Total()) / 1048576.0,
                (Formula(0, false, p, world) - Formula(2, false, p, world)) / 1048576.0);
  out << line;
  if (int rc = PrintBert(bert, world, out); rc != 0) return rc;
  return out ? 0 : 1;
}

}  // namespace
}  // namespace loom::benchmarks

int main(int argc, char** argv) {
  loom::logging::InitProcessLogging(argv[0]);
  const int world = argc > 1 ? std::atoi(argv[1]) : 2;
  const int steps = argc > 2 ? std::atoi(argv[2]) : 4;
  if (world < 1 || steps < 2) {
    std::fprintf(stderr, "usage: sharding [RANKS >= 1 [STEPS >= 2]]\n");
    return 2;
  }
  const absl::StatusOr<int> port = loom::base::PickFreePort();
  if (!port.ok()) {
    std::fprintf(stderr, "sharding benchmark: %s\n", port.status().ToString().c_str());
    return 1;
  }
  const std::string out = absl::StrCat("/tmp/loom_sharding_benchmark_", getpid(), ".txt");
  std::vector<int> codes = loom::distributed::testing::RunRanks(
      world, absl::Minutes(30),
      [&](int rank) { return loom::benchmarks::Child(rank, world, *port, steps, out); });
  for (int r = 0; r < world; ++r) {
    if (codes[r] != 0) {
      std::fprintf(stderr, "sharding benchmark: rank %d failed (%d)\n", r, codes[r]);
      return 1;
    }
  }
  std::ifstream in(out);
  std::string line;
  while (std::getline(in, line)) std::printf("%s\n", line.c_str());
  std::remove(out.c_str());
  return 0;
}
