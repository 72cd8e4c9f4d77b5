// cpu_adam: loom's fused CPU AdamW (optim/fused_cpu_adamw.h, issue 16) against
// torch::optim::AdamW on the same 50M fp32 parameters, in one process, alternating rounds:
//
//   ./bazelw run -c opt //benchmarks:cpu_adam
//
// Prints each optimizer's best step time, parameters per second and the ratio, with the CPU
// features the fused kernel's run-time dispatch can use and the intra-op thread count.
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <limits>

#include "optim/fused_cpu_adamw.h"

namespace {

constexpr int64_t kParams = 50'000'000;
constexpr int kSteps = 5;
constexpr int kRounds = 3;

template <typename Opt>
double BestStep() {
  torch::manual_seed(1);
  torch::Tensor p = torch::randn({kParams}).set_requires_grad(true);
  p.mutable_grad() = torch::randn({kParams});
  Opt opt(std::vector<torch::Tensor>{p}, torch::optim::AdamWOptions(1e-3).weight_decay(0.01));
  double best = std::numeric_limits<double>::infinity();
  for (int s = 0; s < kSteps; ++s) {
    const auto start = std::chrono::steady_clock::now();
    opt.step();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (s > 0) best = std::min(best, seconds);  // the first allocates the moments
  }
  return best;
}

}  // namespace

int main() {
  __builtin_cpu_init();
  std::printf("CPU: avx512f %d, avx2 %d; intra-op threads %d; %lld fp32 parameters\n",
              __builtin_cpu_supports("avx512f") ? 1 : 0, __builtin_cpu_supports("avx2") ? 1 : 0,
              at::get_num_threads(), static_cast<long long>(kParams));
  double torch_best = std::numeric_limits<double>::infinity();
  double fused_best = std::numeric_limits<double>::infinity();
  for (int r = 0; r < kRounds; ++r) {
    torch_best = std::min(torch_best, BestStep<torch::optim::AdamW>());
    fused_best = std::min(fused_best, BestStep<loom::optim::FusedCpuAdamW>());
  }
  std::printf("  torch::optim::AdamW  %7.1f ms/step  %6.0f M params/s\n", torch_best * 1e3,
              kParams / torch_best / 1e6);
  std::printf("  FusedCpuAdamW        %7.1f ms/step  %6.0f M params/s  (%.2fx torch's)\n",
              fused_best * 1e3, kParams / fused_best / 1e6, torch_best / fused_best);
  return 0;
}
