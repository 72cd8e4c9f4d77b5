// Reading DeepSpeed ZeRO checkpoints (stages 1-3): the full fp32 state dict from a `global_stepN/`
// folder, by the consolidation DeepSpeed 0.13.5's `deepspeed/utils/zero_to_fp32.py` performs
// (the layout: sharding/deepspeed_checkpoint/deepspeed_checkpoint_layout.md). This is the code path
// //tools:zero_to_fp32 uses.
//
// Contract: ConsolidateZeroCheckpoint(dir, tag):
//   - `dir` is the folder holding `latest` (HF's checkpoint-N/); the tag is `tag` when given,
//     else `latest`'s content stripped of white space. The files are read from dir/<tag>/.
//   - Optimizer files: every *_optim_states.pt, in natural order (digit runs compared as
//     numbers); each holds optimizer_state_dict.{zero_stage, partition_count,
//     single_partition_of_fp32_groups} (stage 3: fp32_flat_groups). partition_count (an int, or
//     a list: its max) must equal the number of files; zero_stage is 1, 2 or 3, the same in all.
//   - The model file *_model_states.pt: buffer_names, module (the buffers' values), param_shapes
//     (per group: name -> shape), shared_params (alias -> owner), frozen_param_shapes /
//     frozen_param_fragments (may be None).
//   - The result, in zero_to_fp32's order: buffers (as float32), frozen parameters (as stored;
//     stage 3: every rank's fragment concatenated and trimmed), then the trainable parameters —
//     stages 1-2: per group the concatenation of every rank's partition cut into param_shapes'
//     tensors in order (padding never read; the consumed count rounded up to 2 x world size
//     must equal the concatenation's); stage 3: each parameter's ceil(numel / world) pieces,
//     one per rank at the same offset of every rank's flat groups, concatenated and trimmed
//     (the pieces must use the flat groups exactly) — then shared aliases (the owner's tensor).
//   Every missing file or key, or value of the wrong type, is an error naming the file and key;
//   the missing `latest`, tag folder and optimizer files, a wrong number of them and a
//   consumed-count mismatch are DeepSpeed's own messages.
//   Memory: the files are opened without their tensor data (lazy_torch_save.h) and each
//   parameter's pieces are read from them straight into its output tensor, so the peak is about
//   the output (DeepSpeed's script holds every partition and their concatenation: ~2x).
//   OpenZeroCheckpoint stops before reading the trainable parameters: each is read when asked,
//   so a caller writing shards holds one shard at a time.
//
//   exclude_frozen_parameters leaves the frozen parameters out.
//
// Example:
//   ASSIGN_OR_RETURN(checkpoint::NamedTensors state, ConsolidateZeroCheckpoint("out/checkpoint-3"));
//
// deepspeed_zero.cc stays one file (about 600 lines): it is zero_to_fp32.py's one reading of
// DeepSpeed's files, each function a named step of it; splitting by stage would separate the
// shared partition arithmetic from the two readers that use it.
#ifndef LOOM_SHARDING_DEEPSPEED_CHECKPOINT_ZERO_TO_FP32_H_
#define LOOM_SHARDING_DEEPSPEED_CHECKPOINT_ZERO_TO_FP32_H_

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "checkpoint/module_state.h"
#include "checkpoint/named_tensors.h"

namespace loom::sharding {

struct ZeroCheckpoint {
  checkpoint::NamedTensors state;      // the consolidated fp32 state dict
  int64_t zero_stage = 0;  // 1, 2 or 3
  int64_t world_size = 0;  // partition_count
  std::string ds_version;  // the model file's ds_version ("" when absent)
  std::string folder;      // dir/<tag>
};

// A tensor of the consolidated state dict, read from the files when asked (read(): a CPU
// tensor; errors name the file). `same_as`: for a shared_params alias, its owner's name.
struct ZeroTensor {
  std::string name;
  std::vector<int64_t> shape;
  at::ScalarType dtype = at::kFloat;
  std::function<absl::StatusOr<at::Tensor>()> read;
  std::string same_as;
};

// The consolidated state dict as ZeroTensors in ReadZeroCheckpoint's order: the files are
// opened and checked (every error ReadZeroCheckpoint gives for their layout), but the
// trainable parameters are read one at a time when asked — a checkpoint larger than memory
// is written out shard by shard (//tools:zero_to_fp32 OUTPUT_DIR).
struct LazyZeroCheckpoint {
  std::vector<ZeroTensor> tensors;
  int64_t zero_stage = 0;
  int64_t world_size = 0;
  std::string ds_version;
  std::string folder;
};

struct ZeroReadOptions {
  std::optional<std::string> tag;          // default: latest's content
  bool exclude_frozen_parameters = false;  // zero_to_fp32's --exclude_frozen_parameters
};

absl::StatusOr<ZeroCheckpoint> ReadZeroCheckpoint(const std::string& dir,
                                                  const ZeroReadOptions& options = {});
absl::StatusOr<LazyZeroCheckpoint> OpenZeroCheckpoint(const std::string& dir,
                                                      const ZeroReadOptions& options = {});
// t.read(), with torch's exceptions as errors naming the tensor and `folder`.
absl::StatusOr<at::Tensor> ReadZeroTensor(const ZeroTensor& t, const std::string& folder);
// Every tensor read (an alias shares its owner's tensor): ReadZeroCheckpoint's state.
absl::StatusOr<checkpoint::NamedTensors> ReadZeroTensors(const LazyZeroCheckpoint& lazy);

// ReadZeroCheckpoint(dir, {tag}).state.
absl::StatusOr<checkpoint::NamedTensors> ConsolidateZeroCheckpoint(
    const std::string& dir, const std::optional<std::string>& tag = std::nullopt);

// DeepSpeed's Python API (DeepSpeed 0.13.5 `zero_to_fp32.py`):
//   GetFp32StateDictFromZeroCheckpoint(dir, tag, exclude_frozen_parameters): the consolidated
//   fp32 state dict, on the CPU (get_fp32_state_dict_from_zero_checkpoint).
//   LoadStateDictFromZeroCheckpoint(model, dir, tag): the model moved to the CPU and the state
//   dict loaded into it non-strictly (load_state_dict_from_zero_checkpoint; keys the model lacks
//   or the checkpoint lacks are left alone, shapes must agree); returns what was left out.
absl::StatusOr<checkpoint::NamedTensors> GetFp32StateDictFromZeroCheckpoint(
    const std::string& dir, const std::optional<std::string>& tag = std::nullopt,
    bool exclude_frozen_parameters = false);
absl::StatusOr<checkpoint::LoadStateDictResult> LoadStateDictFromZeroCheckpoint(
    torch::nn::Module& model, const std::string& dir,
    const std::optional<std::string>& tag = std::nullopt);

}  // namespace loom::sharding

#endif  // LOOM_SHARDING_DEEPSPEED_CHECKPOINT_ZERO_TO_FP32_H_
