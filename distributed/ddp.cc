#include "distributed/ddp.h"

#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/variable.h>
#include <torch/types.h>

#include <chrono>
#include <exception>
#include <torch/csrc/distributed/c10d/Types.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "base/torch_status.h"
#include "distributed/collectives.h"

namespace loom::distributed {
namespace {

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Flattens `tensors` (one dtype), broadcasts them from rank 0 and copies the result back.
absl::Status BroadcastTensors(ProcessGroup& pg, const std::vector<at::Tensor>& tensors,
                              absl::string_view what) {
  if (tensors.empty()) return absl::OkStatus();
  torch::NoGradGuard no_grad;
  std::vector<at::Tensor> by_dtype_flat;
  // Group by dtype so each group is one flat broadcast.
  std::vector<std::vector<at::Tensor>> groups;
  for (const at::Tensor& t : tensors) {
    bool placed = false;
    for (auto& g : groups) {
      if (g.front().scalar_type() == t.scalar_type()) {
        g.push_back(t);
        placed = true;
        break;
      }
    }
    if (!placed) groups.push_back({t});
  }
  for (auto& group : groups) {
    std::vector<at::Tensor> flat_parts;
    for (const at::Tensor& t : group) flat_parts.push_back(t.detach().reshape({-1}));
    at::Tensor flat = at::cat(flat_parts);
    RETURN_IF_ERROR_CTX(Broadcast(pg, flat, 0), what);
    int64_t offset = 0;
    for (at::Tensor t : group) {
      t.detach().copy_(flat.narrow(0, offset, t.numel()).view(t.sizes()));
      offset += t.numel();
    }
  }
  return absl::OkStatus();
}

uint64_t Fnv(uint64_t h, int64_t v) {
  for (int i = 0; i < 8; ++i) {
    h ^= static_cast<uint64_t>(v >> (8 * i)) & 0xff;
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace

struct DistributedDataParallel::Bucket {
  std::vector<size_t> params;
  std::vector<int64_t> offsets;
  at::Tensor flat;
  int64_t pending = 0;
  c10::intrusive_ptr<::c10d::Work> work;
};

DdpOptions DdpOptionsFromArgs(const args::TrainingArguments& args) {
  DdpOptions options;
  if (args.has_ddp_bucket_cap_mb()) options.bucket_cap_mb = args.ddp_bucket_cap_mb();
  // HF Trainer._wrap_model: unset means `not model.is_gradient_checkpointing` (True for models
  // without gradient checkpointing).
  options.find_unused_parameters = args.has_ddp_find_unused_parameters()
                                       ? args.ddp_find_unused_parameters()
                                       : !args.gradient_checkpointing();
  if (args.has_ddp_broadcast_buffers()) options.broadcast_buffers = args.ddp_broadcast_buffers();
  return options;
}

DistributedDataParallel::DistributedDataParallel(torch::nn::Module& module, ProcessGroup pg,
                                                 DdpOptions options)
    : module_(module), pg_(std::move(pg)), options_(options) {}

absl::StatusOr<std::unique_ptr<DistributedDataParallel>> DistributedDataParallel::Create(
    torch::nn::Module& module, ProcessGroup pg, DdpOptions options) {
  if (!(options.bucket_cap_mb > 0) || !(options.first_bucket_mb > 0)) {
    return absl::InvalidArgumentError(absl::StrCat("--ddp_bucket_cap_mb must be > 0, got ",
                                                   options.bucket_cap_mb, " (first bucket ",
                                                   options.first_bucket_mb, " MB)"));
  }
  std::unique_ptr<DistributedDataParallel> ddp(
      new DistributedDataParallel(module, std::move(pg), options));
  try {
    RETURN_IF_ERROR(ddp->Init());
  } catch (const std::exception& e) {
    return base::TorchErrorToStatus(e, absl::StatusCode::kInternal, "DistributedDataParallel");
  }
  return ddp;
}

absl::Status DistributedDataParallel::Init() {
  std::vector<at::Tensor> all_params;
  uint64_t signature = 1469598103934665603ull;
  for (const auto& item : module_.named_parameters()) {
    all_params.push_back(item.value());
    signature = Fnv(signature, static_cast<int64_t>(item.value().scalar_type()));
    for (int64_t d : item.value().sizes()) signature = Fnv(signature, d);
    if (!item.value().requires_grad()) continue;
    names_.push_back(item.key());
    params_.push_back(item.value());
  }
  // Same model on every rank (DDP's _verify_param_shape_across_processes).
  int64_t numel = 0;
  for (const at::Tensor& p : all_params) numel += p.numel();
  at::Tensor mine = at::tensor(
      {static_cast<int64_t>(all_params.size()), numel, static_cast<int64_t>(signature >> 1)},
      at::kLong);
  ASSIGN_OR_RETURN(std::vector<at::Tensor> everyone, AllGather(pg_, mine),
                   "DistributedDataParallel: comparing the model across ranks");
  for (int r = 0; r < pg_.world_size(); ++r) {
    if (!at::equal(everyone[r], everyone[0])) {
      return absl::FailedPreconditionError(absl::StrCat(
          "DistributedDataParallel: rank ", r, " has ", everyone[r][0].item<int64_t>(),
          " parameters (", everyone[r][1].item<int64_t>(), " elements) but rank 0 has ",
          everyone[0][0].item<int64_t>(), " (", everyone[0][1].item<int64_t>(),
          " elements), or their shapes or dtypes differ; every rank must build the same model"));
    }
  }
  RETURN_IF_ERROR(BroadcastTensors(pg_, all_params, "DistributedDataParallel: parameters"));
  RETURN_IF_ERROR(BroadcastTensors(pg_, module_.buffers(), "DistributedDataParallel: buffers"));

  // Buckets over the parameters in reverse order.
  const int64_t first_cap = static_cast<int64_t>(options_.first_bucket_mb * 1024 * 1024);
  const int64_t cap = static_cast<int64_t>(options_.bucket_cap_mb * 1024 * 1024);
  bucket_of_.assign(params_.size(), 0);
  Bucket current;
  int64_t current_bytes = 0;
  auto close = [&] {
    if (current.params.empty()) return;
    int64_t elements = 0;
    for (size_t i : current.params) {
      current.offsets.push_back(elements);
      elements += params_[i].numel();
    }
    current.flat =
        at::zeros({elements}, params_[current.params.front()].options().requires_grad(false));
    current.pending = static_cast<int64_t>(current.params.size());
    buckets_.push_back(std::move(current));
    current = Bucket();
    current_bytes = 0;
  };
  for (size_t k = params_.size(); k-- > 0;) {
    const at::Tensor& p = params_[k];
    const int64_t bytes = p.numel() * static_cast<int64_t>(p.element_size());
    const int64_t limit = buckets_.empty() ? first_cap : cap;
    if (!current.params.empty() &&
        (params_[current.params.front()].scalar_type() != p.scalar_type() ||
         params_[current.params.front()].device() != p.device() || current_bytes + bytes > limit)) {
      close();
    }
    bucket_of_[k] = buckets_.size();
    current.params.push_back(k);
    current_bytes += bytes;
  }
  close();
  for (const Bucket& b : buckets_) stats_.bytes_per_sync += b.flat.numel() * b.flat.element_size();
  stats_.bucket_count = static_cast<int64_t>(buckets_.size());
  ready_.assign(params_.size(), false);
  used_.assign(params_.size(), false);

  for (size_t i = 0; i < params_.size(); ++i) {
    RETURN_IF_ERROR_CTX(hooks_.Add(params_[i], [this, i] { OnGradReady(i); }),
                        absl::StrCat("DistributedDataParallel: parameter ", names_[i]));
  }
  return absl::OkStatus();
}

DistributedDataParallel::~DistributedDataParallel() {
  // Outstanding all-reduces (an error path) must finish before their buffers go away.
  WaitLaunched();
}

std::vector<std::vector<std::string>> DistributedDataParallel::BucketParameterNames() const {
  std::vector<std::vector<std::string>> out;
  for (const Bucket& b : buckets_) {
    out.emplace_back();
    for (size_t i : b.params) out.back().push_back(names_[i]);
  }
  return out;
}

absl::Status DistributedDataParallel::BeforeForward(bool sync) {
  // DDP's require_forward_param_sync: buffers are synced before the first forward after a
  // synchronised step (and the very first), not on every accumulation micro-step.
  const bool sync_buffers = last_forward_synced_;
  sync_ = sync;
  last_forward_synced_ = sync;
  if (options_.broadcast_buffers && sync_buffers) {
    const std::vector<at::Tensor> buffers = module_.buffers();
    if (!buffers.empty()) {
      RETURN_IF_ERROR(BroadcastTensors(pg_, buffers, "DistributedDataParallel: buffers"));
    }
  }
  return absl::OkStatus();
}

void DistributedDataParallel::OnGradReady(size_t index) {
  used_[index] = true;
  if (!sync_ || !hook_error_.ok()) return;
  if (ready_[index]) {
    hook_error_ = absl::FailedPreconditionError(
        absl::StrCat("DistributedDataParallel: parameter ", names_[index],
                     " received its gradient twice in one backward pass (reentrant backward or a "
                     "parameter reached through two graphs); this is not supported"));
    return;
  }
  ready_[index] = true;
  if (--buckets_[bucket_of_[index]].pending == 0 && options_.overlap) LaunchReadyBuckets();
}

void DistributedDataParallel::LaunchReadyBuckets() {
  while (next_bucket_ < buckets_.size() && buckets_[next_bucket_].pending == 0) {
    try {
      Launch(buckets_[next_bucket_]);
    } catch (const std::exception& e) {
      hook_error_ = base::TorchErrorToStatus(e, absl::StatusCode::kUnavailable,
                                             "DistributedDataParallel: launching an all-reduce");
      return;
    }
    ++next_bucket_;
  }
}

void DistributedDataParallel::Launch(Bucket& bucket) {
  torch::NoGradGuard no_grad;
  const double scale = 1.0 / pg_.world_size();
  for (size_t k = 0; k < bucket.params.size(); ++k) {
    const at::Tensor& p = params_[bucket.params[k]];
    at::Tensor view = bucket.flat.narrow(0, bucket.offsets[k], p.numel());
    const at::Tensor& grad = p.grad();
    if (grad.defined()) {
      // One pass: view = grad * (1 / world_size), the factor in the gradient's dtype (as DDP).
      at::mul_out(view, grad.reshape({-1}), at::scalar_tensor(scale, grad.options()));
    } else {
      view.zero_();
    }
  }
  if (first_launch_ == 0) first_launch_ = Now();
  std::vector<at::Tensor> tensors = {bucket.flat};
  ::c10d::AllreduceOptions opts;
  opts.reduceOp = ::c10d::ReduceOp::SUM;
  bucket.work = pg_.backend().allreduce(tensors, opts);
  ++stats_.allreduces;
}

absl::Status DistributedDataParallel::AfterBackward() {
  if (!sync_) return absl::OkStatus();
  absl::Status status = FinishSync();
  ResetWindow();
  return status;
}

void DistributedDataParallel::WaitLaunched() {
  for (Bucket& b : buckets_) {
    if (!b.work) continue;
    try {
      b.work->wait();
    } catch (const std::exception&) {
      // The error that matters is the one being returned.
    }
    b.work.reset();
  }
}

absl::Status DistributedDataParallel::FinishSync() {
  if (!hook_error_.ok()) {
    WaitLaunched();  // their buffers are reused by the next window
    return hook_error_;
  }
  std::vector<std::string> missing;
  for (size_t i = 0; i < params_.size(); ++i) {
    if (ready_[i]) continue;
    if (!options_.find_unused_parameters) {
      missing.push_back(names_[i]);
      continue;
    }
    ready_[i] = true;
    --buckets_[bucket_of_[i]].pending;
  }
  if (!missing.empty()) {
    WaitLaunched();
    return absl::FailedPreconditionError(absl::StrCat(
        "DistributedDataParallel: these parameters received no gradient in this step: ",
        absl::StrJoin(missing, ", "),
        ". Make every parameter take part in computing the loss, or pass "
        "--ddp_find_unused_parameters true (PyTorch DDP's find_unused_parameters=True)"));
  }
  const double wait_start = Now();
  LaunchReadyBuckets();
  if (!hook_error_.ok()) {
    WaitLaunched();
    return hook_error_;
  }
  try {
    for (Bucket& b : buckets_) {
      b.work->wait();
      b.work.reset();
    }
  } catch (const std::exception& e) {
    WaitLaunched();
    return CollectiveFailure(e, "DistributedDataParallel gradient all-reduce", pg_);
  }
  const double done = Now();
  stats_.last_comm_seconds = done - first_launch_;
  stats_.last_wait_seconds = done - wait_start;
  ++stats_.syncs;

  std::vector<bool> globally_used(params_.size(), true);
  if (options_.find_unused_parameters) {
    at::Tensor used = at::zeros({static_cast<int64_t>(params_.size())}, at::kInt);
    for (size_t i = 0; i < params_.size(); ++i) used[i] = used_[i] ? 1 : 0;
    RETURN_IF_ERROR_CTX(AllReduce(pg_, used, ReduceOp::kSum),
                        "DistributedDataParallel: which parameters were used");
    for (size_t i = 0; i < params_.size(); ++i) globally_used[i] = used[i].item<int>() > 0;
  }
  torch::NoGradGuard no_grad;
  for (Bucket& b : buckets_) {
    for (size_t k = 0; k < b.params.size(); ++k) {
      at::Tensor p = params_[b.params[k]];
      at::Tensor reduced = b.flat.narrow(0, b.offsets[k], p.numel()).view(p.sizes());
      if (p.grad().defined()) {
        p.mutable_grad().copy_(reduced);
      } else if (globally_used[b.params[k]]) {
        p.mutable_grad() = reduced.clone();
      }
    }
  }
  return absl::OkStatus();
}

void DistributedDataParallel::ResetWindow() {
  std::fill(ready_.begin(), ready_.end(), false);
  std::fill(used_.begin(), used_.end(), false);
  for (Bucket& b : buckets_) {
    b.pending = static_cast<int64_t>(b.params.size());
    b.work.reset();
  }
  next_bucket_ = 0;
  first_launch_ = 0;
  sync_ = false;
  hook_error_ = absl::OkStatus();
}

}  // namespace loom::distributed
