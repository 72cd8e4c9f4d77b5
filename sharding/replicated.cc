#include "sharding/replicated.h"

#include <functional>
#include <set>

#include "absl/memory/memory.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "base/torch_status.h"
#include "checkpoint/optimizer_state.h"
#include "optim/clip_grad.h"

namespace loom::sharding {
namespace {

void SumTensorBytes(const c10::IValue& v, int64_t& total) {
  if (v.isTensor()) {
    total += TensorBytes(v.toTensor());
  } else if (v.isGenericDict()) {
    for (const auto& entry : v.toGenericDict()) SumTensorBytes(entry.value(), total);
  } else if (v.isList()) {
    for (const c10::IValue& e : v.toListRef()) SumTensorBytes(e, total);
  } else if (v.isTuple()) {
    for (const c10::IValue& e : v.toTupleRef().elements()) SumTensorBytes(e, total);
  }
}

}  // namespace

int64_t TensorBytes(const at::Tensor& t) {
  return t.defined() ? static_cast<int64_t>(t.numel()) * static_cast<int64_t>(t.element_size()) : 0;
}

ModelStateBytes ModuleAndOptimizerBytes(torch::nn::Module& model,
                                        const torch::optim::Optimizer& optimizer) {
  ModelStateBytes bytes;
  std::set<const void*> seen;
  for (const at::Tensor& p : model.parameters()) {
    if (!seen.insert(p.data_ptr()).second) continue;
    bytes.parameters += TensorBytes(p);
    bytes.gradients += TensorBytes(p.grad());
  }
  bytes.optimizer_states = OptimizerStateBytes(optimizer);
  return bytes;
}

std::vector<at::Tensor> TrainableParameters(torch::nn::Module& model) {
  std::vector<at::Tensor> params;
  for (const at::Tensor& p : model.parameters()) {
    if (p.requires_grad()) params.push_back(p);
  }
  return params;
}

int64_t OptimizerStateBytes(const torch::optim::Optimizer& optimizer) {
  absl::StatusOr<c10::IValue> dict = checkpoint::OptimizerStateDict(optimizer);
  if (!dict.ok() || !dict->isGenericDict()) return 0;
  int64_t total = 0;
  for (const auto& entry : dict->toGenericDict()) {
    if (entry.key().isString() && entry.key().toStringRef() == "state") {
      SumTensorBytes(entry.value(), total);
    }
  }
  return total;
}

absl::StatusOr<std::unique_ptr<ReplicatedStrategy>> ReplicatedStrategy::Create(
    const ReplicatedOptions& o) {
  RETURN_IF_ERROR(o.CheckPieces("ReplicatedStrategy"));
  if (o.precision->policy().mode == precision::PrecisionMode::kHalfWeights) {
    return absl::UnimplementedError(
        "--deepspeed: 16-bit weights with ZeRO stage 0 (DeepSpeed's BF16_Optimizer / FP16 "
        "optimizer) are not implemented in loom yet; use zero_optimization.stage 1 or 2, or "
        "train in fp32");
  }
  if (o.process_group == nullptr) {
    return absl::WrapUnique(new ReplicatedStrategy(
        o, std::make_unique<distributed::LocalGradientSync>(), /*ddp=*/false));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<distributed::DistributedDataParallel> ddp,
                   distributed::DistributedDataParallel::Create(*o.model, *o.process_group, o.ddp),
                   "wrapping the model in DistributedDataParallel");
  return absl::WrapUnique(new ReplicatedStrategy(o, std::move(ddp), /*ddp=*/true));
}

ReplicatedStrategy::ReplicatedStrategy(const ReplicatedOptions& o,
                                       std::unique_ptr<distributed::GradientSync> sync, bool ddp)
    : model_(o.model),
      optimizer_(o.optimizer),
      precision_(o.precision),
      sync_(std::move(sync)),
      ddp_(ddp),
      topology_(o.process_group != nullptr
                    ? DataParallelTopology::PerRank(o.process_group->world_size(),
                                                    o.process_group->rank())
                    : DataParallelTopology::PerRank(1, 0)),
      params_(TrainableParameters(*o.model)) {}

DataParallelTopology ReplicatedStrategy::Topology() const { return topology_; }

absl::Status ReplicatedStrategy::BeforeForward(bool closes_window) {
  return sync_->BeforeForward(closes_window);
}

absl::Status ReplicatedStrategy::AfterBackward() { return sync_->AfterBackward(); }

absl::StatusOr<std::optional<double>> ReplicatedStrategy::ClipGradients(double max_norm) {
  if (max_norm <= 0) return std::optional<double>();
  // Unscaled first (--fp16's GradScaler), so the norm clipped and logged is the true one.
  RETURN_IF_ERROR(precision_->UnscaleGradients(params_));
  try {
    return std::optional<double>(optim::ClipGradNorm(params_, max_norm));
  } catch (const std::exception& e) {
    return base::TorchErrorToStatus(e, absl::StatusCode::kInternal, "clipping the gradients");
  }
}

absl::StatusOr<bool> ReplicatedStrategy::OptimizerStep() {
  return precision_->OptimizerStep(*optimizer_, params_);
}

void ReplicatedStrategy::ZeroGrad() { model_->zero_grad(); }

ModelStateBytes ReplicatedStrategy::StateBytes() const {
  return ModuleAndOptimizerBytes(*model_, *optimizer_);
}

const distributed::DdpStats* ReplicatedStrategy::ddp_stats() const {
  const auto* ddp = dynamic_cast<const distributed::DistributedDataParallel*>(sync_.get());
  return ddp != nullptr ? &ddp->stats() : nullptr;
}

}  // namespace loom::sharding
