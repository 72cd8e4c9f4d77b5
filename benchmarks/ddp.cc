// ddp: what DistributedDataParallel costs and how much of its communication hides behind the
// backward pass, on real ranks over Gloo on 127.0.0.1 (forked processes, one thread each).
//
//   ./bazelw run -c opt //benchmarks:ddp [-- RANKS]     (default 2 ranks)
//
// All in one run, every rank on the same model (6 x Linear(1024, 1024), 25 MB of float32
// gradients) and batch:
//   1. raw Gloo all-reduce of one flat tensor of the model's gradient bytes: time, algorithm
//      bandwidth (bytes / time) and bus bandwidth (x 2(N-1)/N, the nccl-tests convention);
//   2. the same bandwidths measured inside DDP: gradient bytes over the time from the first
//      bucket's launch to the last bucket's completion (DdpStats::last_comm_seconds);
//   3. step time (forward + backward + gradient sync) without DDP (compute only), with DDP
//      launching buckets from the backward hooks (overlap), and with all buckets launched after
//      the backward (no overlap), each the best of several rounds, and their ratios.
#include "distributed/ddp.h"

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "base/free_port.h"
#include "distributed/collectives.h"
#include "distributed/multiprocess_testing.h"
#include "logging/process_logging.h"

namespace loom::benchmarks {
namespace {

using distributed::DdpOptions;
using distributed::DistributedDataParallel;
using distributed::ProcessGroup;

constexpr int kLayers = 6;
constexpr int kWidth = 1024;
constexpr int kBatch = 64;
constexpr int kRounds = 5;
constexpr int kStepsPerRound = 4;
constexpr int kAllReduces = 10;

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct Mlp : torch::nn::Module {
  Mlp() {
    for (int i = 0; i < kLayers; ++i) {
      layers.push_back(register_module("l" + std::to_string(i), torch::nn::Linear(kWidth, kWidth)));
    }
  }
  torch::Tensor Forward(torch::Tensor x) {
    for (auto& l : layers) x = torch::relu(l(x));
    return x.pow(2).mean();
  }
  std::vector<torch::nn::Linear> layers;
};

// Best time of kRounds rounds of kStepsPerRound steps; `sync` null = compute only.
struct Timing {
  double step = std::numeric_limits<double>::infinity();  // best per-step time
  double comm = std::numeric_limits<double>::infinity();  // first launch -> last done
  double wait = std::numeric_limits<double>::infinity();  // blocked in AfterBackward
};

Timing StepTime(Mlp& model, distributed::GradientSync* sync, const torch::Tensor& x,
                distributed::ProcessGroup& pg) {
  Timing t;
  for (int round = 0; round < kRounds; ++round) {
    if (!distributed::Barrier(pg).ok()) std::abort();
    const double start = Now();
    for (int s = 0; s < kStepsPerRound; ++s) {
      model.zero_grad();
      if (sync != nullptr && !sync->BeforeForward(true).ok()) std::abort();
      model.Forward(x).backward();
      if (sync != nullptr) {
        absl::Status st = sync->AfterBackward();
        if (!st.ok()) {
          std::fprintf(stderr, "%s\n", st.ToString().c_str());
          std::abort();
        }
        auto* ddp = static_cast<DistributedDataParallel*>(sync);
        t.comm = std::min(t.comm, ddp->stats().last_comm_seconds);
        t.wait = std::min(t.wait, ddp->stats().last_wait_seconds);
      }
    }
    t.step = std::min(t.step, (Now() - start) / kStepsPerRound);
  }
  return t;
}

// DDP with `options`, overlapped and not.
struct DdpRun {
  Timing overlap, serial;
  int64_t buckets = 0;
};

DdpRun MeasureDdp(Mlp& model, ProcessGroup& pg, const torch::Tensor& x, DdpOptions options) {
  DdpRun run;
  for (bool overlap : {true, false}) {
    auto ddp = DistributedDataParallel::Create(model, pg, DdpOptions(options).set_overlap(overlap));
    if (!ddp.ok()) std::abort();
    (overlap ? run.overlap : run.serial) = StepTime(model, ddp->get(), x, pg);
    run.buckets = (*ddp)->stats().bucket_count;
  }
  return run;
}

int Rank(int rank, int world, int port) {
  at::set_num_threads(1);
  absl::StatusOr<ProcessGroup> pg =
      distributed::testing::JoinGroup(rank, world, port, absl::Seconds(120));
  if (!pg.ok()) {
    std::fprintf(stderr, "rank %d: %s\n", rank, pg.status().ToString().c_str());
    return 1;
  }
  torch::manual_seed(0);
  Mlp model;
  int64_t numel = 0;
  for (const auto& p : model.parameters()) numel += p.numel();
  const double bytes = static_cast<double>(numel) * 4;
  const double bus = 2.0 * (world - 1) / world;

  // 1. Raw all-reduce of the gradient bytes.
  at::Tensor flat = torch::ones({numel});
  double raw = std::numeric_limits<double>::infinity();
  for (int i = 0; i < kAllReduces + 2; ++i) {
    const double start = Now();
    if (!distributed::AllReduce(*pg, flat).ok()) return 1;
    if (i >= 2) raw = std::min(raw, Now() - start);
  }

  torch::manual_seed(1);
  const torch::Tensor x = torch::randn({kBatch, kWidth});
  const Timing compute = StepTime(model, nullptr, x, *pg);
  const DdpRun standard = MeasureDdp(model, *pg, x, DdpOptions());
  const DdpRun small = MeasureDdp(model, *pg, x, DdpOptions().set_bucket_cap_mb(4));
  if (!distributed::Barrier(*pg).ok()) return 1;
  if (rank != 0) return 0;

  std::printf("ranks: %d (Gloo over 127.0.0.1, 1 compute thread each); model gradients: %.1f MB\n",
              world, bytes / 1e6);
  std::printf("raw Gloo all-reduce of %.1f MB: %.2f ms, algbw %.2f GB/s, busbw %.2f GB/s\n",
              bytes / 1e6, raw * 1e3, bytes / raw / 1e9, bytes / raw * bus / 1e9);
  // Without overlap, DDP's communication window is pure communication: its bandwidth.
  const double in_ddp = standard.serial.comm;
  std::printf(
      "inside DDP (all buckets after backward): %.2f ms, algbw %.2f GB/s, busbw %.2f "
      "GB/s = %.3f x raw\n",
      in_ddp * 1e3, bytes / in_ddp / 1e9, bytes / in_ddp * bus / 1e9, raw / in_ddp);
  std::printf("step time, compute only (no DDP): %.2f ms\n", compute.step * 1e3);
  for (const auto& [name, run] :
       {std::pair<const char*, const DdpRun&>{"bucket_cap_mb 25", standard},
        {"bucket_cap_mb 4", small}}) {
    std::printf(
        "%s (%ld buckets): step with overlap %.2f ms (%.3f x compute, %.2f ms waiting "
        "after backward), without overlap %.2f ms (%.3f x compute); with / without: "
        "%.3f\n",
        name, static_cast<long>(run.buckets), run.overlap.step * 1e3,
        run.overlap.step / compute.step, run.overlap.wait * 1e3, run.serial.step * 1e3,
        run.serial.step / compute.step, run.overlap.step / run.serial.step);
  }
  return 0;
}

}  // namespace
}  // namespace loom::benchmarks

int main(int argc, char** argv) {
  loom::logging::InitProcessLogging(argv[0]);
  const int world = argc > 1 ? std::atoi(argv[1]) : 2;
  if (world < 2) {
    std::fprintf(stderr, "usage: ddp [RANKS >= 2]\n");
    return 2;
  }
  const absl::StatusOr<int> port = loom::base::PickFreePort();
  if (!port.ok()) {
    std::fprintf(stderr, "ddp benchmark: %s\n", port.status().ToString().c_str());
    return 1;
  }
  std::vector<int> codes = loom::distributed::testing::RunRanks(
      world, absl::Minutes(10),
      [&](int rank) { return loom::benchmarks::Rank(rank, world, *port); });
  for (int r = 0; r < world; ++r) {
    if (codes[r] != 0) {
      std::fprintf(stderr, "ddp benchmark: rank %d failed (%d)\n", r, codes[r]);
      return 1;
    }
  }
  return 0;
}
