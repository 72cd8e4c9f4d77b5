// ReplicatedStrategy: every rank holds the whole model, its gradients and the optimizer state —
// one process, or PyTorch DDP over a process group (distributed/ddp.h: bucketed all-reduce of
// the gradients from backward hooks, nothing on accumulation micro-steps). It is also what
// DeepSpeed's ZeRO stage 0 is ("uses DeepSpeed only as DDP", transformers' DeepSpeed docs).
//
// Contract: ShardingStrategy's (strategy.h), with
//   - Create: with a process group, DDP is set up (rank 0's weights broadcast to every rank; an
//     error names the first rank whose parameters differ); without, nothing communicates.
//   - ClipGradients: the precision's unscale (GradScaler), then optim::ClipGradNorm over the
//     trainable parameters (torch's clip_grad_norm_, bit for bit).
//   - OptimizerStep: the precision's step (GradScaler skip rules) over the trainable parameters.
//   - ZeroGrad: the module's zero_grad() (gradients kept, zeroed).
//   - StateBytes: every parameter and defined gradient once (shared storage counted once), the
//     optimizer's state tensors; no master weights.
//   The model, optimizer and precision must outlive the strategy.
//
// Example:
//   ASSIGN_OR_RETURN(auto strategy, ReplicatedStrategy::Create(
//       ReplicatedOptions().set_model(model).set_optimizer(opt).set_precision(precision)));
#ifndef LOOM_SHARDING_REPLICATED_H_
#define LOOM_SHARDING_REPLICATED_H_

#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "distributed/ddp.h"
#include "distributed/gradient_sync.h"
#include "distributed/process_group.h"
#include "precision/training_precision.h"
#include "sharding/strategy.h"
#include "sharding/strategy_pieces.h"

namespace loom::sharding {

struct ReplicatedOptions : StrategyPieces<ReplicatedOptions> {
  distributed::DdpOptions ddp;

  ReplicatedOptions& set_ddp(distributed::DdpOptions v) {
    ddp = std::move(v);
    return *this;
  }
};

class ReplicatedStrategy : public ShardingStrategy {
 public:
  static absl::StatusOr<std::unique_ptr<ReplicatedStrategy>> Create(const ReplicatedOptions& o);

  std::string Name() const override { return ddp_ ? "DDP" : "single process"; }
  // Nothing sharded, nothing offloaded; one replica per rank.
  StrategyCapabilities Capabilities() const override { return {}; }
  DataParallelTopology Topology() const override;
  absl::Status BeforeForward(bool closes_window) override;
  absl::Status AfterBackward() override;
  absl::StatusOr<std::optional<double>> ClipGradients(double max_norm) override;
  absl::StatusOr<bool> OptimizerStep() override;
  void ZeroGrad() override;
  ModelStateBytes StateBytes() const override;
  // DDP's communication counters (null for one process): what tests count traffic with.
  const distributed::DdpStats* ddp_stats() const;

 private:
  ReplicatedStrategy(const ReplicatedOptions& o, std::unique_ptr<distributed::GradientSync> sync,
                     bool ddp);

  modeling::Model* model_;
  torch::optim::Optimizer* optimizer_;
  precision::TrainingPrecision* precision_;
  std::unique_ptr<distributed::GradientSync> sync_;
  bool ddp_;
  DataParallelTopology topology_;
  std::vector<at::Tensor> params_;  // those that require grad, in registration order
};

// The module's parameters that require grad, in registration order.
std::vector<at::Tensor> TrainableParameters(torch::nn::Module& model);

// The bytes of a tensor's elements (0 when undefined).
int64_t TensorBytes(const at::Tensor& t);

// What every strategy holds of the module and its optimizer: each parameter and its gradient
// once (shared storage counted once) and the optimizer's state tensors; a strategy adds what
// it keeps besides (partitions, master weights).
ModelStateBytes ModuleAndOptimizerBytes(torch::nn::Module& model,
                                        const torch::optim::Optimizer& optimizer);

// The bytes of every tensor in an optimizer's state (through checkpoint/optimizer_state.h's
// state dict; 0 for an optimizer type it does not know).
int64_t OptimizerStateBytes(const torch::optim::Optimizer& optimizer);

}  // namespace loom::sharding

#endif  // LOOM_SHARDING_REPLICATED_H_
