#include "sharding/zero/zero_overlap.h"

#include <algorithm>

#include "absl/memory/memory.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "base/torch_status.h"
#include "distributed/collectives.h"

namespace loom::sharding {

absl::StatusOr<std::unique_ptr<OverlappedReduction>> OverlappedReduction::Create(
    distributed::ProcessGroup pg, std::vector<Group> groups, int64_t bucket_elements,
    at::ScalarType comm_dtype) {
  if (bucket_elements <= 0) {
    return absl::InvalidArgumentError("OverlappedReduction: the bucket size must be positive");
  }
  auto r = absl::WrapUnique(new OverlappedReduction(std::move(pg), std::move(groups), comm_dtype));
  r->bucket_of_.resize(r->groups_.size());
  for (size_t g = 0; g < r->groups_.size(); ++g) {
    const Group& group = r->groups_[g];
    r->bucket_of_[g].assign(group.params.size(), 0);
    std::vector<int64_t>& offsets = r->group_offsets_.emplace_back();
    int64_t offset = 0;
    for (const at::Tensor& p : group.params) {
      offsets.push_back(offset);
      offset += p.numel();
    }
    Bucket current;
    for (size_t k = group.params.size(); k-- > 0;) {
      const int64_t n = group.params[k].numel();
      if (!current.params.empty() && current.end - offsets[k] > bucket_elements) {
        r->buckets_.push_back(std::move(current));
        current = Bucket();
      }
      if (current.params.empty()) {
        current.group = g;
        current.end = k + 1 == group.params.size() ? group.padded_numel : offsets[k] + n;
      }
      current.begin = offsets[k];
      current.params.push_back(k);
      current.order_key = std::max(current.order_key, group.model_index[k]);
    }
    if (!current.params.empty()) r->buckets_.push_back(std::move(current));
  }
  std::stable_sort(r->buckets_.begin(), r->buckets_.end(),
                   [](const Bucket& a, const Bucket& b) { return a.order_key > b.order_key; });
  for (size_t b = 0; b < r->buckets_.size(); ++b) {
    for (size_t k : r->buckets_[b].params) r->bucket_of_[r->buckets_[b].group][k] = b;
  }
  r->Reset();
  for (size_t g = 0; g < r->groups_.size(); ++g) {
    for (size_t k = 0; k < r->groups_[g].params.size(); ++k) {
      OverlappedReduction* self = r.get();
      RETURN_IF_ERROR_CTX(
          r->hooks_.Add(r->groups_[g].params[k], [self, g, k] { self->OnGradReady(g, k); }),
          absl::StrCat("overlap_comm: parameter ", k, " of group ", g));
    }
  }
  return r;
}

OverlappedReduction::~OverlappedReduction() { WaitAll(); }

void OverlappedReduction::Reset() {
  for (Bucket& b : buckets_) {
    b.pending = static_cast<int64_t>(b.params.size());
    b.reductions.clear();
    b.buffer = at::Tensor();
  }
  next_ = 0;
}

void OverlappedReduction::Arm(bool closing) { armed_ = closing; }

void OverlappedReduction::OnGradReady(size_t group, size_t param) {
  if (!armed_ || !error_.ok()) return;
  Bucket& b = buckets_[bucket_of_[group][param]];
  if (--b.pending == 0) LaunchReady();
}

void OverlappedReduction::LaunchReady() {
  while (next_ < buckets_.size() && buckets_[next_].pending <= 0) {
    try {
      Launch(buckets_[next_]);
    } catch (const std::exception& e) {
      error_ = base::TorchErrorToStatus(e, absl::StatusCode::kUnavailable,
                                        "overlap_comm: launching a gradient reduction");
      return;
    }
    ++next_;
  }
}

void OverlappedReduction::Launch(Bucket& b) {
  at::NoGradGuard no_grad;
  const Group& group = groups_[b.group];
  const int world = pg_.world_size();
  b.buffer = at::zeros({b.end - b.begin}, group.params.front().options().dtype(comm_dtype_));
  for (size_t k : b.params) {
    const at::Tensor& p = group.params[k];
    const int64_t offset = group_offsets_[b.group][k] - b.begin;
    if (p.grad().defined())
      b.buffer.slice(0, offset, offset + p.numel()).copy_(p.grad().reshape({-1}));
  }
  b.buffer.div_(static_cast<double>(world));  // DeepSpeed's average_tensor
  const int64_t part = group.padded_numel / world;
  for (int r = 0; r < world; ++r) {
    const int64_t lo = std::max(b.begin, r * part);
    const int64_t hi = std::min(b.end, (r + 1) * part);
    if (lo >= hi) continue;
    Reduction red;
    red.root = r;
    red.slice = b.buffer.slice(0, lo - b.begin, hi - b.begin);
    red.part_offset = lo - r * part;
    std::vector<at::Tensor> tensors = {red.slice};
    ::c10d::ReduceOptions opts;
    opts.reduceOp = ::c10d::ReduceOp::SUM;
    opts.rootRank = r;
    red.work = pg_.backend().reduce(tensors, opts);
    b.reductions.push_back(std::move(red));
  }
}

void OverlappedReduction::WaitAll() {
  for (Bucket& b : buckets_) {
    for (Reduction& red : b.reductions) {
      if (!red.work) continue;
      try {
        red.work->wait();
      } catch (const std::exception&) {
      }
      red.work.reset();
    }
  }
}

absl::Status OverlappedReduction::Finish(const std::vector<at::Tensor*>& outs) {
  armed_ = false;
  if (outs.size() != groups_.size()) {
    return absl::InternalError("OverlappedReduction::Finish: one output per group expected");
  }
  for (Bucket& b : buckets_) b.pending = 0;  // parameters without a gradient count as zeros
  LaunchReady();
  absl::Status status = error_;
  at::NoGradGuard no_grad;
  for (Bucket& b : buckets_) {
    for (Reduction& red : b.reductions) {
      if (!red.work) continue;
      try {
        red.work->wait();
        if (status.ok() && red.root == pg_.rank()) {
          outs[b.group]
              ->slice(0, red.part_offset, red.part_offset + red.slice.numel())
              .copy_(red.slice);
        }
      } catch (const std::exception& e) {
        if (status.ok()) status = distributed::CollectiveFailure(e, "overlap_comm reduce", pg_);
      }
      red.work.reset();
    }
  }
  Reset();
  return status;
}

}  // namespace loom::sharding
