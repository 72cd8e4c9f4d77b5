// The vocabulary of DeepSpeed 0.13.5's ZeRO checkpoint files, shared by everything in loom that
// writes or reads them (zero_checkpoint.h: the strategies' files and their resume;
// zero_to_fp32.h: zero_to_fp32.py's consolidation; the ZeRO-3 layout of
// sharding/param_shard): the file and tag names, DeepSpeed's partition arithmetic, the `latest`
// file, and checked readers of the values inside the files. The layout itself is described in
// deepspeed_checkpoint_layout.md next to this file.
//
// Contract:
//   - Names: ZeroTagName(7) == "global_step7"; ZeroOptimStatesFile(r, bf16) ==
//     "[bf16_]zero_pp_rank_<r>_mp_rank_00_optim_states.pt"; ZeroModelStatesFile(stage, r) ==
//     "mp_rank_00_model_states.pt" for stages 1-2, "zero_pp_rank_<r>_mp_rank_00_model_states.pt"
//     for stage 3 (engine.py `_get_ckpt_name` / `_get_zero_ckpt_name`).
//   - Partitions: stages 1-2 pad a group's flat buffer to a multiple of 2 x world
//     (ZeroAlignedNumel; stage_1_and_2.py's nccl_start_alignment_factor) and give each rank an
//     equal slice; stage 3 splits every parameter into ceil(numel / world) pieces
//     (Zero3PartitionNumel; partition_parameters.py), rank r's piece holding
//     ZeroValidInPartition(numel, piece, r) real elements (the rest is padding).
//   - ReadZeroLatestTag(folder): `latest`'s content without surrounding white space, or NotFound
//     "Unable to find 'latest' file at <folder>/latest" (DeepSpeed's words; callers add advice).
//     ZeroTagFolder(folder, tag): folder/tag, or NotFound "Directory '<folder>/<tag>' doesn't
//     exist".
//   - ListZeroFiles(dir, suffix): the names in `dir` ending with `suffix`, in natural order
//     (digit runs compared as numbers: rank_2 before rank_10), as zero_to_fp32.py's
//     get_checkpoint_files sorts them.
//   - ZeroEntry / ZeroIntOrMax / ZeroShape / ZeroNumel: a dict's entry, an int (or a list of
//     ints: its max, as partition_count may be), a shape (tuple or list of sizes), its element
//     count (overflow-checked) — each an InvalidArgument naming the file and the key otherwise.
//     Nothing here throws.
//
// Example:
//   ASSIGN_OR_RETURN(std::string tag, ReadZeroLatestTag(dir));
//   ASSIGN_OR_RETURN(std::string tag_dir, ZeroTagFolder(dir, tag));
//   for (const std::string& name : ListZeroFiles(tag_dir, kZeroOptimStatesSuffix)) ...
#ifndef LOOM_SHARDING_DEEPSPEED_CHECKPOINT_ZERO_FILES_H_
#define LOOM_SHARDING_DEEPSPEED_CHECKPOINT_ZERO_FILES_H_

#include <ATen/ATen.h>
#include <ATen/core/ivalue.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace loom::sharding {

inline constexpr char kZeroLatestFile[] = "latest";
// Where DeepSpeed copies its zero_to_fp32.py, loom writes a one-line pointer to its tool.
inline constexpr char kZeroToFp32Pointer[] = "zero_to_fp32.py";
inline constexpr char kZeroModelStatesFile[] = "mp_rank_00_model_states.pt";
inline constexpr char kZeroOptimStatesSuffix[] = "_optim_states.pt";
inline constexpr char kZeroModelStatesSuffix[] = "_model_states.pt";

std::string ZeroTagName(int64_t global_step);
std::string ZeroOptimStatesFile(int dp_rank, bool bf16);
std::string ZeroModelStatesFile(int stage, int dp_rank);

int64_t ZeroAlignedNumel(int64_t numel, int world_size);
int64_t Zero3PartitionNumel(int64_t numel, int world_size);
int64_t ZeroValidInPartition(int64_t numel, int64_t partition_numel, int rank);
// Rank `rank`'s piece of a flattened parameter: Zero3PartitionNumel elements, zero-padded.
at::Tensor Zero3Piece(const at::Tensor& flat, int rank, int world_size);

absl::StatusOr<std::string> ReadZeroLatestTag(const std::string& folder);
absl::StatusOr<std::string> ZeroTagFolder(const std::string& folder, const std::string& tag);
std::vector<std::string> ListZeroFiles(const std::string& dir, const std::string& suffix);
bool NaturalLess(const std::string& a, const std::string& b);

absl::StatusOr<c10::IValue> ZeroEntry(const c10::IValue& dict, const std::string& key,
                                      const std::string& file);
absl::StatusOr<int64_t> ZeroIntOrMax(const c10::IValue& v, const std::string& key,
                                     const std::string& file);
absl::StatusOr<std::vector<int64_t>> ZeroShape(const c10::IValue& v, const std::string& what);
absl::StatusOr<int64_t> ZeroNumel(const std::vector<int64_t>& shape, const std::string& what);

}  // namespace loom::sharding

#endif  // LOOM_SHARDING_DEEPSPEED_CHECKPOINT_ZERO_FILES_H_
