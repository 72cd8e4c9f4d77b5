// OptimizerSwapper: ZeRO-Infinity's optimizer-state offload to NVMe (DeepSpeed 0.13.5
// offload_optimizer with "device": "nvme", sub_group_size, buffer_count and the `aio`
// section) — the optimizer's per-parameter state tensors live in swap files and come into
// host memory one sub-group at a time for the optimizer step, through //aio's engine.
//
// Contract:
//   - Create(options, optimizer, shards): `shards` are the optimizer's parameters (contiguous
//     CPU fp32, each in one of its groups), split in order into sub-groups of at most
//     sub_group_size elements (one shard at least). The optimizer must be Adam, AdamW (torch's
//     or loom's fused ones, HF's AdamW) or Adagrad without amsgrad. A scratch folder
//     nvme_path/loom-swap-rank<R>-XXXXXX (base/scratch_folder.h) holds one file per sub-group;
//     it is removed when the swapper goes away and when the process is killed by SIGINT,
//     SIGTERM or SIGHUP. The folder and the free space are checked as swap_space.h says.
//   - Step(step_subgroup): for each sub-group in turn, its state is read in (the next one's read
//     started ahead, so I/O overlaps the step), the optimizer's groups are narrowed to the
//     sub-group's shards, step_subgroup() runs, the groups are put back, and the state is
//     written out (in the background; at most buffer_count sub-groups' state in memory). States
//     the optimizer has not made yet (the first step) are made by that step. All writes have
//     finished when Step returns.
//   - ForEachSubGroup(fn, dirty): each sub-group in turn with its state in memory (the next
//     one's read started ahead) and the optimizer narrowed to its shards, as in Step;
//     fn(its shards' indices) runs; then the state is written out (dirty: fn changed or made
//     it) or let go unchanged (the file still holds it). At most about two sub-groups' state
//     in memory: a checkpoint is saved and loaded one sub-group at a time. Step is
//     ForEachSubGroup(step, dirty).
//   - SwapInAll / SwapOutAll: every state in memory, then every state back to the files.
//   - resident_bytes(): state bytes in memory now.
//
// Example:
//   ASSIGN_OR_RETURN(auto swapper, OptimizerSwapper::Create(opts, optimizer, shards));
//   RETURN_IF_ERROR(swapper->Step([&] { return precision->OptimizerStep(*optimizer, {}).status(); }));
#ifndef LOOM_SHARDING_OFFLOAD_OPTIMIZER_SWAPPER_H_
#define LOOM_SHARDING_OFFLOAD_OPTIMIZER_SWAPPER_H_

#include <ATen/ATen.h>
#include <torch/optim/optimizer.h>

#include <functional>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "aio/aio_engine.h"
#include "sharding/offload/swap_space.h"

namespace loom::sharding {

struct OptimizerSwapperOptions {
  std::string nvme_path;
  int rank = 0;
  aio::AioOptions aio;
  int64_t buffer_count = 4;
  int64_t sub_group_size = 1000000000;
};


class OptimizerSwapper {
 public:
  static absl::StatusOr<std::unique_ptr<OptimizerSwapper>> Create(
      const OptimizerSwapperOptions& options, torch::optim::Optimizer* optimizer,
      std::vector<at::Tensor> shards);
  ~OptimizerSwapper();

  absl::Status Step(const std::function<absl::Status()>& step_subgroup);
  absl::Status ForEachSubGroup(
      const std::function<absl::Status(const std::vector<size_t>& shards)>& fn, bool dirty);
  absl::Status SwapInAll();
  absl::Status SwapOutAll();

  int64_t resident_bytes() const;
  size_t num_sub_groups() const { return groups_.size(); }
  const std::string& folder() const { return space_.folder->path(); }
  std::string Describe() const;  // one log line: sizes, folder, O_DIRECT or buffered

 private:
  struct SubGroup {
    std::vector<size_t> shards;  // indices into shards_
    int64_t numel = 0;
    int64_t bytes = 0;  // the file's size (aligned)
    std::string file;
    bool on_disk = false;  // the file holds the state; the state tensors are not in memory
    std::shared_ptr<aio::AlignedBuffer> buffer;  // resident state (views into it) or I/O buffer
    std::future<absl::Status> reading, writing;
  };

  OptimizerSwapper() = default;
  absl::Status StartRead(SubGroup& g);
  absl::Status FinishRead(SubGroup& g);    // waits, then the state tensors view the buffer
  absl::Status StartWrite(SubGroup& g);    // packs the state, writes in the background
  absl::Status FinishWrite(SubGroup& g);   // waits, frees the buffer
  absl::Status FinishAllWrites();
  void LetGo(SubGroup& g);  // drops a sub-group's state read in unchanged (the file holds it)

  OptimizerSwapperOptions options_;
  torch::optim::Optimizer* optimizer_ = nullptr;
  std::vector<at::Tensor> shards_;
  int states_per_element_ = 2;  // Adam: exp_avg, exp_avg_sq; Adagrad: sum
  SwapSpace space_;
  std::vector<SubGroup> groups_;
};

}  // namespace loom::sharding

#endif  // LOOM_SHARDING_OFFLOAD_OPTIMIZER_SWAPPER_H_
