// ParallelContext: this process's place in a (possibly multi-process) run as the Trainer sees
// it — HF TrainingArguments' world_size / process_index / local_process_index / should_save /
// main_process_first and the accelerate pieces HF's Trainer relies on (data sharding, gathering
// for metrics, the DDP wrapper) — over an explicit ProcessGroup.
//
// Contract:
//   - Create(pg, args): with `pg`, that group; without, the launcher's environment
//     (distributed/distributed_env.h): WORLD_SIZE > 1 creates a process group from
//     ddp_backend / ddp_timeout (rank 0 hosts the store), WORLD_SIZE 1 needs none. LOCAL_RANK /
//     GROUP_RANK come from the environment (a given pg with no launcher variables counts as one
//     node). A given group of one is used as it is (its collectives run, so a program can
//     train a strategy over, say, an NCCL group of one); without one, a single process never
//     opens a socket.
//   - is_world_zero(): rank 0. is_local_zero(): local rank 0. ShouldSave(args):
//     save_on_each_node ? is_local_zero : is_world_zero (TrainingArguments.should_save).
//   - Collectives are no-ops (or identities) for one process without a group; with a group (of
//     one too), every rank must
//     call them in the same order: Barrier, BroadcastString (from rank 0), MeanFloat (a float32
//     mean over ranks in rank order, HF's _nested_gather(tr_loss).mean()), GatherRows (each
//     rank's tensor, dim 0 may differ, in rank order), PadAcrossProcesses.
//   - ShareFromSaver(args, value): every rank ends with the value of the rank that saves for
//     it: rank 0's, or with save_on_each_node its node's local rank 0's (through the store).
//   - AgreeOnStatus(mine, what): every rank learns whether all succeeded: returns `mine` when it
//     failed, Internal("<what>: another rank failed ...") when only another did, else OK. A
//     step that can fail on some ranks only ends with it, so no rank waits for the others in a
//     later collective.
//   - MainProcessFirst(local, fn): HF's main_process_first: the main process (local or world)
//     runs fn first, the others wait at a barrier and run it after; any rank's error is
//     returned on that rank (the barrier still completes).
//
// Example:
//   ASSIGN_OR_RETURN(ParallelContext parallel, ParallelContext::Create(std::nullopt, args));
//   if (parallel.ShouldSave(args)) { ... }
//   RETURN_IF_ERROR(parallel.Barrier());
#ifndef LOOM_RUNTIME_PARALLEL_CONTEXT_H_
#define LOOM_RUNTIME_PARALLEL_CONTEXT_H_

#include <torch/nn/module.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "args/training_args.pb.h"
#include "distributed/process_group.h"
#include "logging/log_level.h"

namespace loom::runtime {

class ParallelContext {
 public:
  // One process, no group.
  ParallelContext() = default;
  static absl::StatusOr<ParallelContext> Create(std::optional<distributed::ProcessGroup> pg,
                                                const args::TrainingArguments& args);

  int rank() const { return rank_; }
  int world_size() const { return world_size_; }
  int local_rank() const { return local_rank_; }
  int node_rank() const { return node_rank_; }
  bool is_world_zero() const { return rank_ == 0; }
  bool is_local_zero() const { return local_rank_ == 0; }
  bool ShouldSave(const args::TrainingArguments& args) const;
  logging::ProcessPlacement Placement() const;
  // The process group (nullopt for one process that was given none).
  const std::optional<distributed::ProcessGroup>& process_group() const { return pg_; }

  absl::Status Barrier();
  absl::Status BroadcastString(std::string& value);
  absl::Status ShareFromSaver(const args::TrainingArguments& args, std::string& value);
  absl::StatusOr<float> MeanFloat(float value);
  absl::StatusOr<std::vector<at::Tensor>> GatherRows(const at::Tensor& tensor);
  // accelerate's pad_across_processes: `t` padded along `dim` with `pad_index` to the longest
  // size any rank has there (at the end, or at the front with pad_first); unchanged for one
  // process, a 0-d tensor or a dim every rank has the same size in. A collective.
  absl::StatusOr<at::Tensor> PadAcrossProcesses(const at::Tensor& t, int64_t dim = 0,
                                                double pad_index = 0, bool pad_first = false);
  absl::Status AgreeOnStatus(const absl::Status& mine, const std::string& what);
  absl::Status MainProcessFirst(bool local, const std::function<absl::Status()>& fn);

 private:
  std::optional<distributed::ProcessGroup> pg_;
  int rank_ = 0;
  int world_size_ = 1;
  int local_rank_ = 0;
  int node_rank_ = 0;
  std::string store_prefix_;  // unique per context (rank 0's random token), for store keys
  int64_t shares_ = 0;        // store keys used by ShareFromSaver
};

}  // namespace loom::runtime

#endif  // LOOM_RUNTIME_PARALLEL_CONTEXT_H_
