// The index of a sharded checkpoint (model.safetensors.index.json, pytorch_model.bin.index.json):
// HF's {"metadata": {"total_size": N}, "weight_map": {tensor: shard file}}. Torch-free, so the
// reader of this file from outside is fuzzed on its own (//checkpoint/fuzz:shard_index_fuzzer).
//
// Contract:
//   - ParseShardIndex(text, source): the weight map. InvalidArgument naming `source` for text
//     that is not JSON, not an object, without a "weight_map" object, with a value that is not
//     a string, or with a shard name that is not a plain file name in the index's folder
//     (empty, ".", "..", or holding '/', '\' or NUL: an index never names a file elsewhere).
//   - ShardIndexJson(total_size, weight_map): the index text byte for byte as HF writes it
//     (Python's json.dumps(index, indent=2, sort_keys=True) + "\n").
//
// Example:
//   ASSIGN_OR_RETURN(auto weight_map, ParseShardIndex(text, index_path));
//   for (const auto& [tensor, file] : weight_map) ...
#ifndef LOOM_CHECKPOINT_SHARD_INDEX_H_
#define LOOM_CHECKPOINT_SHARD_INDEX_H_

#include <cstdint>
#include <map>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace loom::checkpoint {

absl::StatusOr<std::map<std::string, std::string>> ParseShardIndex(absl::string_view text,
                                                                   const std::string& source);

std::string ShardIndexJson(uint64_t total_size,
                           const std::map<std::string, std::string>& weight_map);

// InvalidArgument "<source>: <what> (expected HF's ...; re-create the checkpoint with ...)", for
// the readers that check an index against its shards.
absl::Status ShardIndexError(const std::string& source, absl::string_view what);

}  // namespace loom::checkpoint

#endif  // LOOM_CHECKPOINT_SHARD_INDEX_H_
