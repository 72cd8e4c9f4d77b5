// torch.optim.AdamW and torch.optim.Adam as the Python torch of this build's LibTorch computes
// them (`--optim adamw_torch`, DeepSpeed's "AdamW" / "Adam"; the single-tensor path, which torch
// takes on the CPU), bit for bit. LibTorch's
// C++ torch::optim::AdamW keeps torch 1.13's first-moment update, m = m * b1 + g * (1 - b1);
// Python's AdamW has used m.lerp_(g, 1 - b1) since torch 2.0, which rounds differently. This
// class is a torch::optim::AdamW (same options, state and state-dict layout) whose step()
// follows torch 2.x's `_single_tensor_adam` with decoupled weight decay on LibTorch >= 2.0, and
// LibTorch's own step on 1.13 (where the two agree):
//   p *= 1 - lr * wd                       (AdamW, when wd != 0)
//   g = g + wd * p                         (Adam, when wd != 0: L2 decay into the gradient)
//   m.lerp_(g, 1 - b1);  v = v * b2 + g * g * (1 - b2)
//   denom = sqrt(max(v_max, v) or v) / sqrt(1 - b2^t) + eps
//   p -= lr / (1 - b1^t) * m / denom
//
// TorchAdam is the same for torch::optim::Adam (torch 2.x's Adam with decoupled_weight_decay
// False).
//
// Example:
//   TorchAdamW opt(groups, torch::optim::AdamWOptions(2e-5).weight_decay(0.01));
//   loss.backward(); opt.step();
#ifndef LOOM_OPTIM_TORCH_ADAMW_H_
#define LOOM_OPTIM_TORCH_ADAMW_H_

#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>

#include <utility>
#include <vector>

namespace loom::optim {

class TorchAdamW : public torch::optim::AdamW {
 public:
  explicit TorchAdamW(std::vector<torch::optim::OptimizerParamGroup> groups,
                      torch::optim::AdamWOptions defaults = {})
      : torch::optim::AdamW(std::move(groups), std::move(defaults)) {}
  explicit TorchAdamW(std::vector<at::Tensor> params, torch::optim::AdamWOptions defaults = {})
      : torch::optim::AdamW(std::move(params), std::move(defaults)) {}

  at::Tensor step(LossClosure closure = nullptr) override;
};

class TorchAdam : public torch::optim::Adam {
 public:
  explicit TorchAdam(std::vector<torch::optim::OptimizerParamGroup> groups,
                     torch::optim::AdamOptions defaults = {})
      : torch::optim::Adam(std::move(groups), std::move(defaults)) {}
  explicit TorchAdam(std::vector<at::Tensor> params, torch::optim::AdamOptions defaults = {})
      : torch::optim::Adam(std::move(params), std::move(defaults)) {}

  at::Tensor step(LossClosure closure = nullptr) override;
};

}  // namespace loom::optim

#endif  // LOOM_OPTIM_TORCH_ADAMW_H_
