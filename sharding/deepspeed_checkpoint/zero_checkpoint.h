// ZeRO-1/2/3 checkpoint files in DeepSpeed 0.13.5's layout (engine.py save_checkpoint; the verified
// details are in deepspeed_checkpoint_layout.md next to this file), written into HF's
// checkpoint-N/ folder and read back for a resume on any number of ranks. The names, the
// partition arithmetic and the checked value readers are zero_files.h's, shared with
// zero_to_fp32.h's consolidation.
//
// Files (every .pt a torch.save zip archive Python's torch.load reads; only plain Python and
// torch types inside — dicts, lists, tuples, ints, floats, strings, None, tensors, torch.Size
// — so neither DeepSpeed nor its classes are needed to read them, and DeepSpeed 0.13.5's own
// zero_to_fp32.py consolidates them):
//   latest                                        "global_stepN" (no newline; rank 0)
//   zero_to_fp32.py                               rank 0: a one-line pointer to the tool
//   global_stepN/mp_rank_00_model_states.pt       rank 0: module (the full state dict),
//       buffer_names, optimizer None, param_shapes (per group: name -> torch.Size, as
//       DeepSpeed writes, flat order), frozen_param_shapes (name -> torch.Size) /
//       frozen_param_fragments (stage 2; None for stage 1), shared_params {}, lr_scheduler,
//       data_sampler None, random_ltd None, sparse_tensor_module_names [], skipped_steps,
//       global_steps, global_samples, dp_world_size, mp_world_size 1, ds_config (the resolved
//       config), ds_version
//   global_stepN/[bf16_]zero_pp_rank_R_mp_rank_00_optim_states.pt   every rank R:
//       {optimizer_state_dict: {dynamic_loss_scale False, overflow False, clip_grad,
//        base_optimizer_state (torch's state_dict of the optimizer over the padded partitions),
//        single_partition_of_fp32_groups (the rank's fp32 master partitions with the padding
//        cut off), zero_stage (an int, as zero_to_fp32 compares it), group_paddings,
//        partition_count, ds_version}, ds_config, ds_version}
//   What is left out: DeepSpeed's LossScaler object (fp32 has none to restore; DeepSpeed reads
//   it with .get) and param_slice_mappings (fragment_address objects, only used by DeepSpeed's
//   universal-checkpoint tooling).
//
// ReadZeroRankState(folder, layout, rank, world) reads `latest` and every rank's optimizer file
// of that tag, whatever world size N wrote them: each group's fp32 weights and partitioned
// optimizer state tensors (those with the partition's numel) are concatenated in rank order,
// cut to the group's true numel, padded for `world` and sliced for `rank`; other state values
// (the step) and the param_groups come from rank 0's file. Errors name the file: a missing
// `latest` or tag folder, a wrong number of optimizer files (partition_count), a checkpoint of
// another model (param_shapes differ from `layout`), a stage-3 checkpoint.
//
// Example:
//   RETURN_IF_ERROR(WriteZeroOptimStates(dir + "/" + ZeroOptimStatesFile(rank, false), ...));
//   ASSIGN_OR_RETURN(ZeroRankRestore r, ReadZeroRankState(folder, layout, rank, world));
//
// zero_checkpoint.cc stays one file (about 630 lines): the writer and the repartitioning reader
// of one file layout, kept together so that the two cannot drift apart.
#ifndef LOOM_SHARDING_DEEPSPEED_CHECKPOINT_ZERO_CHECKPOINT_H_
#define LOOM_SHARDING_DEEPSPEED_CHECKPOINT_ZERO_CHECKPOINT_H_

#include <ATen/ATen.h>
#include <ATen/core/ivalue.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "checkpoint/named_tensors.h"
#include "nlohmann/json.hpp"
#include "sharding/deepspeed_checkpoint/zero_files.h"

namespace loom::sharding {

// The version string written as ds_version: the DeepSpeed release whose layout loom writes.
inline constexpr char kZeroLayoutVersion[] = "0.13.5+loom";

// One optimizer group's trainable parameters in flat-buffer order.
struct ZeroGroupLayout {
  std::vector<std::string> names;
  std::vector<std::vector<int64_t>> shapes;
  int64_t numel = 0;  // unpadded
};

struct ZeroFilesInfo {
  int stage = 2;
  int rank = 0;
  int world_size = 1;
  int64_t global_step = 0;
  int64_t global_samples = 0;
  c10::IValue lr_scheduler;  // None when absent
  nlohmann::ordered_json ds_config = nlohmann::ordered_json::object();
  double clip_grad = 0;
  bool bf16 = false;  // the optimizer files get DeepSpeed's bf16_ prefix
};

// The files' facts (bf16 false; set it after).
ZeroFilesInfo MakeZeroFilesInfo(int stage, int rank, int world_size, int64_t global_step,
                                int64_t global_samples, const c10::IValue& lr_scheduler,
                                const nlohmann::ordered_json& ds_config, double clip_grad);

// Saving, on every rank: MakeZeroTagFolder (checkpoint_folder/global_stepN, created; its path
// returned), the rank's files into it, then on rank 0 WriteZeroLatest: `latest` naming the tag
// and — where DeepSpeed copies its zero_to_fp32.py — an executable one-line zero_to_fp32.py
// (kZeroToFp32Pointer) pointing at //tools:zero_to_fp32 (running it says how to consolidate and
// exits 1).
absl::StatusOr<std::string> MakeZeroTagFolder(const std::string& checkpoint_folder,
                                              int64_t global_step);
absl::Status WriteZeroLatest(const std::string& checkpoint_folder, int64_t global_step);

// `module`: the full state dict (parameters and persistent buffers, state_dict order; stage 3:
// the partitioned parameters as empty placeholders, as DeepSpeed's);
// `frozen`: the parameters that do not require grad (stage 3: whole; the file gets this
// rank's partition of each, ceil(numel / world) elements).
absl::Status WriteZeroModelStates(const std::string& path, const checkpoint::NamedTensors& module,
                                  const std::vector<std::string>& buffer_names,
                                  const std::vector<ZeroGroupLayout>& groups,
                                  const checkpoint::NamedTensors& frozen,
                                  const ZeroFilesInfo& info);
// `partitions`: this rank's padded fp32 master partition per group; `base_optimizer_state`:
// checkpoint::OptimizerStateDict of the optimizer that steps on them. Stage 3 (DeepSpeed's
// stage3 optimizer): `partitions` are the fp32_flat_groups (per group, this rank's partition of
// every parameter, ceil(numel / world) elements each, in order) and `base_optimizer_state` the
// optimizer state over them (one entry per group), stored as "optimizer_state_dict".
absl::Status WriteZeroOptimStates(const std::string& path,
                                  const std::vector<at::Tensor>& partitions,
                                  const std::vector<ZeroGroupLayout>& groups,
                                  const c10::IValue& base_optimizer_state,
                                  const ZeroFilesInfo& info);
// The value WriteZeroOptimStates saves (for writers that stream its tensors:
// checkpoint/torch_save_writer.h). Stage 3 keeps the partitions' storages as they are.
absl::StatusOr<c10::IValue> ZeroOptimStatesValue(const std::vector<at::Tensor>& partitions,
                                                 const std::vector<ZeroGroupLayout>& groups,
                                                 const c10::IValue& base_optimizer_state,
                                                 const ZeroFilesInfo& info);

struct ZeroRankRestore {
  std::vector<at::Tensor> partitions;  // per group: this rank's padded fp32 partition
  c10::IValue optimizer_state;         // torch layout over those partitions
  int saved_world_size = 0;
  std::string tag;
};
absl::StatusOr<ZeroRankRestore> ReadZeroRankState(const std::string& checkpoint_folder,
                                                  const std::vector<ZeroGroupLayout>& groups,
                                                  int rank, int world_size);

// ZeRO-3 checkpoints (DeepSpeed 0.13.5's layout, as zero_to_fp32.py's
// _zero3_merge_trainable_params reads it), read one saved rank's
// file at a time: for every parameter i of group g, the piece of it that saved rank holds —
// elements [begin, begin + values.numel()) of the flattened parameter — of the fp32 weights
// (what == kZero3Fp32) and of each partitioned optimizer state tensor (what == its key) is
// handed to `sink`. Returns rank 0's base optimizer state (its non-partitioned entries, e.g.
// "step", and param_groups; its partitioned tensors are data-less placeholders), the saved
// world size and the tag. Errors as ReadZeroRankState's. The files are opened without their
// tensor data (checkpoint/lazy_torch_save.h) and only the pieces of parameters `wanted(group,
// param)` accepts (all when it is empty) are read, one parameter's piece at a time: a rank
// resumes one sub-group of its shards at a time without holding a whole file.
inline constexpr char kZero3Fp32[] = "fp32";
using Zero3Sink = std::function<absl::Status(size_t group, size_t param, const std::string& what,
                                             int64_t begin, const at::Tensor& values)>;
struct Zero3Read {
  c10::IValue base_optimizer_state;
  int saved_world_size = 0;
  std::string tag;
};
using Zero3Wanted = std::function<bool(size_t group, size_t param)>;
absl::StatusOr<Zero3Read> ReadZero3Partitions(const std::string& checkpoint_folder,
                                              const std::vector<ZeroGroupLayout>& groups,
                                              const Zero3Sink& sink,
                                              const Zero3Wanted& wanted = nullptr);

}  // namespace loom::sharding

#endif  // LOOM_SHARDING_DEEPSPEED_CHECKPOINT_ZERO_CHECKPOINT_H_
