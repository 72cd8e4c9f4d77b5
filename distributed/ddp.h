// DistributedDataParallel: PyTorch DDP's gradient synchronisation for a torch::nn::Module over an
// explicit ProcessGroup (torch 1.13 `DistributedDataParallel`; TrainingArguments
// ddp_bucket_cap_mb, ddp_find_unused_parameters, ddp_broadcast_buffers).
//
// Contract:
//   - Create() checks that every rank has the same parameters (count, shapes and dtypes; an
//     error names the first rank that differs), then broadcasts all parameters and buffers
//     from rank 0, as DDP's constructor does, so every rank starts from rank 0's weights.
//   - Buckets: the parameters that require grad, in reverse registration order (the order
//     their gradients usually become ready), are packed into flat buckets of one dtype: the
//     first bucket holds up to first_bucket_mb (DDP's 1 MiB), the others up to bucket_cap_mb
//     (ddp_bucket_cap_mb, DDP's default 25); a parameter larger than the cap gets its own.
//   - A post-accumulation hook on every parameter's AccumulateGrad node marks it ready during
//     backward. When the micro-batch syncs (BeforeForward(true)), a bucket whose parameters
//     are all ready is copied into its flat buffer, multiplied by 1/world_size, and all-reduced
//     (sum) asynchronously at once, in bucket order, while the rest of the backward pass runs
//     (overlap = false launches them all in AfterBackward instead: the benchmark's baseline).
//     AfterBackward waits for every bucket and copies the averaged values back into .grad:
//     PyTorch DDP's arithmetic (sum over ranks of grad / world_size).
//   - No communication at all on micro-batches with sync = false (gradient accumulation).
//   - A launch or collective error waits for the all-reduces already launched before returning.
//   - Parameters that got no gradient in the window: with find_unused_parameters they count as
//     ready with zero gradient, an extra all-reduce tells which were used on some rank, and a
//     parameter unused on every rank keeps its (absent) .grad, as in DDP. Without it,
//     AfterBackward fails with FailedPrecondition naming them and the flag (DDP's error, but
//     at once instead of at the next iteration).
//   - broadcast_buffers (ddp_broadcast_buffers, default true): BeforeForward broadcasts the
//     module's buffers from rank 0 before the first forward and before every forward that
//     follows a synchronised one (DDP's require_forward_param_sync), so accumulation
//     micro-steps after the first of a window stay silent (no-op without buffers).
//   - Every collective's failure (peer gone, ddp_timeout) is a Status from collectives.h.
//   - The module must outlive this object and keep its parameters (replace the module:
//     create a new DistributedDataParallel). Not thread-safe; one backward at a time.
//
// Example:
//   ASSIGN_OR_RETURN(std::unique_ptr<DistributedDataParallel> ddp,
//                    DistributedDataParallel::Create(*model, pg, DdpOptionsFromArgs(args)));
//   RETURN_IF_ERROR(ddp->BeforeForward(/*sync=*/true));
//   model->Forward(batch).loss.backward();
//   RETURN_IF_ERROR(ddp->AfterBackward());   // .grad is now the average over ranks
#ifndef LOOM_DISTRIBUTED_DDP_H_
#define LOOM_DISTRIBUTED_DDP_H_

#include <torch/nn/module.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "args/training_args.pb.h"
#include "distributed/grad_ready_hooks.h"
#include "distributed/gradient_sync.h"
#include "distributed/process_group.h"

namespace loom::distributed {

struct DdpOptions {
  double bucket_cap_mb = 25;            // ddp_bucket_cap_mb
  double first_bucket_mb = 1;           // torch.distributed's _DEFAULT_FIRST_BUCKET_BYTES
  bool find_unused_parameters = false;  // ddp_find_unused_parameters
  bool broadcast_buffers = true;        // ddp_broadcast_buffers
  bool overlap = true;                  // launch all-reduces from the backward hooks

  DdpOptions& set_bucket_cap_mb(double v) {
    bucket_cap_mb = v;
    return *this;
  }
  DdpOptions& set_first_bucket_mb(double v) {
    first_bucket_mb = v;
    return *this;
  }
  DdpOptions& set_find_unused_parameters(bool v) {
    find_unused_parameters = v;
    return *this;
  }
  DdpOptions& set_broadcast_buffers(bool v) {
    broadcast_buffers = v;
    return *this;
  }
  DdpOptions& set_overlap(bool v) {
    overlap = v;
    return *this;
  }
};

// ddp_bucket_cap_mb / ddp_find_unused_parameters / ddp_broadcast_buffers of `args` as HF's
// Trainer._wrap_model passes them: bucket_cap_mb and broadcast_buffers only when given
// (PyTorch's defaults otherwise), find_unused_parameters unset = !gradient_checkpointing.
DdpOptions DdpOptionsFromArgs(const args::TrainingArguments& args);

// What the last synchronisation did (for benchmarks and tests).
struct DdpStats {
  int64_t syncs = 0;       // windows reduced so far
  int64_t allreduces = 0;  // bucket all-reduces launched so far
  int64_t bucket_count = 0;
  int64_t bytes_per_sync = 0;    // gradient bytes all-reduced per window
  double last_comm_seconds = 0;  // first bucket launched -> last bucket done (last sync)
  double last_wait_seconds = 0;  // time AfterBackward spent waiting (last sync)
};

class DistributedDataParallel : public GradientSync {
 public:
  static absl::StatusOr<std::unique_ptr<DistributedDataParallel>> Create(torch::nn::Module& module,
                                                                         ProcessGroup pg,
                                                                         DdpOptions options = {});
  ~DistributedDataParallel() override;
  DistributedDataParallel(const DistributedDataParallel&) = delete;
  DistributedDataParallel& operator=(const DistributedDataParallel&) = delete;

  absl::Status BeforeForward(bool sync) override;
  absl::Status AfterBackward() override;

  const DdpStats& stats() const { return stats_; }
  // Parameter names per bucket, in launch order.
  std::vector<std::vector<std::string>> BucketParameterNames() const;

  // Called by the gradient hook of parameter `index` (internal).
  void OnGradReady(size_t index);

 private:
  struct Bucket;
  DistributedDataParallel(torch::nn::Module& module, ProcessGroup pg, DdpOptions options);
  absl::Status Init();
  void LaunchReadyBuckets();
  void Launch(Bucket& bucket);
  absl::Status FinishSync();
  void ResetWindow();
  // Waits for (and forgets) every launched all-reduce, ignoring their errors.
  void WaitLaunched();

  torch::nn::Module& module_;
  ProcessGroup pg_;
  DdpOptions options_;
  std::vector<std::string> names_;
  std::vector<at::Tensor> params_;
  std::vector<Bucket> buckets_;
  std::vector<size_t> bucket_of_;  // parameter -> bucket
  std::vector<bool> ready_;        // this sync's backward marked it ready
  std::vector<bool> used_;         // got a gradient since the last sync
  size_t next_bucket_ = 0;
  bool sync_ = false;
  bool last_forward_synced_ = true;  // DDP's require_forward_param_sync
  double first_launch_ = 0;
  absl::Status hook_error_;
  DdpStats stats_;
  GradReadyHooks hooks_;  // declared last: its hooks go first when the object is destroyed
};

}  // namespace loom::distributed

#endif  // LOOM_DISTRIBUTED_DDP_H_
