// ParamShardStrategy: construction, the step, full parameters and the NVMe shard hooks; its
// checkpoint files (DeepSpeed's ZeRO-3 layout) are in param_shard_state.cc.
#include "sharding/param_shard/param_shard.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "absl/memory/memory.h"
#include "absl/strings/str_cat.h"
#include "base/file_util.h"
#include "base/status_macros.h"
#include "base/torch_status.h"
#include "checkpoint/module_state.h"
#include "checkpoint/optimizer_state.h"
#include "distributed/collectives.h"
#include "glog/logging.h"
#include "modeling/deferred_init.h"
#include "modeling/model.h"
#include "sharding/replicated.h"

namespace loom::sharding {
namespace {

// What the strategy can take over: no 16-bit weights or GradScaler, an optimizer without state.
absl::Status CheckPrecisionAndOptimizer(const ParamShardOptions& o) {
  const precision::PrecisionPolicy& policy = o.precision->policy();
  if (policy.mode == precision::PrecisionMode::kHalfWeights || policy.grad_scaler.has_value()) {
    return absl::UnimplementedError(absl::StrCat(
        o.name, " with ", policy.Describe(),
        " is not implemented in loom yet (fp32 and bf16 autocast are); train in fp32 or with "
        "--bf16"));
  }
  if (!o.optimizer->state().empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        o.name,
        ": the optimizer already has state; the strategy shards it and must be created "
        "before the first step"));
  }
  return absl::OkStatus();
}

// The wrap units (none without auto_wrap). A model that cannot run its layers through a runner
// is refused before anything changes.
absl::StatusOr<std::vector<modeling::FoundUnit>> FindWrapUnits(const ParamShardOptions& o,
                                                               modeling::Model& model) {
  const std::vector<std::string> classes =
      o.wrap_classes.empty() ? model.UnitClassNames() : o.wrap_classes;
  std::vector<modeling::FoundUnit> found;
  if (o.auto_wrap) {
    ASSIGN_OR_RETURN(found, modeling::FindUnits(model, classes), o.name);
    RETURN_IF_ERROR_CTX(model.SetUnitRunner(nullptr), o.name);
  }
  return found;
}

// Optimizer group of every trainable parameter, checked (in the model, fp32) before anything
// changes.
absl::StatusOr<std::map<const void*, size_t>> GroupOfParameters(const ParamShardOptions& o,
                                                                modeling::Model& model) {
  std::map<const void*, size_t> group_of;
  std::set<const void*> in_model;
  for (const at::Tensor& p : model.parameters()) in_model.insert(p.unsafeGetTensorImpl());
  const size_t num_groups = o.optimizer->param_groups().size();
  for (size_t g = 0; g < num_groups; ++g) {
    for (const at::Tensor& p : o.optimizer->param_groups()[g].params()) {
      if (in_model.count(p.unsafeGetTensorImpl()) == 0) {
        return absl::InvalidArgumentError(
            absl::StrCat(o.name, ": parameter group ", g,
                         " holds a tensor that is not a parameter of the model"));
      }
      if (p.scalar_type() != at::kFloat) {
        return absl::InvalidArgumentError(absl::StrCat(o.name, ": parameter group ", g, " holds a ",
                                                       c10::toString(p.scalar_type()),
                                                       " parameter; load the model in float32"));
      }
      if (p.requires_grad()) group_of[p.unsafeGetTensorImpl()] = g;
    }
  }
  return group_of;
}

// Every rank starts from rank 0's weights (FSDP's sync_module_states).
absl::Status SyncModuleStates(const ParamShardOptions& o, modeling::Model& model,
                              distributed::ProcessGroup& pg) {
  try {
    at::NoGradGuard no_grad;
    for (at::Tensor t : model.parameters()) {
      // A deferred parameter is made the same on every rank (one seed, or the same files).
      if (modeling::IsDeferred(t)) continue;
      at::Tensor data = t.detach();
      RETURN_IF_ERROR_CTX(distributed::Broadcast(pg, data),
                          absl::StrCat(o.name, ": sharing rank 0's weights"));
    }
    for (at::Tensor t : model.buffers()) {
      RETURN_IF_ERROR_CTX(distributed::Broadcast(pg, t),
                          absl::StrCat(o.name, ": sharing rank 0's buffers"));
    }
  } catch (const std::exception& e) {
    return base::TorchErrorToStatus(e, absl::StatusCode::kInternal, o.name);
  }
  return absl::OkStatus();
}

// The units' parameters per group (units below min_num_params left out, parameters below the
// persistence threshold left for the root); the rest of the trainable ones form the root,
// first. `claimed` receives every parameter a spec holds.
std::vector<ShardUnitSpec> UnitSpecs(const ParamShardOptions& o, modeling::Model& model,
                                     const std::vector<modeling::FoundUnit>& found,
                                     const std::map<const void*, size_t>& group_of,
                                     std::set<const void*>& claimed) {
  const size_t num_groups = o.optimizer->param_groups().size();
  std::vector<ShardUnitSpec> specs;
  auto take = [&](const std::vector<at::Tensor>& params, int64_t threshold) {
    std::vector<std::vector<at::Tensor>> by_group(num_groups);
    for (const at::Tensor& p : params) {
      if (p.numel() < threshold) continue;  // persistent: left for the root
      auto it = group_of.find(p.unsafeGetTensorImpl());
      if (it == group_of.end() || !claimed.insert(p.unsafeGetTensorImpl()).second) continue;
      by_group[it->second].push_back(p);
    }
    return by_group;
  };
  for (const modeling::FoundUnit& f : found) {
    int64_t numel = 0;
    for (const at::Tensor& p : f.module->parameters()) numel += p.numel();
    if (numel < o.min_num_params) continue;
    specs.push_back(
        {f.name, f.module.get(), take(f.module->parameters(), o.persistence_threshold)});
  }
  specs.insert(specs.begin(), ShardUnitSpec{"(root)", nullptr, take(model.parameters(), 0)});
  return specs;
}

// The model's parameter_fill by tensor instead of by name (for the runner's units).
DeferredFill FillByTensor(modeling::Model& model) {
  auto names = std::make_shared<std::map<const void*, std::string>>();
  for (const auto& p : model.named_parameters()) {
    (*names)[p.value().unsafeGetTensorImpl()] = p.key();
  }
  return [names, fill = model.parameter_fill()](const at::Tensor& param,
                                                at::Tensor& dest) -> absl::Status {
    auto it = names->find(param.unsafeGetTensorImpl());
    if (it == names->end()) return absl::InternalError("a deferred tensor that is not a parameter");
    return fill(it->second, dest);
  };
}

FullShardRunnerOptions RunnerOptions(const ParamShardOptions& o) {
  return FullShardRunnerOptions{
      .reshard_after_forward = o.reshard_after_forward,
      .forward_prefetch = o.forward_prefetch,
      .backward_prefetch = o.backward_prefetch,
      .prefetch_limit = o.prefetch_limit,
      .max_live_elements = o.max_live_elements,
      .shard_options = o.offload.any() ? std::optional<at::TensorOptions>(HostOptions(o.offload))
                                       : std::nullopt,
      .fill = o.model->parameter_fill() ? FillByTensor(*o.model) : nullptr};
}

// A model with deferred parameters must say how to make them.
absl::Status CheckDeferred(const ParamShardOptions& o) {
  if (modeling::AnyDeferred(*o.model) && !o.model->parameter_fill()) {
    return absl::FailedPreconditionError(absl::StrCat(
        o.name, ": ", o.model->ClassName(),
        " has deferred parameters but no parameter_fill to make their values"));
  }
  return absl::OkStatus();
}

// Parameters outside every unit (frozen ones) stay whole: a deferred one gets its bytes now.
absl::Status MaterializeUnsharded(const ParamShardOptions& o,
                                  const std::set<const void*>& claimed) {
  for (auto& item : o.model->named_parameters()) {
    if (claimed.count(item.value().unsafeGetTensorImpl()) > 0) continue;
    RETURN_IF_ERROR_CTX(
        modeling::MaterializeParameter(item.key(), item.value(), o.model->parameter_fill()),
        o.name);
  }
  return absl::OkStatus();
}

// The least loom holds at once: the root and the largest unit; a warning when
// stage3_max_live_parameters is below it.
void WarnIfBelowLiveMinimum(const ParamShardOptions& o, const FullShardRunner& runner) {
  int64_t root = 0, largest = 0;
  for (size_t u = 0; u < runner.unit_count(); ++u) {
    int64_t n = 0;
    for (size_t p : runner.unit_pieces(u)) n += runner.pieces()[p].flat->numel();
    if (runner.persistent(u)) {
      root += n;
    } else {
      largest = std::max(largest, n);
    }
  }
  if (root + largest > o.max_live_elements) {
    LOG(WARNING) << o.name << ": stage3_max_live_parameters " << o.max_live_elements
                 << " is below what one layer and the persistent parameters take (" << root << " + "
                 << largest << " elements), which loom holds at least; nothing is "
                 << "prefetched";
  }
}

// The optimizer steps on the shards; the checkpoint layout lists each group's parameters.
std::vector<ZeroGroupLayout> ShardOptimizerGroups(const ParamShardOptions& o,
                                                  modeling::Model& model,
                                                  const FullShardRunner& runner) {
  std::map<const void*, std::string> names;
  for (const auto& p : model.named_parameters()) names[p.value().unsafeGetTensorImpl()] = p.key();
  const size_t num_groups = o.optimizer->param_groups().size();
  std::vector<ZeroGroupLayout> layouts(num_groups);
  for (size_t g = 0; g < num_groups; ++g) o.optimizer->param_groups()[g].params().clear();
  for (const FullShardRunner::Piece& piece : runner.pieces()) {
    o.optimizer->param_groups()[piece.group].params().push_back(piece.flat->shard());
    ZeroGroupLayout& layout = layouts[piece.group];
    for (const at::Tensor& p : piece.flat->params()) {
      layout.names.push_back(names[p.unsafeGetTensorImpl()]);
      layout.shapes.push_back(p.sizes().vec());
      layout.numel += p.numel();
    }
  }
  return layouts;
}

// offload_param "nvme": the wrapped units' shards in swap files (the root's, gathered between
// steps, stay: DeepSpeed keeps persistent parameters resident too), each unit reading through it.
absl::StatusOr<std::unique_ptr<ParamSwapper>> SwapParameters(const ParamShardOptions& o, int rank,
                                                             FullShardRunner& runner) {
  std::vector<at::Tensor> swapped;
  std::vector<FlatParamUnit*> units;
  for (size_t u = 0; u < runner.unit_count(); ++u) {
    if (runner.persistent(u)) continue;
    for (size_t k : runner.unit_pieces(u)) {
      FlatParamUnit* flat = runner.pieces()[k].flat.get();
      swapped.push_back(flat->shard());
      units.push_back(flat);
    }
  }
  ParamSwapperOptions swap;
  swap.nvme_path = o.offload.param_nvme_path;
  swap.rank = rank;
  swap.aio = AioOptionsOf(o.offload.aio);
  swap.buffer_count = o.offload.param_buffer_count;
  swap.buffer_size = o.offload.param_buffer_size;
  swap.max_in_cpu = o.offload.max_in_cpu;
  ASSIGN_OR_RETURN(std::unique_ptr<ParamSwapper> swapper,
                   ParamSwapper::Create(swap, std::move(swapped)), o.name);
  for (FlatParamUnit* flat : units) flat->set_store(swapper.get());
  LOG(INFO) << "rank " << rank << ": " << swapper->Describe();
  return swapper;
}

// offload_optimizer "nvme": the optimizer state over `shards` in swap files (ZeRO-Infinity).
absl::StatusOr<std::unique_ptr<OptimizerSwapper>> SwapOptimizerState(
    const ParamShardOptions& o, int rank, const std::vector<at::Tensor>& shards) {
  OptimizerSwapperOptions swap;
  swap.nvme_path = o.offload.optimizer_nvme_path;
  swap.rank = rank;
  swap.aio = AioOptionsOf(o.offload.aio);
  swap.buffer_count = o.offload.buffer_count;
  swap.sub_group_size = o.offload.sub_group_size;
  ASSIGN_OR_RETURN(std::unique_ptr<OptimizerSwapper> swapper,
                   OptimizerSwapper::Create(swap, o.optimizer, shards), o.name);
  LOG(INFO) << "rank " << rank << ": " << swapper->Describe();
  return swapper;
}

}  // namespace

absl::StatusOr<std::unique_ptr<ParamShardStrategy>> ParamShardStrategy::Create(
    const ParamShardOptions& o) {
  RETURN_IF_ERROR(o.CheckPieces("ParamShardStrategy"));
  RETURN_IF_ERROR(CheckPrecisionAndOptimizer(o));
  RETURN_IF_ERROR(CheckDeferred(o));
  modeling::Model* const model = o.model;
  ASSIGN_OR_RETURN(const std::vector<modeling::FoundUnit> found, FindWrapUnits(o, *model));
  ASSIGN_OR_RETURN(const auto group_of, GroupOfParameters(o, *model));
  auto strategy = absl::WrapUnique(new ParamShardStrategy(o));
  RETURN_IF_ERROR(strategy->SetUpHybridGroups());
  if (o.sync_module_states && strategy->pg_ && strategy->pg_->world_size() > 1) {
    RETURN_IF_ERROR(SyncModuleStates(o, *model, *strategy->pg_));
  }
  std::set<const void*> claimed;
  std::vector<ShardUnitSpec> specs = UnitSpecs(o, *model, found, group_of, claimed);
  RETURN_IF_ERROR(MaterializeUnsharded(o, claimed));
  ASSIGN_OR_RETURN(
      strategy->runner_,
      FullShardRunner::Create(std::move(specs), strategy->pg(), RunnerOptions(o),
                              strategy->replica_pg_ ? &*strategy->replica_pg_ : nullptr),
      o.name);
  if (o.auto_wrap) {
    RETURN_IF_ERROR_CTX(model->SetUnitRunner(strategy->runner_.get()), o.name);
  }
  WarnIfBelowLiveMinimum(o, *strategy->runner_);
  for (const at::Tensor& p : model->parameters()) {
    if (claimed.count(p.unsafeGetTensorImpl()) == 0) strategy->unsharded_.push_back(p);
  }
  strategy->layout_ = ShardOptimizerGroups(o, *model, *strategy->runner_);
  if (!o.offload.param_nvme_path.empty()) {
    ASSIGN_OR_RETURN(strategy->param_swapper_,
                     SwapParameters(o, strategy->rank(), *strategy->runner_));
  }
  if (!o.offload.optimizer_nvme_path.empty()) {
    ASSIGN_OR_RETURN(strategy->swapper_,
                     SwapOptimizerState(o, strategy->rank(), strategy->Shards()));
  }
  // The values now live in the shards: a fill from a checkpoint lets go of its files.
  model->set_parameter_fill(nullptr);
  return strategy;
}

absl::Status ParamShardStrategy::SetUpHybridGroups() {
  const ParamShardOptions& o = options_;
  const int full_world = pg_ ? pg_->world_size() : 1;
  if (o.hybrid_group_size <= 0 || !pg_ || o.hybrid_group_size >= full_world) {
    return absl::OkStatus();
  }
  const int size = o.hybrid_group_size;
  if (full_world % size != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(o.name, ": hybrid sharding needs the world size (", full_world,
                     ") to be a multiple of the ranks per node (", size, ")"));
  }
  const int me = pg_->rank();
  std::vector<int> node_ranks, replica_ranks;
  for (int r = 0; r < size; ++r) node_ranks.push_back(me / size * size + r);
  for (int n = 0; n < full_world / size; ++n) replica_ranks.push_back(n * size + me % size);
  ASSIGN_OR_RETURN(
      shard_pg_,
      distributed::NewSubgroup(*pg_, node_ranks, absl::StrCat("hybrid_shard/node", me / size)),
      o.name);
  ASSIGN_OR_RETURN(
      replica_pg_,
      distributed::NewSubgroup(*pg_, replica_ranks, absl::StrCat("hybrid_shard/local", me % size)),
      o.name);
  return absl::OkStatus();
}

ParamShardStrategy::~ParamShardStrategy() {
  if (runner_ != nullptr && options_.auto_wrap) {
    options_.model->SetUnitRunner(nullptr).IgnoreError();
  }
}

std::vector<at::Tensor> ParamShardStrategy::ShardGradients() const {
  std::vector<at::Tensor> grads;
  for (const at::Tensor& shard : Shards()) {
    if (shard.grad().defined()) grads.push_back(shard.grad());
  }
  return grads;
}

std::vector<at::Tensor> ParamShardStrategy::Shards() const {
  std::vector<at::Tensor> shards;
  for (const FullShardRunner::Piece& piece : runner_->pieces()) {
    shards.push_back(piece.flat->shard());
  }
  return shards;
}

absl::Status ParamShardStrategy::AfterBackward() { return runner_->FinishBackward(); }

// DeepSpeed's stage-3 get_grad_norm_direct + unscale_and_clip_grads: each shard's norm in
// float64, the squares summed and all-reduced, clip = (norm + 1e-6) / max_norm when above 1.
absl::StatusOr<double> ParamShardStrategy::DeepSpeedClip(double max_norm) {
  double local = 0;
  for (const at::Tensor& grad : ShardGradients()) {
    const double n =
        at::linalg_vector_norm(grad, 2, c10::nullopt, false, at::kDouble).item<double>();
    local += n * n;
  }
  at::Tensor sq = at::full({}, local, at::TensorOptions().dtype(at::kDouble));
  if (world() > 1) RETURN_IF_ERROR(distributed::AllReduce(*pg(), sq));
  const double norm = std::sqrt(sq.item<double>());
  const double clip = (norm + 1e-6) / max_norm;
  if (clip > 1) {
    for (at::Tensor grad : ShardGradients()) grad.mul_(1.0 / clip);
  }
  return norm;
}

// torch 2.x FullyShardedDataParallel.clip_grad_norm_: the shards' norms in float32, stacked
// and normed again (_get_grad_norm), squared, all-reduced, square-rooted; the coefficient
// max_norm / (norm + 1e-6) clamped to 1 as a float32 tensor multiplies every shard's gradient.
absl::StatusOr<double> ParamShardStrategy::FsdpClip(double max_norm) {
  std::vector<at::Tensor> norms;
  for (const at::Tensor& grad : ShardGradients()) {
    norms.push_back(at::linalg_vector_norm(grad, 2, c10::nullopt, false, at::kFloat));
  }
  at::Tensor total = norms.empty() ? at::zeros({}, at::kFloat)
                                   : at::linalg_vector_norm(at::stack(norms), 2, c10::nullopt,
                                                            false, at::kFloat);
  total = total.pow(2);
  if (world() > 1) RETURN_IF_ERROR(distributed::AllReduce(*pg(), total));
  total = total.pow(0.5);
  const at::Tensor coef = at::clamp_max(max_norm / (total + 1e-6), 1.0);
  for (at::Tensor grad : ShardGradients()) grad.mul_(coef.to(grad.scalar_type()));
  return total.item<float>();
}

absl::StatusOr<std::optional<double>> ParamShardStrategy::ClipGradients(double max_norm) {
  if (max_norm <= 0) return std::optional<double>();
  try {
    at::NoGradGuard no_grad;
    absl::StatusOr<double> norm =
        options_.deepspeed_clipping ? DeepSpeedClip(max_norm) : FsdpClip(max_norm);
    if (!norm.ok()) return norm.status();
    return std::optional<double>(*norm);
  } catch (const std::exception& e) {
    return base::TorchErrorToStatus(e, absl::StatusCode::kInternal, "clipping the gradients");
  }
}

absl::StatusOr<bool> ParamShardStrategy::OptimizerStep() {
  // A shard no backward reached has no gradient yet: zeros, so that the optimizer steps (and
  // makes state for) every shard, as DeepSpeed and FSDP do with their flat gradient buffers.
  for (at::Tensor shard : Shards()) {
    if (!shard.grad().defined()) shard.mutable_grad() = at::zeros_like(shard);
  }
  bool stepped = true;
  // The shards the optimizer steps now (one sub-group of them with the state on NVMe) are
  // fetched for the step and written back after (parameters on NVMe).
  const auto step = [&]() -> absl::Status {
    std::vector<at::Tensor> stepping;
    for (const auto& group : options_.optimizer->param_groups()) {
      stepping.insert(stepping.end(), group.params().begin(), group.params().end());
    }
    RETURN_IF_ERROR(FetchShards(stepping));
    absl::StatusOr<bool> s = options_.precision->OptimizerStep(*options_.optimizer, Shards());
    RETURN_IF_ERROR(EvictShards(stepping, /*dirty=*/true));
    ASSIGN_OR_RETURN(stepped, std::move(s));
    return absl::OkStatus();
  };
  // With the state on NVMe: one sub-group at a time, its state swapped in and out around it.
  RETURN_IF_ERROR_CTX(swapper_ ? swapper_->Step(step) : step(), "the optimizer step");
  // Units gathered between steps (the root) take the updated shards now; the others gather
  // them at their next forward.
  for (FullShardRunner::Piece& piece : runner_->pieces()) {
    if (piece.flat->gathered()) {
      RETURN_IF_ERROR_CTX(piece.flat->Gather(pg()), "sharing the updated parameters");
    }
  }
  return stepped;
}

void ParamShardStrategy::ZeroGrad() {
  for (at::Tensor grad : ShardGradients()) grad.zero_();
  options_.model->zero_grad();
}

ModelStateBytes ParamShardStrategy::StateBytes() const {
  ModelStateBytes bytes;
  for (const FullShardRunner::Piece& piece : runner_->pieces()) {
    bytes.parameters += piece.flat->shard_bytes();
    if (piece.flat->gathered()) bytes.parameters += piece.flat->full_bytes();
    bytes.gradients += TensorBytes(piece.flat->shard().grad());
    for (const at::Tensor& p : piece.flat->params()) bytes.gradients += TensorBytes(p.grad());
  }
  for (const at::Tensor& p : unsharded_) {
    bytes.parameters += TensorBytes(p);
    bytes.gradients += TensorBytes(p.grad());
  }
  bytes.optimizer_states = OptimizerStateBytes(*options_.optimizer);
  return bytes;
}

absl::Status ParamShardStrategy::BeginFullParameters() { return runner_->GatherAll(); }

absl::Status ParamShardStrategy::EndFullParameters(bool write_back) {
  return runner_->ReleaseAll(write_back);
}

absl::Status ParamShardStrategy::FetchShards(const std::vector<at::Tensor>& shards) {
  if (param_swapper_ == nullptr) return absl::OkStatus();
  for (const at::Tensor& s : shards) RETURN_IF_ERROR(param_swapper_->Fetch(s));
  return absl::OkStatus();
}

absl::Status ParamShardStrategy::EvictShards(const std::vector<at::Tensor>& shards, bool dirty) {
  if (param_swapper_ == nullptr) return absl::OkStatus();
  absl::Status status = absl::OkStatus();
  for (const at::Tensor& s : shards) status.Update(param_swapper_->Evict(s, dirty));
  return status;
}

}  // namespace loom::sharding
