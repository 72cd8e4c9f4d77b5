// HF's max_shard_size values: transformers.utils.hub.convert_file_size_to_int
// (transformers 4.38-4.41), as save_pretrained(max_shard_size=...) reads them.
//
// Contract: ParseShardSize(text) returns bytes:
//   "<n>GIB" / "<n>MIB" / "<n>KIB"  n * 2^30 / 2^20 / 2^10   (suffix matched case-insensitively)
//   "<n>GB"  / "<n>MB"  / "<n>KB"   n * 10^9 / 10^6 / 10^3, divided by 8 (floor) when the text
//                                   ends in a lowercase "b" (bits): "5Gb" and "5gb" are
//                                   625000000 bytes, "5GB" is 5000000000
//   "<n>"                           n bytes (what passing a Python int means)
// where <n> is what Python's int() accepts: optional surrounding ASCII whitespace, an optional
// sign, decimal digits with single underscores between them. Anything else is an
// InvalidArgument with HF's message. Deviation: a result of 0 or less is rejected (HF would
// put every tensor in its own shard); a result over 2^64 - 1 is rejected.
//
// Example:
//   ASSIGN_OR_RETURN(uint64_t max_bytes, ParseShardSize("5GB"));  // 5000000000
#ifndef LOOM_CHECKPOINT_SHARD_SIZE_H_
#define LOOM_CHECKPOINT_SHARD_SIZE_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace loom::checkpoint {

absl::StatusOr<uint64_t> ParseShardSize(absl::string_view text);

}  // namespace loom::checkpoint

#endif  // LOOM_CHECKPOINT_SHARD_SIZE_H_
