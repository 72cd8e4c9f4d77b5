// OverlappedReduction: ZeRO's gradient reduction overlapped with backward (DeepSpeed's
// `overlap_comm`), for ZeroStrategy.
//
// Contract:
//   - Buckets: per optimizer group, its parameters in reverse flat order, consecutive ones
//     gathered until a bucket holds `bucket_elements` (reduce_bucket_size); each bucket is a
//     contiguous range of the group's flat gradient (the one with the group's last parameter
//     also covers the zero padding). Buckets are launched in one fixed order on every rank
//     (by the latest model position of their parameters, i.e. roughly backward's order).
//   - Arm(true) before the forward of a window's closing micro-batch: during its backward a
//     hook after each parameter's gradient accumulation counts the parameter in; a bucket whose
//     parameters are all in, and every bucket before it, is launched: the accumulated gradients
//     are copied into the bucket's buffer (in the communication dtype), divided by the world
//     size (DeepSpeed's average_tensor), and each piece of the range that falls into rank r's
//     partition is reduced (summed) to rank r asynchronously. Arm(false) (accumulation
//     micro-steps): the hooks do nothing.
//   - Finish(outs): launches the buckets still waiting (parameters that got no gradient count
//     as zeros), waits for every reduction, and writes this rank's averaged partition of group
//     g into *outs[g] (the partition's numel, the communication dtype). Errors (a peer gone) are
//     Statuses; afterwards the object may only be destroyed.
//   - The destructor removes the hooks and waits for reductions in flight.
//
// Example:
//   ASSIGN_OR_RETURN(auto overlap, OverlappedReduction::Create(pg, groups, bucket, at::kFloat));
//   overlap->Arm(closes_window);  ... backward ...
//   RETURN_IF_ERROR(overlap->Finish({&part_grad0, &part_grad1}));
#ifndef LOOM_SHARDING_ZERO_ZERO_OVERLAP_H_
#define LOOM_SHARDING_ZERO_ZERO_OVERLAP_H_

#include <ATen/ATen.h>

#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "distributed/grad_ready_hooks.h"
#include "distributed/process_group.h"

namespace loom::sharding {

class OverlappedReduction {
 public:
  struct Group {
    std::vector<at::Tensor> params;    // flat order
    std::vector<int64_t> model_index;  // each parameter's position in model.parameters()
    int64_t numel = 0;
    int64_t padded_numel = 0;
  };

  static absl::StatusOr<std::unique_ptr<OverlappedReduction>> Create(distributed::ProcessGroup pg,
                                                                     std::vector<Group> groups,
                                                                     int64_t bucket_elements,
                                                                     at::ScalarType comm_dtype);
  ~OverlappedReduction();
  OverlappedReduction(const OverlappedReduction&) = delete;
  OverlappedReduction& operator=(const OverlappedReduction&) = delete;

  void Arm(bool closing);
  absl::Status Finish(const std::vector<at::Tensor*>& outs);
  int64_t bucket_count() const { return static_cast<int64_t>(buckets_.size()); }

 private:
  struct Reduction {
    c10::intrusive_ptr<::c10d::Work> work;
    int root = 0;
    at::Tensor slice;         // of the bucket's buffer
    int64_t part_offset = 0;  // where it lands in the root's partition
  };
  struct Bucket {
    size_t group = 0;
    int64_t begin = 0, end = 0;  // flat range
    std::vector<size_t> params;  // indices into the group's params
    int64_t order_key = 0;
    int64_t pending = 0;
    at::Tensor buffer;
    std::vector<Reduction> reductions;
  };

  OverlappedReduction(distributed::ProcessGroup pg, std::vector<Group> groups,
                      at::ScalarType comm_dtype)
      : pg_(std::move(pg)), groups_(std::move(groups)), comm_dtype_(comm_dtype) {}
  void OnGradReady(size_t group, size_t param);
  void LaunchReady();
  void Launch(Bucket& b);
  void WaitAll();
  void Reset();

  distributed::ProcessGroup pg_;
  std::vector<Group> groups_;
  at::ScalarType comm_dtype_;
  std::vector<Bucket> buckets_;                      // in launch order
  std::vector<std::vector<size_t>> bucket_of_;       // [group][param] -> bucket index
  std::vector<std::vector<int64_t>> group_offsets_;  // [group][param] -> flat offset
  bool armed_ = false;
  size_t next_ = 0;  // the next bucket to launch
  absl::Status error_;
  distributed::GradReadyHooks hooks_;  // declared last: its hooks go first
};

}  // namespace loom::sharding

#endif  // LOOM_SHARDING_ZERO_ZERO_OVERLAP_H_
