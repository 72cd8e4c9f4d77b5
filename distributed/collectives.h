// Collectives the Trainer needs, over an explicit ProcessGroup, each returning Status.
//
// Contract:
//   - Every rank of `pg` must call the same collective in the same order (as in
//     torch.distributed); each call blocks until it completes on this rank or fails after the
//     group's timeout (ddp_timeout), which comes back as a Status, never an exception:
//     DeadlineExceeded when a peer did not take part within ddp_timeout, Unavailable when a
//     peer went away; both name the collective, this rank, the world size and the backend,
//     and, for a transport failure or a timeout, end with which peers did not report the same
//     failure (peer_check.h: the stopped, hung, dead or cut-off ones), at most 3 s later. With
//     more than 3 ranks, peers that are still waiting out their own timeout are named too.
//   - AllReduce(t, kSum | kAvg): in place; kAvg divides the sum by the world size and needs a
//     floating-point tensor (InvalidArgument otherwise).
//   - Broadcast(t, src): in place; every rank ends with rank `src`'s values.
//   - Barrier(): returns once every rank has entered it.
//   - AllGather(t): every rank's `t` (same shape and dtype on all ranks, InvalidArgument naming
//     the ranks otherwise), indexed by rank.
//   - AllGatherVariableLength(t): like AllGather but dim 0 may differ per rank (the other dims
//     and dtype may not): pads to the longest, gathers, and trims each back to its length, so
//     result[r] equals rank r's tensor exactly. This is how evaluation gathers predictions.
//   - AllGatherInto(input, flat): every rank's `input` (same numel and dtype everywhere) written
//     into `flat`, a contiguous 1-D tensor of world x numel elements: rank r's at
//     [r * numel, (r + 1) * numel) — no extra copies (ZeRO's parameter sharing). Same device as
//     the group's.
//   - ReduceScatterSum(flat, out): `flat` (1-D, contiguous, numel divisible by the world size,
//     the same on every rank) is cut in world-size chunks; `out` (chunk-sized) receives the sum
//     over ranks of chunk `rank`. `flat` is used as scratch (its contents afterwards are
//     unspecified). Gloo has no reduce-scatter: a ring of send/recv (N - 1 steps, each rank
//     sends (N - 1) / N of `flat`); other backends use theirs.
//   - StartAllGatherInto(input, flat): AllGatherInto started without waiting (the backend's own
//     all-gather on its worker threads); PendingCollective::Wait() finishes it. Until then
//     neither tensor may be touched. Other collectives may be issued meanwhile (every rank in
//     the same order). FSDP's prefetch.
//   - BroadcastString(s, src): every rank ends with rank `src`'s string (any bytes).
//   - CollectiveFailure(e, what, pg): the Status above for a c10d exception `e` thrown by
//     collective `what` (for code that drives the backend directly, e.g. DDP's reducer).
//   - bfloat16 over Gloo (which has no bf16 in LibTorch 1.13): broadcasts, gathers and the
//     reduce-scatter ring move the bits as float16 (the ring adds in bf16, as NCCL would);
//     AllReduce sums in fp32 and rounds back once.
//   - Non-contiguous inputs are handled (a contiguous copy is sent / written back), and so are
//     tensors on another device than the group's (ProcessGroup::comm_device(): NCCL's CUDA
//     device for small CPU metadata, say): they travel through a copy there and back.
//
// Example:
//   RETURN_IF_ERROR(AllReduce(pg, loss_sum, ReduceOp::kAvg));
//   ASSIGN_OR_RETURN(std::vector<at::Tensor> preds, AllGatherVariableLength(pg, local_preds));
//   at::Tensor all = at::cat(preds);
#ifndef LOOM_DISTRIBUTED_COLLECTIVES_H_
#define LOOM_DISTRIBUTED_COLLECTIVES_H_

#include <ATen/ATen.h>

#include <exception>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "distributed/process_group.h"

namespace loom::distributed {

enum class ReduceOp { kSum, kAvg };

absl::Status AllReduce(ProcessGroup& pg, at::Tensor& tensor, ReduceOp op = ReduceOp::kSum);

absl::Status Broadcast(ProcessGroup& pg, at::Tensor& tensor, int src_rank = 0);

absl::Status Barrier(ProcessGroup& pg);

absl::Status BroadcastString(ProcessGroup& pg, std::string& value, int src_rank = 0);

absl::Status AllGatherInto(ProcessGroup& pg, const at::Tensor& input, at::Tensor& flat);

absl::Status ReduceScatterSum(ProcessGroup& pg, at::Tensor& flat, at::Tensor& out);

// A collective in flight (StartAllGatherInto). Wait() once; destroying one unwaited waits.
class PendingCollective {
 public:
  using WorkPtr = decltype(std::declval<C10dBackend&>().barrier());
  PendingCollective() = default;
  PendingCollective(ProcessGroup* pg, WorkPtr work, std::string what)
      : pg_(pg), work_(std::move(work)), what_(std::move(what)) {}
  PendingCollective(PendingCollective&&) = default;
  PendingCollective& operator=(PendingCollective&& other);
  ~PendingCollective();
  bool pending() const { return work_.defined(); }
  absl::Status Wait();

 private:
  ProcessGroup* pg_ = nullptr;
  WorkPtr work_;
  std::string what_;
};
absl::StatusOr<PendingCollective> StartAllGatherInto(ProcessGroup& pg, const at::Tensor& input,
                                                     at::Tensor& flat);

absl::Status CollectiveFailure(const std::exception& e, absl::string_view what,
                               const ProcessGroup& pg);

absl::StatusOr<std::vector<at::Tensor>> AllGather(ProcessGroup& pg, const at::Tensor& tensor);

absl::StatusOr<std::vector<at::Tensor>> AllGatherVariableLength(ProcessGroup& pg,
                                                                const at::Tensor& tensor);

}  // namespace loom::distributed

#endif  // LOOM_DISTRIBUTED_COLLECTIVES_H_
