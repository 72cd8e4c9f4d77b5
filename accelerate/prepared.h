// What Accelerator::Prepare returns in place of each object (accelerate's prepared model,
// AcceleratedOptimizer, AcceleratedScheduler and DataLoaderShard pieces); accelerator.h
// states their contract. Internal to //accelerate.
#ifndef LOOM_ACCELERATE_PREPARED_H_
#define LOOM_ACCELERATE_PREPARED_H_

#include <torch/optim/optimizer.h>

#include <functional>
#include <memory>
#include <vector>

#include "accelerate/accelerator_state.h"
#include "data/collator.h"
#include "data/data_loader.h"
#include "data/sampler.h"
#include "modeling/model.h"
#include "optim/lr_scheduler.h"

namespace loom::accelerate {

// The accumulated gradients of the prepared model, put aside between micro-steps that do not
// synchronize (so the loop's step / zero_grad find none) and back before the next forward.
void StashGradients(AcceleratorState& state);
void RestoreGradients(AcceleratorState& state);

// The prepared model: the original module as child "module" (its parameters are the
// original's), whose Forward moves the batch to the device, tells the strategy whether this
// micro-step synchronizes, and runs under the precision's autocast with fp32 outputs.
class PreparedModel : public modeling::Model {
 public:
  PreparedModel(std::shared_ptr<modeling::Model> module, std::shared_ptr<AcceleratorState> state);

  modeling::ModelOutput Forward(const data::Batch& inputs) override;
  std::vector<std::string> LabelNames() const override { return module_->LabelNames(); }
  std::string MainInputName() const override { return module_->MainInputName(); }
  double FloatingPointOps(const data::Batch& inputs) const override {
    return module_->FloatingPointOps(inputs);
  }
  std::string ConfigJson() const override { return module_->ConfigJson(); }
  modeling::ForwardHooks* InputEmbeddingHooks() override { return module_->InputEmbeddingHooks(); }
  std::vector<std::string> UnitClassNames() const override { return module_->UnitClassNames(); }
  absl::Status EnableGradientCheckpointing(const modeling::CheckpointingOptions& o) override {
    return module_->EnableGradientCheckpointing(o);
  }
  void DisableGradientCheckpointing() override { module_->DisableGradientCheckpointing(); }
  bool IsGradientCheckpointing() const override { return module_->IsGradientCheckpointing(); }

  const std::shared_ptr<modeling::Model>& module() const { return module_; }
  // fn() with every parameter of module() whole (a collective under parameter sharding: every
  // rank calls it).
  absl::Status WithFullParameters(const std::function<absl::Status()>& fn);

 private:
  std::shared_ptr<modeling::Model> module_;
  std::shared_ptr<AcceleratorState> state_;
};

// The prepared optimizer: the original's parameter groups (same tensors, copied options);
// step() works only on synchronizing micro-steps, through the strategy, and zeroes the
// gradients it used. Learning rates set on either optimizer reach the original's step.
class AcceleratedOptimizer : public torch::optim::Optimizer {
 public:
  AcceleratedOptimizer(std::shared_ptr<torch::optim::Optimizer> inner,
                       std::shared_ptr<AcceleratorState> state);
  at::Tensor step(LossClosure closure = nullptr) override;
  const std::shared_ptr<torch::optim::Optimizer>& inner() const { return inner_; }

 private:
  // A scheduler stepping either optimizer changes its groups' lr: the changed side wins.
  void SyncLearningRates();

  std::shared_ptr<torch::optim::Optimizer> inner_;
  std::shared_ptr<AcceleratorState> state_;
  std::vector<double> synced_lr_;
};

// The prepared scheduler (accelerate's AcceleratedScheduler with step_with_optimizer).
class AcceleratedScheduler : public optim::LrScheduler {
 public:
  AcceleratedScheduler(std::shared_ptr<optim::LrScheduler> inner,
                       std::shared_ptr<AcceleratorState> state)
      : inner_(std::move(inner)), state_(std::move(state)) {}
  void Step() override;
  void StepOnMetric(double metric) override { inner_->StepOnMetric(metric); }
  bool steps_on_metric() const override { return inner_->steps_on_metric(); }
  std::vector<double> LastLr() const override { return inner_->LastLr(); }
  int64_t last_epoch() const override { return inner_->last_epoch(); }
  c10::IValue StateDict() const override { return inner_->StateDict(); }
  absl::Status LoadStateDict(const c10::IValue& state) override {
    return inner_->LoadStateDict(state);
  }
  const std::shared_ptr<optim::LrScheduler>& inner() const { return inner_; }

 private:
  std::shared_ptr<optim::LrScheduler> inner_;
  std::shared_ptr<AcceleratorState> state_;
};

// Batches collated by `inner`, then moved to `device`.
class DeviceCollator : public data::Collator {
 public:
  DeviceCollator(std::shared_ptr<const data::Collator> inner, at::Device device)
      : inner_(std::move(inner)), device_(device) {}
  absl::StatusOr<data::Batch> Collate(const std::vector<data::Example>& examples) const override;

 private:
  std::shared_ptr<const data::Collator> inner_;
  at::Device device_;
};

// Another loader's sampler, used in place (the loader is kept alive with it).
class BorrowedSampler : public data::Sampler {
 public:
  explicit BorrowedSampler(std::shared_ptr<const data::DataLoader> owner)
      : owner_(std::move(owner)) {}
  int64_t Size() const override { return owner_->sampler()->Size(); }
  std::vector<int64_t> Indices(int64_t epoch) const override {
    return owner_->sampler()->Indices(epoch);
  }

 private:
  std::shared_ptr<const data::DataLoader> owner_;
};

}  // namespace loom::accelerate

#endif  // LOOM_ACCELERATE_PREPARED_H_
