#include "distributed/grad_ready_hooks.h"

#include <torch/csrc/autograd/functions/accumulate_grad.h>
#include <torch/csrc/autograd/variable.h>

namespace loom::distributed {
namespace {

struct Hook : torch::autograd::FunctionPostHook {
  explicit Hook(std::function<void()> fn) : fn(std::move(fn)) {}
  torch::autograd::variable_list operator()(const torch::autograd::variable_list& outputs,
                                            const torch::autograd::variable_list&) override {
    fn();
    return outputs;
  }
  std::function<void()> fn;
};

}  // namespace

GradReadyHooks::~GradReadyHooks() {
  for (size_t i = 0; i < accumulators_.size(); ++i) accumulators_[i]->del_post_hook(keys_[i]);
}

absl::Status GradReadyHooks::Add(const at::Tensor& param, std::function<void()> fn) {
  if (!param.is_leaf() || !param.requires_grad()) {
    return absl::InvalidArgumentError(
        "GradReadyHooks: a gradient hook needs a leaf tensor that requires grad");
  }
  std::shared_ptr<torch::autograd::Node> acc = torch::autograd::impl::grad_accumulator(param);
  if (acc == nullptr) {
    return absl::InvalidArgumentError("GradReadyHooks: the tensor has no gradient accumulator");
  }
  keys_.push_back(acc->add_post_hook(std::make_unique<Hook>(std::move(fn))));
  accumulators_.push_back(std::move(acc));
  return absl::OkStatus();
}

}  // namespace loom::distributed
