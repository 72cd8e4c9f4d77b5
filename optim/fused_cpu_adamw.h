// FusedCpuAdamW (issue 16, first step): torch::optim::AdamW's update in one pass over each
// parameter, gradient and both moments — DeepSpeedCPUAdam's idea — vectorised by the compiler
// for AVX-512, AVX2 or plain x86-64 and picked at run time (GCC's target_clones), and split over
// LibTorch's intra-op threads. The optimizer step is the host-side bottleneck of offloaded
// training; torch's AdamW makes eight passes over memory per step.
//
// Contract: the same results as torch::optim::AdamW with the same options (to float rounding:
// the fused pass may contract a multiply and an add into one FMA), the same state
// (AdamWParamState: step, exp_avg, exp_avg_sq), so checkpoints, HF's optimizer.pt and the
// strategies treat it as the AdamW it is. Parameters that are not contiguous CPU float32 with
// dense gradients, and amsgrad, take torch's AdamW path for that step.
//
// Example:
//   optim::FusedCpuAdamW opt(model->parameters(), torch::optim::AdamWOptions(1e-3));
//   loss.backward();
//   opt.step();
#ifndef LOOM_OPTIM_FUSED_CPU_ADAMW_H_
#define LOOM_OPTIM_FUSED_CPU_ADAMW_H_

#include <torch/optim/adamw.h>

#include <vector>

namespace loom::optim {

class FusedCpuAdamW : public torch::optim::AdamW {
 public:
  using torch::optim::AdamW::AdamW;
  torch::Tensor step(LossClosure closure = nullptr) override;
};

// The kernel: one AdamW update of n elements (exposed for tests and benchmarks). The scalars in
// double, as torch's AdamW forms them (bias corrections 1 - beta^step).
void FusedAdamWUpdate(float* param, const float* grad, float* exp_avg, float* exp_avg_sq, int64_t n,
                      double lr, double beta1, double beta2, double eps, double weight_decay,
                      double bias_correction1, double bias_correction2);

}  // namespace loom::optim

#endif  // LOOM_OPTIM_FUSED_CPU_ADAMW_H_
