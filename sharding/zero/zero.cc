#include "sharding/zero/zero.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "absl/memory/memory.h"
#include "absl/strings/str_cat.h"
#include "base/file_util.h"
#include "base/status_macros.h"
#include "base/torch_status.h"
#include "checkpoint/module_state.h"
#include "checkpoint/optimizer_state.h"
#include "distributed/collectives.h"
#include "glog/logging.h"
#include "sharding/replicated.h"

namespace loom::sharding {
namespace {

// The stage, the bucket sizes and the gradient predivide factor.
absl::Status CheckStageAndBuckets(const ZeroOptions& o) {
  if (o.stage != 1 && o.stage != 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("ZeroStrategy: stage ", o.stage, " (this strategy is ZeRO stage 1 or 2)"));
  }
  if (o.comm.reduce_bucket_size <= 0 || o.comm.allgather_bucket_size <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "ZeroStrategy: reduce_bucket_size (", o.comm.reduce_bucket_size,
        ") and allgather_bucket_size (", o.comm.allgather_bucket_size, ") must be positive"));
  }
  if (!(o.comm.gradient_predivide_factor > 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("ZeroStrategy: gradient_predivide_factor must be positive, got ",
                     o.comm.gradient_predivide_factor));
  }
  return absl::OkStatus();
}

// fp32, or DeepSpeed's bf16 (true); anything else is refused.
absl::StatusOr<bool> CheckPrecision(const ZeroOptions& o) {
  const precision::PrecisionPolicy& policy = o.precision->policy();
  const bool bf16 = policy.mode == precision::PrecisionMode::kHalfWeights &&
                    policy.compute_dtype == at::kBFloat16;
  if (policy.mode != precision::PrecisionMode::kFp32 && !bf16) {
    return absl::UnimplementedError(absl::StrCat(
        "--deepspeed: ZeRO stage ", o.stage, " with ", policy.Describe(),
        " is not implemented in loom yet (fp32 and DeepSpeed's bf16 are); train in fp32 or bf16"));
  }
  return bf16;
}

// overlap_comm at more than one rank: reduce-scattered, in a dtype the backend can sum.
absl::Status CheckOverlap(const ZeroOptions& o, bool bf16) {
  if (!o.comm.overlap_comm || o.process_group == nullptr || o.process_group->world_size() <= 1) {
    return absl::OkStatus();
  }
  if (!o.comm.reduce_scatter) {
    return absl::UnimplementedError(
        "--deepspeed: zero_optimization.overlap_comm with \"reduce_scatter\": false is not "
        "implemented in loom yet; set one of them to its default");
  }
  const at::ScalarType comm =
      o.comm.communication_dtype.value_or(bf16 ? at::kBFloat16 : at::kFloat);
  if (comm == at::kBFloat16 && o.process_group->backend_name() == "gloo") {
    return absl::InvalidArgumentError(
        "--deepspeed: zero_optimization.overlap_comm with bf16 gradients reduces them in bf16, "
        "which Gloo cannot sum; add \"communication_data_type\": \"fp32\" or set "
        "overlap_comm to false");
  }
  return absl::OkStatus();
}

// DeepSpeed's engine: module.bfloat16() — the floating-point parameters and buffers (integer
// buffers such as position ids stay as they are). Throws what torch throws.
void CastModelToBf16(torch::nn::Module& model) {
  for (at::Tensor& t : model.parameters()) {
    if (t.is_floating_point()) t.set_data(t.detach().to(at::kBFloat16));
  }
  for (at::Tensor& t : model.buffers()) {
    if (t.is_floating_point()) t.set_data(t.detach().to(at::kBFloat16));
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<ZeroStrategy>> ZeroStrategy::Create(const ZeroOptions& o) {
  RETURN_IF_ERROR(o.CheckPieces("ZeroStrategy"));
  RETURN_IF_ERROR(CheckStageAndBuckets(o));
  ASSIGN_OR_RETURN(const bool bf16, CheckPrecision(o));
  RETURN_IF_ERROR(CheckOverlap(o, bf16));
  if (!o.optimizer->state().empty()) {
    return absl::FailedPreconditionError(
        "ZeroStrategy: the optimizer already has state; the strategy partitions it and must be "
        "created before the first step");
  }
  auto strategy = absl::WrapUnique(new ZeroStrategy(o));
  // 1. Check every group before anything changes.
  ASSIGN_OR_RETURN(std::vector<Group> groups, CheckedGroups(o, strategy->world()));
  // 2. Flat buffers, the parameters as views of them, this rank's fp32 master partition.
  RETURN_IF_ERROR(strategy->PartitionGroups(groups, bf16));
  // 3. The optimizer steps on the partitions.
  strategy->AdoptGroups(std::move(groups));
  if (o.comm.overlap_comm && strategy->world() > 1) {
    RETURN_IF_ERROR(strategy->StartOverlap());
  }
  return strategy;
}

absl::StatusOr<std::vector<ZeroStrategy::Group>> ZeroStrategy::CheckedGroups(const ZeroOptions& o,
                                                                             int world) {
  std::set<const void*> in_model;
  for (const at::Tensor& p : o.model->parameters()) in_model.insert(p.unsafeGetTensorImpl());
  // Parameters that do not require grad stay out of the partitions (and of the optimizer), as
  // DeepSpeed filters them.
  std::vector<Group> groups(o.optimizer->param_groups().size());
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    for (const at::Tensor& p : o.optimizer->param_groups()[gi].params()) {
      if (in_model.count(p.unsafeGetTensorImpl()) == 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "ZeroStrategy: parameter group ", gi,
            " holds a tensor that is not a parameter of the model (was the optimizer already "
            "partitioned by another strategy?)"));
      }
      if (p.scalar_type() != at::kFloat) {
        return absl::InvalidArgumentError(absl::StrCat(
            "ZeroStrategy: parameter group ", gi, " holds a ", c10::toString(p.scalar_type()),
            " parameter; load the model in float32 (with bf16, ZeRO converts it itself and keeps "
            "float32 master weights)"));
      }
      if (!p.requires_grad()) continue;
      groups[gi].params.push_back(p);
      groups[gi].numel += p.numel();
    }
    if (o.round_robin_gradients) groups[gi].params = RoundRobinOrder(groups[gi].params, world);
  }
  return groups;
}

absl::Status ZeroStrategy::PartitionGroups(std::vector<Group>& groups, bool bf16) {
  try {
    at::NoGradGuard no_grad;
    if (bf16) {
      dtype_ = at::kBFloat16;
      CastModelToBf16(*options_.model);
    }
    for (Group& g : groups) {
      if (g.numel == 0) continue;  // an empty group (e.g. no biases) has nothing to partition
      RETURN_IF_ERROR(PartitionGroup(g, bf16));
    }
  } catch (const std::exception& e) {
    return base::TorchErrorToStatus(e, absl::StatusCode::kInternal, "partitioning for ZeRO");
  }
  return absl::OkStatus();
}

absl::Status ZeroStrategy::PartitionGroup(Group& g, bool bf16) {
  const int world = this->world();
  const int rank = this->rank();
  const ZeroOptions& o = options_;
  // Rank 0's weights on every rank, as DeepSpeed's engine broadcasts them.
  g.padded_numel = ZeroAlignedNumel(g.numel, world);
  const int64_t part = g.padded_numel / world;
  g.flat_params = Flatten(g, /*grads=*/false);
  if (pg_) {
    RETURN_IF_ERROR_CTX(distributed::Broadcast(*pg_, g.flat_params),
                        "ZeroStrategy: sharing rank 0's weights");
  }
  if (o.stage == 1) g.flat_grads = Flatten(g, /*grads=*/true);
  int64_t offset = 0;
  for (at::Tensor& p : g.params) {
    p.set_data(g.flat_params.slice(0, offset, offset + p.numel()).view_as(p));
    if (o.stage == 1) {
      p.mutable_grad() = g.flat_grads.slice(0, offset, offset + p.numel()).view_as(p);
    }
    offset += p.numel();
  }
  const at::TensorOptions master_options =
      o.offload.optimizer ? HostOptions(o.offload) : g.flat_params.options().dtype(at::kFloat);
  g.partition = g.flat_params.slice(0, rank * part, (rank + 1) * part)
                    .to(master_options, /*non_blocking=*/false, /*copy=*/true)
                    .set_requires_grad(true);
  g.partition.mutable_grad() = at::zeros({part}, master_options);
  const at::ScalarType comm = o.comm.communication_dtype.value_or(dtype_);
  if (bf16 || g.partition.device() != g.flat_params.device()) {
    g.grad16 = at::zeros({part}, g.flat_params.options().dtype(bf16 ? comm : at::kFloat));
  }
  return absl::OkStatus();
}

void ZeroStrategy::AdoptGroups(std::vector<Group> groups) {
  // The names and shapes of each group's parameters (the checkpoint's param_shapes).
  std::map<const void*, std::string> names;
  for (const auto& p : options_.model->named_parameters()) {
    names[p.value().unsafeGetTensorImpl()] = p.key();
  }
  // DeepSpeed swaps param_group['params'] for the partitions.
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    std::vector<at::Tensor>& params = options_.optimizer->param_groups()[gi].params();
    params.clear();
    if (groups[gi].numel == 0) continue;
    params.push_back(groups[gi].partition);
    ZeroGroupLayout layout;
    for (const at::Tensor& p : groups[gi].params) {
      layout.names.push_back(names[p.unsafeGetTensorImpl()]);
      layout.shapes.push_back(p.sizes().vec());
    }
    layout.numel = groups[gi].numel;
    layout_.push_back(std::move(layout));
    groups_.push_back(std::move(groups[gi]));
  }
}

absl::Status ZeroStrategy::StartOverlap() {
  std::map<const void*, int64_t> model_index;
  int64_t i = 0;
  for (const at::Tensor& p : options_.model->parameters()) {
    model_index[p.unsafeGetTensorImpl()] = i++;
  }
  std::vector<OverlappedReduction::Group> views;
  for (const Group& g : groups_) {
    OverlappedReduction::Group v;
    v.params = g.params;
    for (const at::Tensor& p : g.params) {
      v.model_index.push_back(model_index[p.unsafeGetTensorImpl()]);
    }
    v.numel = g.numel;
    v.padded_numel = g.padded_numel;
    views.push_back(std::move(v));
  }
  ASSIGN_OR_RETURN(
      overlap_,
      OverlappedReduction::Create(*pg_, std::move(views), options_.comm.reduce_bucket_size,
                                  options_.comm.communication_dtype.value_or(dtype_)),
      "overlap_comm");
  return absl::OkStatus();
}

int ZeroStrategy::world() const { return pg_ ? pg_->world_size() : 1; }

int ZeroStrategy::rank() const { return pg_ ? pg_->rank() : 0; }

std::vector<at::Tensor> RoundRobinOrder(const std::vector<at::Tensor>& params, int world) {
  // DeepSpeed's _round_robin_reorder: parameter i goes to bucket i % world; the buckets are
  // concatenated in order, each keeping its parameters' order.
  std::vector<at::Tensor> out;
  out.reserve(params.size());
  for (int bucket = 0; bucket < std::max(1, world); ++bucket) {
    for (size_t i = static_cast<size_t>(bucket); i < params.size();
         i += static_cast<size_t>(std::max(1, world))) {
      out.push_back(params[i]);
    }
  }
  return out;
}

std::string ZeroStrategy::Name() const {
  return absl::StrCat("ZeRO-", options_.stage, OffloadSuffix(options_.offload));
}

StrategyCapabilities ZeroStrategy::Capabilities() const {
  StrategyCapabilities c;
  c.shards_optimizer_state = true;
  c.shards_gradients = options_.stage >= 2;
  c.offloads = options_.offload.any();
  return c;
}

at::Tensor ZeroStrategy::Flatten(const Group& g, bool grads) const {
  std::vector<at::Tensor> pieces;
  pieces.reserve(g.params.size() + 1);
  for (const at::Tensor& p : g.params) {
    const at::Tensor t = grads ? p.grad() : p.detach();
    pieces.push_back(t.defined() ? t.reshape({-1}) : at::zeros({p.numel()}, p.options()));
  }
  if (g.padded_numel > g.numel) {
    pieces.push_back(at::zeros({g.padded_numel - g.numel}, g.params.front().options()));
  }
  return at::cat(pieces);
}

void ZeroStrategy::CopyFlatGrads(const Group& g, int64_t begin, int64_t end, at::Tensor dst) const {
  if (options_.stage == 1) {
    dst.copy_(g.flat_grads.slice(0, begin, end));
    return;
  }
  int64_t offset = 0;
  for (const at::Tensor& p : g.params) {
    const int64_t a = std::max(begin, offset);
    const int64_t b = std::min(end, offset + p.numel());
    if (a < b) {
      at::Tensor d = dst.slice(0, a - begin, b - begin);
      if (p.grad().defined()) {
        d.copy_(p.grad().reshape({-1}).slice(0, a - offset, b - offset));
      } else {
        d.zero_();
      }
    }
    offset += p.numel();
    if (offset >= end) break;
  }
  if (end > g.numel) dst.slice(0, std::max(begin, g.numel) - begin, end - begin).zero_();
}

absl::Status ZeroStrategy::ReduceGradients(Group& g, at::Tensor& out) {
  const ZeroCommOptions& c = options_.comm;
  const int w = world();
  const int64_t part = out.numel();
  const bool in_place = options_.stage == 1 && g.flat_grads.scalar_type() == out.scalar_type();
  if (!c.reduce_scatter) {
    // DeepSpeed's gradient_reduction_w_predivide: the whole buffer all-reduced.
    at::Tensor flat = g.flat_grads;
    if (!in_place) {
      flat = at::empty({g.padded_numel}, out.options());
      CopyFlatGrads(g, 0, g.padded_numel, flat);
    }
    if (c.prescale_gradients) {
      flat.div_(static_cast<double>(w));
    } else if (c.gradient_predivide_factor != 1.0) {
      flat.mul_(1.0 / c.gradient_predivide_factor);
    }
    for (int64_t start = 0; start < flat.numel(); start += c.reduce_bucket_size) {
      at::Tensor bucket =
          flat.slice(0, start, std::min(flat.numel(), start + c.reduce_bucket_size));
      RETURN_IF_ERROR_CTX(distributed::AllReduce(*pg_, bucket), "all-reducing the gradients");
    }
    if (!c.prescale_gradients && c.gradient_predivide_factor != w) {
      flat.mul_(c.gradient_predivide_factor / static_cast<double>(w));
    }
    out.copy_(flat.slice(0, rank() * part, (rank() + 1) * part));
    return absl::OkStatus();
  }
  // DeepSpeed's average_tensor: divided by the world size, then each slice reduced to its
  // owner. A bucket of reduce_bucket_size elements holds `chunk` elements of every rank's slice,
  // copied from the parameters' gradients (DeepSpeed's contiguous ipg buffer); stage 1's
  // contiguous gradients are reduced where they are when one bucket holds them all. Dividing by
  // a power of two is exact, so then the division waits for the reduced slice (1/w of the
  // work, the same bits).
  const bool exact_after = (w & (w - 1)) == 0;
  const int64_t chunk = std::clamp<int64_t>(c.reduce_bucket_size / w, 1, part);
  if (chunk == part && in_place) {
    if (!exact_after) g.flat_grads.div_(static_cast<double>(w));
    RETURN_IF_ERROR(distributed::ReduceScatterSum(*pg_, g.flat_grads, out));
  } else {
    at::Tensor bucket = at::empty({w * chunk}, out.options());
    for (int64_t start = 0; start < part; start += chunk) {
      const int64_t len = std::min(part, start + chunk) - start;
      at::Tensor b = bucket.slice(0, 0, w * len);
      for (int r = 0; r < w; ++r) {
        CopyFlatGrads(g, r * part + start, r * part + start + len,
                      b.slice(0, r * len, (r + 1) * len));
      }
      if (!exact_after) b.div_(static_cast<double>(w));
      at::Tensor o = out.slice(0, start, start + len);
      RETURN_IF_ERROR(distributed::ReduceScatterSum(*pg_, b, o));
    }
  }
  if (exact_after) out.div_(static_cast<double>(w));
  return absl::OkStatus();
}

absl::Status ZeroStrategy::ShareParameters(const at::Tensor& master, at::Tensor& flat_params) {
  const ZeroCommOptions& c = options_.comm;
  // The fp32 master rounded to the weights' dtype (bf16), then gathered in it.
  const at::Tensor partition =
      master.to(flat_params.options());  // itself when dtype and device agree
  const int w = world();
  const int64_t part = partition.numel();
  if (!c.allgather_partitions) {
    // Each rank broadcasts its partition (DeepSpeed without allgather_partitions).
    flat_params.slice(0, rank() * part, (rank() + 1) * part).copy_(partition);
    for (int r = 0; r < w; ++r) {
      at::Tensor slice = flat_params.slice(0, r * part, (r + 1) * part);
      RETURN_IF_ERROR(distributed::Broadcast(*pg_, slice, r));
    }
    return absl::OkStatus();
  }
  const int64_t chunk = std::max<int64_t>(1, c.allgather_bucket_size / w);
  if (chunk >= part) return distributed::AllGatherInto(*pg_, partition, flat_params);
  at::Tensor by_rank = flat_params.view({w, part});
  at::Tensor buffer = at::empty({w * chunk}, partition.options());
  for (int64_t start = 0; start < part; start += chunk) {
    const int64_t end = std::min(part, start + chunk);
    at::Tensor gathered = buffer.slice(0, 0, w * (end - start));
    RETURN_IF_ERROR(distributed::AllGatherInto(*pg_, partition.slice(0, start, end), gathered));
    by_rank.slice(1, start, end).copy_(gathered.view({w, end - start}));
  }
  return absl::OkStatus();
}

absl::Status ZeroStrategy::BeforeForward(bool closes_window) {
  closing_ = closes_window;
  if (overlap_) overlap_->Arm(closes_window);
  return absl::OkStatus();
}

absl::Status ZeroStrategy::AfterBackward() {
  if (!closing_) return absl::OkStatus();  // accumulation micro-step: local only
  const int w = world();
  try {
    at::NoGradGuard no_grad;
    // Each group's averaged slice goes into the partition's gradient directly when the dtypes
    // agree; bf16 into the bf16 partition gradient first (DeepSpeed's averaged_gradients).
    const at::ScalarType comm = options_.comm.communication_dtype.value_or(dtype_);
    std::vector<at::Tensor*> outs;
    for (Group& g : groups_) {
      at::Tensor& part_grad = g.partition.mutable_grad();
      const bool direct = comm == part_grad.scalar_type() &&
                          part_grad.device() == g.flat_params.device();
      outs.push_back(direct ? &part_grad : &g.grad16);
    }
    if (overlap_) {
      // The buckets were reduced during backward; the rest now.
      RETURN_IF_ERROR(overlap_->Finish(outs));
    } else {
      for (size_t i = 0; i < groups_.size(); ++i) {
        Group& g = groups_[i];
        if (options_.stage == 1) {
          // The gradients accumulated in place in their views of flat_grads; one that was
          // replaced (e.g. by a resume putting back saved gradients) is copied back in.
          int64_t offset = 0;
          for (at::Tensor& p : g.params) {
            at::Tensor view = g.flat_grads.slice(0, offset, offset + p.numel()).view_as(p);
            if (!p.grad().defined() || !p.grad().is_alias_of(g.flat_grads)) {
              if (p.grad().defined()) {
                view.copy_(p.grad());
              } else {
                view.zero_();
              }
              p.mutable_grad() = view;
            }
            offset += p.numel();
          }
        }
        if (w > 1) {
          RETURN_IF_ERROR(ReduceGradients(g, *outs[i]));
        } else {
          CopyFlatGrads(g, 0, g.padded_numel, *outs[i]);
        }
      }
    }
    for (size_t i = 0; i < groups_.size(); ++i) {
      Group& g = groups_[i];
      if (!outs[i]->is_same(g.partition.grad())) g.partition.mutable_grad().copy_(*outs[i]);
      if (options_.stage == 2) {
        for (at::Tensor& p : g.params) p.mutable_grad().reset();
      }
    }
  } catch (const std::exception& e) {
    return base::TorchErrorToStatus(e, absl::StatusCode::kInternal, "reducing the gradients");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::optional<double>> ZeroStrategy::ClipGradients(double max_norm) {
  if (max_norm <= 0) return std::optional<double>();
  try {
    at::NoGradGuard no_grad;
    // DeepSpeed's get_grad_norm_direct: squared partition norms in double, summed over ranks.
    // The norm kernel accumulates in double without a double copy of the partition.
    double local = 0;
    for (const Group& g : groups_) {
      const at::Tensor& grad = g.partition.grad();
      if (!grad.defined()) continue;
      const double n =
          at::linalg_vector_norm(grad, 2, c10::nullopt, false, at::kDouble).item<double>();
      local += n * n;
    }
    at::Tensor sq = at::full({}, local, at::TensorOptions().dtype(at::kDouble));
    if (world() > 1) {
      RETURN_IF_ERROR(distributed::AllReduce(*pg_, sq));
    }
    const double norm = std::sqrt(sq.item<double>());
    // DeepSpeed's unscale_and_clip_grads (loss scale 1 in fp32).
    const double clip = (norm + 1e-6) / max_norm;
    if (clip > 1) {
      for (Group& g : groups_) {
        if (g.partition.grad().defined()) g.partition.mutable_grad().mul_(1.0 / clip);
      }
    }
    return std::optional<double>(norm);
  } catch (const std::exception& e) {
    return base::TorchErrorToStatus(e, absl::StatusCode::kInternal, "clipping the gradients");
  }
}

absl::StatusOr<bool> ZeroStrategy::OptimizerStep() {
  std::vector<at::Tensor> partitions;
  for (const Group& g : groups_) partitions.push_back(g.partition);
  ASSIGN_OR_RETURN(const bool stepped,
                   options_.precision->OptimizerStep(*options_.optimizer, partitions));
  try {
    at::NoGradGuard no_grad;
    // The parameters are views of flat_params: gathering the partitions updates them.
    for (Group& g : groups_) {
      if (world() > 1) {
        RETURN_IF_ERROR_CTX(ShareParameters(g.partition.detach(), g.flat_params),
                            "sharing the updated partitions");
      } else {
        g.flat_params.copy_(g.partition.detach());
      }
    }
  } catch (const std::exception& e) {
    return base::TorchErrorToStatus(e, absl::StatusCode::kInternal,
                                    "sharing the updated parameters");
  }
  return stepped;
}

void ZeroStrategy::ZeroGrad() {
  for (Group& g : groups_) g.partition.mutable_grad().zero_();
  if (options_.stage == 2) {
    for (Group& g : groups_) {
      for (at::Tensor& p : g.params) p.mutable_grad().reset();
    }
  }
  // Stage 1's views are zeroed in place; parameters outside every group too.
  options_.model->zero_grad();
}

absl::Status ZeroStrategy::SaveState(const std::string& folder, const StrategySaveInfo& info) {
  const ZeroFilesInfo files =
      MakeZeroFilesInfo(options_.stage, rank(), world(), info.global_step, info.global_samples,
                        info.lr_scheduler, options_.ds_config, options_.gradient_clipping);
  ASSIGN_OR_RETURN(const std::string dir, MakeZeroTagFolder(folder, info.global_step));
  if (rank() == 0) {
    checkpoint::NamedTensors frozen;
    std::vector<std::string> buffer_names;
    for (const auto& p : options_.model->named_parameters()) {
      if (!p.value().requires_grad()) frozen.push_back({p.key(), p.value()});
    }
    for (const auto& b : options_.model->named_buffers()) buffer_names.push_back(b.key());
    RETURN_IF_ERROR(WriteZeroModelStates(dir + "/" + kZeroModelStatesFile,
                                         checkpoint::ModuleStateDict(*options_.model), buffer_names,
                                         layout_, frozen, files));
    RETURN_IF_ERROR(WriteZeroLatest(folder, info.global_step));
  }
  std::vector<at::Tensor> partitions;
  for (const Group& g : groups_) partitions.push_back(g.partition.detach());
  ASSIGN_OR_RETURN(c10::IValue base, checkpoint::OptimizerStateDict(*options_.optimizer));
  return WriteZeroOptimStates(dir + "/" + ZeroOptimStatesFile(rank(), dtype_ == at::kBFloat16),
                              partitions, layout_, base, files);
}

absl::Status ZeroStrategy::LoadOwnPartitions(const std::string& folder) {
  ASSIGN_OR_RETURN(ZeroRankRestore restored, ReadZeroRankState(folder, layout_, rank(), world()));
  if (restored.saved_world_size != world() && rank() == 0) {
    LOG(WARNING) << "Resuming a ZeRO checkpoint of " << restored.saved_world_size << " ranks on "
                 << world() << ": the fp32 weights and the optimizer state are repartitioned";
  }
  try {
    at::NoGradGuard no_grad;
    for (size_t g = 0; g < groups_.size(); ++g) {
      groups_[g].partition.copy_(restored.partitions[g]);
    }
  } catch (const std::exception& e) {
    return base::TorchErrorToStatus(e, absl::StatusCode::kInternal, folder);
  }
  RETURN_IF_ERROR_CTX(
      checkpoint::LoadOptimizerStateDict(*options_.optimizer, restored.optimizer_state),
      absl::StrCat(folder, "/", restored.tag));
  return absl::OkStatus();
}

absl::Status ZeroStrategy::LoadState(const std::string& folder) {
  // This rank's part, then every rank agrees before the collective below (a rank that failed
  // alone would otherwise leave the others waiting in it until the timeout).
  absl::Status loaded = LoadOwnPartitions(folder);
  if (world() > 1) {
    at::Tensor failed = at::full({}, loaded.ok() ? 0 : 1, at::kInt);
    RETURN_IF_ERROR_CTX(distributed::AllReduce(*pg_, failed), "resuming ZeRO state");
    if (loaded.ok() && failed.item<int>() > 0) {
      return absl::AbortedError(
          absl::StrCat(folder, ": another rank could not load its ZeRO state (its log says why)"));
    }
  }
  RETURN_IF_ERROR(loaded);
  // Every rank's parameters from the restored fp32 partitions (DeepSpeed's
  // load_from_fp32_weights).
  try {
    at::NoGradGuard no_grad;
    for (Group& g : groups_) {
      if (world() > 1) {
        RETURN_IF_ERROR(ShareParameters(g.partition.detach(), g.flat_params));
      } else {
        g.flat_params.copy_(g.partition.detach());
      }
    }
  } catch (const std::exception& e) {
    return base::TorchErrorToStatus(e, absl::StatusCode::kInternal, folder);
  }
  return absl::OkStatus();
}

ModelStateBytes ZeroStrategy::StateBytes() const {
  ModelStateBytes bytes = ModuleAndOptimizerBytes(*options_.model, *options_.optimizer);
  for (const Group& g : groups_) {
    bytes.gradients += TensorBytes(g.partition.grad()) + TensorBytes(g.grad16);
    bytes.master_weights += TensorBytes(g.partition);
  }
  return bytes;
}

}  // namespace loom::sharding
