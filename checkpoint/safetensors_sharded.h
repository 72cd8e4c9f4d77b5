// Sharded safetensors checkpoints as HF's save_pretrained writes them and from_pretrained
// reads them (transformers 4.38-4.41): shard files "model-00001-of-00003.safetensors" plus
// "model.safetensors.index.json" holding
//   {"metadata": {"total_size": <bytes of tensor data>}, "weight_map": {name: shard file}}
// written as Python's json.dumps(index, indent=2, sort_keys=True) + "\n".
//
// Contract:
//   PlanShards(tensors, max_shard_size) is HF's shard_checkpoint: walking the tensors in
//     state-dict order, a tensor starts a new shard when adding it would push the current,
//     non-empty shard over max_shard_size; so a tensor larger than the limit gets a shard of its
//     own. total_size sums numel * element size. (Deviation: HF counts a bool element as 1/8
//     byte; loom counts the byte it occupies on disk. HF also groups tensors sharing storage,
//     which safetensors saving has removed beforehand.)
//   SaveShardedSafetensors(dir, tensors, options): with one shard, writes
//     <weights_name> (default "model.safetensors") and no index; otherwise the shards named
//     <stem>-<i:05d>-of-<n:05d>.safetensors and the index. Every file is written atomically; the
//     shards are first written as hidden ".<name>.loom-partial" files and renamed to their
//     names only once all are written, the index last, so a reader never sees an index naming
//     missing shards, and a save that fails part way (a full disk: the error names the file)
//     leaves no file of its own under a final name and the folder's earlier files as they
//     were (its partial files removed). Then, like HF, it
//     removes files of an earlier save in `dir` that match <stem>-NNNNN-of-NNNNN.safetensors but
//     are not part of this one. Deviation: it also removes the other layout's leftover, a
//     single <weights_name> after a sharded save and a stale index after a single-file save
//     (HF leaves both; loaders, HF's too, prefer the single file, so a stale one would shadow
//     the new shards). Shards carry options.metadata (default {"format": "pt"}).
//   LoadShardedSafetensors(index_path): reads the index (InvalidArgument naming the file for a
//     malformed one, or a shard name that is not a plain file name in the index's folder), loads
//     each shard once (sorted by name), and checks that every weight_map entry is in the shard
//     it names and no tensor is in two shards. Tensors a shard holds beyond the weight_map are
//     kept (HF loads whole shards). Returns tensors shard by shard in file order, with the
//     metadata of the first shard.
//   LoadSafetensorsCheckpoint(dir): <dir>/model.safetensors if present, else the index, else
//     NotFound naming both.
//
// Example:
//   SaveShardedOptions options;
//   ASSIGN_OR_RETURN(options.max_shard_size, ParseShardSize(args.max_shard_size()));
//   RETURN_IF_ERROR(SaveShardedSafetensors(dir, ModuleStateDict(model), options).status());
//   ASSIGN_OR_RETURN(SafetensorsFile weights, LoadSafetensorsCheckpoint(dir));
#ifndef LOOM_CHECKPOINT_SAFETENSORS_SHARDED_H_
#define LOOM_CHECKPOINT_SAFETENSORS_SHARDED_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "checkpoint/named_tensors.h"
#include "checkpoint/safetensors.h"
#include "checkpoint/shard_index.h"  // ShardIndexJson, for writers of indexes

namespace loom::checkpoint {

inline constexpr absl::string_view kSafetensorsWeightsName = "model.safetensors";
inline constexpr absl::string_view kSafetensorsIndexName = "model.safetensors.index.json";

struct ShardPlan {
  std::vector<std::vector<size_t>> shards;  // indices into the tensors, in state-dict order
  uint64_t total_size = 0;
};

ShardPlan PlanShards(const NamedTensors& tensors, uint64_t max_shard_size);

// HF's shard file name: "model.safetensors", 0, 3 -> "model-00001-of-00003.safetensors"
// (".bin" names get the same treatment: "pytorch_model-00001-of-00003.bin").
std::string ShardFileName(absl::string_view weights_name, size_t index, size_t count);


struct SaveShardedOptions {
  uint64_t max_shard_size = 5'000'000'000;  // HF save_pretrained's default "5GB"
  SafetensorsMetadata metadata = kHfSafetensorsMetadata;
  std::string weights_name = std::string(kSafetensorsWeightsName);
};

// The format-independent halves, used for safetensors here and for pytorch_model.bin shards
// by model_weights.h: plan, name, write each shard with `write_file(path, shard)`, write the
// index, clean up (see the header comment); and read an index, each shard once with
// `read_file(path)`, with the same checks as LoadShardedSafetensors.
using ShardWriter = std::function<absl::Status(const std::string& path, const NamedTensors&)>;
using ShardReader = std::function<absl::StatusOr<NamedTensors>(const std::string& path)>;
absl::StatusOr<std::vector<std::string>> SaveShardedFiles(const std::string& dir,
                                                          const NamedTensors& tensors,
                                                          uint64_t max_shard_size,
                                                          const std::string& weights_name,
                                                          const ShardWriter& write_file);
absl::StatusOr<NamedTensors> LoadShardedFiles(const std::string& index_path,
                                              const ShardReader& read_file);

// Returns the names of the files written (shards, then the index), relative to `dir`.
absl::StatusOr<std::vector<std::string>> SaveShardedSafetensors(
    const std::string& dir, const NamedTensors& tensors, const SaveShardedOptions& options = {});

absl::StatusOr<SafetensorsFile> LoadShardedSafetensors(const std::string& index_path,
                                                       SafetensorsLoadOptions options = {});

absl::StatusOr<SafetensorsFile> LoadSafetensorsCheckpoint(const std::string& dir,
                                                          SafetensorsLoadOptions options = {});

}  // namespace loom::checkpoint

#endif  // LOOM_CHECKPOINT_SAFETENSORS_SHARDED_H_
