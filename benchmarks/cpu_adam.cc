// cpu_adam: loom's fused CPU AdamW (optim/fused_cpu_optim.h) against
// torch::optim::AdamW and against the memory-bandwidth bound, on the same 100M fp32 parameters
// in one process:
//
//   ./bazelw run -c opt //benchmarks:cpu_adam
//
// The bound: a streaming pass over the same bytes an AdamW step moves (reads parameter,
// gradient and both moments, writes parameter and both moments: 28 bytes per parameter) with
// next to no arithmetic, vectorised and split over the same threads. Prints, for 1 and 2
// intra-op threads: torch's AdamW, the fused AdamW on each ISA path this CPU runs, and the
// bound, as parameters per second, with the fused/torch and fused/bound ratios (best of
// several steps, rounds alternating so that drift hits all alike).
#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <limits>

#include "optim/fused_cpu_optim.h"

namespace {

constexpr int64_t kParams = 100'000'000;
constexpr int kSteps = 4;
constexpr int kRounds = 2;

double Seconds(const std::function<void()>& fn) {
  const auto start = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

struct Tensors {
  torch::Tensor p, m, v;
  Tensors() {
    torch::manual_seed(1);
    p = torch::randn({kParams}).set_requires_grad(true);
    p.mutable_grad() = torch::randn({kParams});
    m = torch::zeros({kParams});
    v = torch::zeros({kParams});
  }
};

// Best step of an optimizer built on t.p (the first step, which allocates the moments, is not
// counted).
template <typename Opt>
double BestOptimizerStep(Tensors& t, loom::optim::CpuIsa isa) {
  Opt opt(std::vector<torch::Tensor>{t.p}, torch::optim::AdamWOptions(1e-3).weight_decay(0.01));
  if constexpr (std::is_base_of_v<loom::optim::FusedCpuExtras, Opt>) opt.set_isa(isa);
  double best = std::numeric_limits<double>::infinity();
  for (int s = 0; s < kSteps; ++s) {
    const double sec = Seconds([&] { opt.step(); });
    if (s > 0) best = std::min(best, sec);
  }
  return best;
}

// The same 28 bytes per parameter as an AdamW step, with one add per stream.
__attribute__((noinline)) void Stream(float* __restrict__ p, const float* __restrict__ g,
                                      float* __restrict__ m, float* __restrict__ v, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float gi = g[i];
    p[i] += gi;
    m[i] += gi;
    v[i] += gi;
  }
}

double BestStream(Tensors& t) {
  float* p = t.p.data_ptr<float>();
  const float* g = t.p.grad().data_ptr<float>();
  float* m = t.m.data_ptr<float>();
  float* v = t.v.data_ptr<float>();
  double best = std::numeric_limits<double>::infinity();
  for (int s = 0; s < kSteps; ++s) {
    best = std::min(best, Seconds([&] {
                      at::parallel_for(0, kParams, 32768, [&](int64_t b, int64_t e) {
                        Stream(p + b, g + b, m + b, v + b, e - b);
                      });
                    }));
  }
  return best;
}

double Rate(double seconds) { return kParams / seconds / 1e6; }

}  // namespace

int main() {
  using loom::optim::CpuIsa;
  __builtin_cpu_init();
  std::printf(
      "CPU flags: avx512f %d, avx512bw %d, avx512_bf16 %d, avx2 %d, fma %d; widest fused path: "
      "%s; %lld fp32 parameters (28 bytes moved each per step)\n",
      __builtin_cpu_supports("avx512f") ? 1 : 0, __builtin_cpu_supports("avx512bw") ? 1 : 0,
      __builtin_cpu_supports("avx512bf16") ? 1 : 0, __builtin_cpu_supports("avx2") ? 1 : 0,
      __builtin_cpu_supports("fma") ? 1 : 0, loom::optim::CpuIsaName(loom::optim::DetectCpuIsa()),
      static_cast<long long>(kParams));
  Tensors t;
  const int max_threads = at::get_num_threads();
  for (int threads = 1; threads <= std::max(2, max_threads); ++threads) {
    at::set_num_threads(threads);
    const auto isas = loom::optim::SupportedCpuIsas();
    double torch_best = std::numeric_limits<double>::infinity();
    double bound = std::numeric_limits<double>::infinity();
    std::vector<double> fused(isas.size(), std::numeric_limits<double>::infinity());
    for (int r = 0; r < kRounds; ++r) {
      torch_best =
          std::min(torch_best, BestOptimizerStep<torch::optim::AdamW>(t, CpuIsa::kScalar));
      for (size_t i = 0; i < isas.size(); ++i) {
        fused[i] =
            std::min(fused[i], BestOptimizerStep<loom::optim::FusedCpuAdamW>(t, isas[i]));
      }
      bound = std::min(bound, BestStream(t));
    }
    std::printf("%d intra-op thread%s:\n", threads, threads == 1 ? "" : "s");
    std::printf("  torch::optim::AdamW      %7.1f ms/step  %6.0f M params/s\n", torch_best * 1e3,
                Rate(torch_best));
    for (size_t i = 0; i < isas.size(); ++i) {
      std::printf(
          "  FusedCpuAdamW %-8s   %7.1f ms/step  %6.0f M params/s  %5.2fx torch  %3.0f%% of bound\n",
          loom::optim::CpuIsaName(isas[i]), fused[i] * 1e3, Rate(fused[i]),
          torch_best / fused[i], 100 * bound / fused[i]);
    }
    std::printf("  bound (streaming pass)   %7.1f ms/step  %6.0f M params/s  (%.1f GB/s)\n",
                bound * 1e3, Rate(bound), 28.0 * kParams / bound / 1e9);
    if (threads >= 2 && threads >= max_threads) break;
  }
  return 0;
}
