// libFuzzer target for the sharded checkpoint index reader (shard_index.h): any bytes give an
// error or a weight map whose shard names are plain file names, and the map written back
// (ShardIndexJson) parses to the same map. Violations abort, which libFuzzer reports as a
// crash (with the input saved).
//
// Built with clang's -fsanitize=fuzzer,address,undefined by the :shard_index_fuzzer genrule;
// see checkpoint/fuzz/BUILD for the smoke run in the test suite and a longer run.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

#include "absl/strings/string_view.h"
#include "checkpoint/shard_index.h"

namespace {

void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "invariant violated: %s\n", what);
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view text(reinterpret_cast<const char*>(data), size);
  const auto map = loom::checkpoint::ParseShardIndex(text, "fuzz.index.json");
  if (!map.ok()) return 0;
  for (const auto& [tensor, file] : *map) {
    Check(!file.empty() && file != "." && file != "..", "a shard name is a file name");
    Check(file.find_first_of(std::string("/\\\0", 3)) == std::string::npos,
          "a shard name has no separator or NUL");
  }
  const auto again =
      loom::checkpoint::ParseShardIndex(loom::checkpoint::ShardIndexJson(7, *map), "again");
  Check(again.ok() && *again == *map, "the written index reads back to the same map");
  return 0;
}
