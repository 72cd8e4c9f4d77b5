#include "accelerate/prepared.h"

#include <c10/util/Exception.h>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "runtime/full_parameters.h"
#include "runtime/precision_forward.h"

namespace loom::accelerate {

void StashGradients(AcceleratorState& state) {
  if (state.grads_stashed || state.model == nullptr) return;
  state.stashed_grads.clear();
  for (at::Tensor& p : state.model->parameters()) {
    state.stashed_grads.push_back(p.grad());
    p.mutable_grad() = at::Tensor();
  }
  state.grads_stashed = true;
}

void RestoreGradients(AcceleratorState& state) {
  if (!state.grads_stashed) return;
  std::vector<at::Tensor> params = state.model->parameters();
  for (size_t i = 0; i < params.size() && i < state.stashed_grads.size(); ++i) {
    params[i].mutable_grad() = state.stashed_grads[i];
  }
  state.stashed_grads.clear();
  state.grads_stashed = false;
}

PreparedModel::PreparedModel(std::shared_ptr<modeling::Model> module,
                             std::shared_ptr<AcceleratorState> state)
    : module_(std::move(module)), state_(std::move(state)) {
  register_module("module", module_);
}

modeling::ModelOutput PreparedModel::Forward(const data::Batch& inputs) {
  AcceleratorState& s = *state_;
  // Gradients put aside after the last micro-step accumulate again from here.
  RestoreGradients(s);
  if (s.strategy != nullptr && is_training()) {
    const absl::Status status = s.strategy->BeforeForward(s.sync_gradients);
    TORCH_CHECK(status.ok(), "Accelerator: ", std::string(status.message()));
  }
  data::Batch on_device;
  for (const auto& [name, tensor] : inputs) {
    on_device[name] = tensor.defined() ? tensor.to(s.device) : tensor;
  }
  return runtime::ForwardInPrecision(*module_, on_device, *s.precision);
}

absl::Status PreparedModel::WithFullParameters(const std::function<absl::Status()>& fn) {
  return runtime::WithFullParameters(state_->strategy.get(), /*write_back=*/false,
                                     "the prepared model's full parameters", fn);
}

namespace {

std::vector<torch::optim::OptimizerParamGroup> CopyGroups(const torch::optim::Optimizer& inner) {
  std::vector<torch::optim::OptimizerParamGroup> groups;
  for (const auto& g : inner.param_groups()) {
    groups.emplace_back(g.params(), g.options().clone());
  }
  return groups;
}

}  // namespace

AcceleratedOptimizer::AcceleratedOptimizer(std::shared_ptr<torch::optim::Optimizer> inner,
                                           std::shared_ptr<AcceleratorState> state)
    : torch::optim::Optimizer(CopyGroups(*inner), inner->defaults().clone()),
      inner_(std::move(inner)),
      state_(std::move(state)) {
  for (const auto& g : inner_->param_groups()) synced_lr_.push_back(g.options().get_lr());
}

void AcceleratedOptimizer::SyncLearningRates() {
  auto& mine = param_groups();
  auto& theirs = inner_->param_groups();
  for (size_t i = 0; i < mine.size() && i < theirs.size() && i < synced_lr_.size(); ++i) {
    const double mine_lr = mine[i].options().get_lr();
    if (mine_lr != synced_lr_[i]) theirs[i].options().set_lr(mine_lr);
    const double lr = theirs[i].options().get_lr();
    mine[i].options().set_lr(lr);
    synced_lr_[i] = lr;
  }
}

at::Tensor AcceleratedOptimizer::step(LossClosure closure) {
  AcceleratorState& s = *state_;
  TORCH_CHECK(closure == nullptr, "Accelerator: a prepared optimizer's step takes no closure");
  if (!s.sync_gradients) return {};  // accumulating: accelerate skips the step
  TORCH_CHECK(s.strategy != nullptr,
              "Accelerator: prepare the model and the optimizer before optimizer->step()");
  SyncLearningRates();
  if (!s.clipped_this_window) {
    // Unscale (a loss scaler's gradients) even without clipping; a DeepSpeed config's
    // gradient_clipping applies as its engine applies it.
    const absl::Status unscaled = s.strategy->ClipGradients(s.auto_clip).status();
    TORCH_CHECK(unscaled.ok(), "Accelerator: ", std::string(unscaled.message()));
  }
  const absl::StatusOr<bool> stepped = s.strategy->OptimizerStep();
  TORCH_CHECK(stepped.ok(), "Accelerator: optimizer step: ",
              std::string(stepped.status().message()));
  s.step_was_skipped = !*stepped;
  s.strategy->ZeroGrad();
  s.clipped_this_window = false;
  return {};
}

void AcceleratedScheduler::Step() {
  const AcceleratorState& s = *state_;
  if (!s.sync_gradients || s.step_was_skipped) return;
  // Schedules sized by the unsharded loader: num_processes steps per optimizer step.
  const int times = s.split_batches ? 1 : s.topology.data_parallel_size;
  for (int i = 0; i < times; ++i) inner_->Step();
}

absl::StatusOr<data::Batch> DeviceCollator::Collate(
    const std::vector<data::Example>& examples) const {
  absl::StatusOr<data::Batch> batch = inner_->Collate(examples);
  if (!batch.ok() || device_.is_cpu()) return batch;
  for (auto& [name, tensor] : *batch) {
    if (tensor.defined()) tensor = tensor.to(device_, /*non_blocking=*/true);
  }
  return batch;
}

}  // namespace loom::accelerate
