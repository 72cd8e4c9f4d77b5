// GradReadyHooks: a callback after each parameter's gradient accumulation (the AccumulateGrad
// node's post-hook, what PyTorch DDP's reducer and FSDP register), removed when the object goes
// away. Shared by DDP's bucketed all-reduce, ZeRO's overlap_comm and the full-shard runner.
//
// Contract: Add(param, fn) runs fn() each time backward has accumulated `param`'s gradient
// (param.grad() holds the sum then); `param` must be a leaf that requires grad
// (InvalidArgument otherwise). The hooks are removed by the destructor; fn must not outlive
// what it captures.
//
// Example:
//   GradReadyHooks hooks;
//   for (size_t i = 0; i < params.size(); ++i) {
//     RETURN_IF_ERROR(hooks.Add(params[i], [this, i] { OnGradReady(i); }));
//   }
#ifndef LOOM_DISTRIBUTED_GRAD_READY_HOOKS_H_
#define LOOM_DISTRIBUTED_GRAD_READY_HOOKS_H_

#include <ATen/ATen.h>
#include <torch/csrc/autograd/function.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "absl/status/status.h"

namespace loom::distributed {

class GradReadyHooks {
 public:
  GradReadyHooks() = default;
  ~GradReadyHooks();
  GradReadyHooks(const GradReadyHooks&) = delete;
  GradReadyHooks& operator=(const GradReadyHooks&) = delete;

  absl::Status Add(const at::Tensor& param, std::function<void()> fn);

 private:
  std::vector<std::shared_ptr<torch::autograd::Node>> accumulators_;
  std::vector<uintptr_t> keys_;
};

}  // namespace loom::distributed

#endif  // LOOM_DISTRIBUTED_GRAD_READY_HOOKS_H_
