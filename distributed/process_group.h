// ProcessGroup: a c10d process group for one multi-process run, created from a DistributedEnv
// over a TCPStore rendezvous and passed explicitly to whatever communicates (no global group).
//
// Contract:
//   - Rank 0 hosts the TCPStore at MASTER_ADDR:MASTER_PORT; the others connect to it (retrying
//     a refused connection, so ranks may start in any order); every rank then waits until all
//     WORLD_SIZE ranks have counted themselves in, and the backend connects every pair of ranks
//     through the store.
//   - backend (TrainingArguments.ddp_backend): "" or "gloo" -> ProcessGroupGloo (CPU tensors);
//     "nccl" -> ProcessGroupNCCL, compiled only against a CUDA LibTorch (LOOM_HAS_CUDA), else
//     Unimplemented; "mpi", "ccl", "hccl" -> Unimplemented saying why; anything else ->
//     InvalidArgument.
//   - timeout (TrainingArguments.ddp_timeout, seconds, default 1800) bounds the rendezvous (one
//     deadline for store and count) and every collective. A rank that never arrives makes
//     CreateProcessGroup return DeadlineExceeded after `timeout` on every rank that did, naming
//     MASTER_ADDR:MASTER_PORT, WORLD_SIZE and how many ranks arrived (rank 0's view);
//     other rendezvous failures (port taken, host unknown) are Unavailable, also naming them.
//   - A single-process env (WORLD_SIZE=1) still gets a working group of one (no peers).
//   - The process ignores SIGPIPE from then on (as Python, hence torch.distributed, always does):
//     a write to a peer that is gone or cut off is the collective's error, not a silent death.
//   - LibTorch exceptions never cross this API: they become absl::Status.
//   - A ProcessGroup is a handle: copies share one c10d group (and rank 0's store server), which
//     closes when the last copy is destroyed; keep one alive on rank 0 until the others are done
//     (end with a Barrier).
//
// Example:
//   ASSIGN_OR_RETURN(DistributedEnv env, DistributedEnvFromProcess());
//   ASSIGN_OR_RETURN(ProcessGroup pg,
//                    CreateProcessGroup(env, ProcessGroupOptionsFromArgs(training_args)));
//   RETURN_IF_ERROR(AllReduce(pg, grads, ReduceOp::kAvg));  // collectives.h
#ifndef LOOM_DISTRIBUTED_PROCESS_GROUP_H_
#define LOOM_DISTRIBUTED_PROCESS_GROUP_H_

#include <c10/core/Device.h>

#include <functional>
#include <string>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "args/training_args.pb.h"
#include "base/c10d_compat.h"
#include "distributed/distributed_env.h"

namespace loom::distributed {

// The c10d class the backends derive from (base/c10d_compat.h).
using C10dBackend = ::loom::base::C10dBackend;

struct ProcessGroupOptions {
  std::string backend = "gloo";                  // ddp_backend; "" means gloo
  absl::Duration timeout = absl::Seconds(1800);  // ddp_timeout
};

// ddp_backend and ddp_timeout of `args` (unset backend -> "gloo").
ProcessGroupOptions ProcessGroupOptionsFromArgs(const loom::args::TrainingArguments& args);

class ProcessGroup {
 public:
  ProcessGroup(c10::intrusive_ptr<::c10d::Store> store, c10::intrusive_ptr<C10dBackend> backend,
               int rank, int world_size, std::string backend_name, absl::Duration timeout,
               at::Device comm_device = at::kCPU)
      : store_(std::move(store)),
        backend_(std::move(backend)),
        rank_(rank),
        world_size_(world_size),
        backend_name_(std::move(backend_name)),
        timeout_(timeout),
        comm_device_(comm_device) {}

  int rank() const { return rank_; }
  int world_size() const { return world_size_; }
  const std::string& backend_name() const { return backend_name_; }
  absl::Duration timeout() const { return timeout_; }
  // Where the backend's tensors must live: the CPU for Gloo, cuda:LOCAL_RANK for NCCL.
  // collectives.h moves tensors there and back.
  const at::Device& comm_device() const { return comm_device_; }

  // For code that drives c10d directly (DDP's reducer); callers catch c10::Error.
  C10dBackend& backend() const { return *backend_; }
  const c10::intrusive_ptr<C10dBackend>& backend_ptr() const { return backend_; }
  ::c10d::Store& store() const { return *store_; }

  // How this group's backend connects a set of ranks (CreateProcessGroup sets it; NewSubgroup
  // uses it): the store (already prefixed for the subgroup), the member's rank and the size.
  using BackendFactory = std::function<c10::intrusive_ptr<C10dBackend>(
      c10::intrusive_ptr<::c10d::Store>, int rank, int size)>;
  void set_backend_factory(BackendFactory f) { backend_factory_ = std::move(f); }
  const BackendFactory& backend_factory() const { return backend_factory_; }
  const c10::intrusive_ptr<::c10d::Store>& store_ptr() const { return store_; }

 private:
  c10::intrusive_ptr<::c10d::Store> store_;
  c10::intrusive_ptr<C10dBackend> backend_;
  int rank_;
  int world_size_;
  std::string backend_name_;
  absl::Duration timeout_;
  at::Device comm_device_;
  BackendFactory backend_factory_;
};

absl::StatusOr<ProcessGroup> CreateProcessGroup(const DistributedEnv& env,
                                                const ProcessGroupOptions& options);

// A group of some of `parent`'s ranks (torch.distributed.new_group), e.g. the ranks of one
// node for FSDP's hybrid sharding. Only the members call it, each with the same `ranks`
// (ascending, distinct, each in [0, world)) and `name`, and it returns once every member has
// connected (the parent's timeout bounds it). The subgroup's rank is the index of this rank in
// `ranks`. The same members may make a group of the same name again (it is a new group).
// InvalidArgument when this rank is not a member or `ranks` is malformed;
// FailedPrecondition for a group not made by CreateProcessGroup.
absl::StatusOr<ProcessGroup> NewSubgroup(const ProcessGroup& parent, const std::vector<int>& ranks,
                                         const std::string& name);

}  // namespace loom::distributed

#endif  // LOOM_DISTRIBUTED_PROCESS_GROUP_H_
