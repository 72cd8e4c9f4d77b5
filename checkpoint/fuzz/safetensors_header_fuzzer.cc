// libFuzzer target for the safetensors header parser (safetensors_header.h): any bytes, as a
// whole file and as a bare JSON header, must give an error or a header that satisfies the
// format's invariants; a parsed header must survive a write/parse round trip. Violations
// abort, which libFuzzer reports as a crash (with the input saved).
//
// Built with clang's -fsanitize=fuzzer,address,undefined by the :safetensors_header_fuzzer
// genrule; see checkpoint/fuzz/BUILD for the smoke run in the test suite and a longer run.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "checkpoint/safetensors_header.h"

namespace {

using loom::checkpoint::SafetensorsHeader;
using loom::checkpoint::TensorEntry;

void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "invariant violated: %s\n", what);
    std::abort();
  }
}

void CheckInvariants(const SafetensorsHeader& header) {
  uint64_t expected = 0;
  for (const TensorEntry& t : header.tensors) {
    Check(t.begin == expected, "tensors tile the data section");
    Check(t.end >= t.begin && t.end <= header.data_size, "offsets within the data section");
    const std::optional<uint64_t> bytes = loom::checkpoint::TensorByteSize(t.dtype, t.shape);
    Check(bytes.has_value() && *bytes == t.end - t.begin, "byte count matches dtype and shape");
    expected = t.end;
  }
  Check(expected == header.data_size, "tensors cover the data section");

  // Writing the same tensors and metadata and parsing again gives them back.
  std::vector<TensorEntry> tensors = header.tensors;
  auto size = loom::checkpoint::OrderForWriting(tensors);
  Check(size.ok() && *size == header.data_size, "re-ordering keeps the data size");
  auto bytes = loom::checkpoint::SerializeSafetensorsHeader(tensors, header.metadata);
  if (!bytes.ok()) return;  // e.g. a re-serialized header over the size limit
  if (header.data_size > (1 << 20)) return;  // parsed data is at most the input's size
  const std::string file = *bytes + std::string(header.data_size, '\0');
  auto again = loom::checkpoint::ParseSafetensorsBuffer(file);
  Check(again.ok(), "a written header parses");
  Check(again->tensors.size() == tensors.size(), "round trip keeps the tensor count");
  Check(again->metadata == header.metadata, "round trip keeps the metadata");
  for (size_t i = 0; i < tensors.size(); ++i) {
    Check(again->tensors[i].name == tensors[i].name, "round trip keeps names");
    Check(again->tensors[i].shape == tensors[i].shape, "round trip keeps shapes");
    Check(again->tensors[i].dtype == tensors[i].dtype, "round trip keeps dtypes");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto as_file = loom::checkpoint::ParseSafetensorsBuffer(bytes);
  if (as_file.ok()) CheckInvariants(*as_file);
  // The bytes as a bare header, with the data size taken from the first byte, so the fuzzer
  // reaches the JSON layer without having to guess a length prefix.
  if (!bytes.empty()) {
    const uint64_t data_size = static_cast<unsigned char>(bytes[0]);
    auto as_header = loom::checkpoint::ParseSafetensorsHeader(bytes.substr(1), data_size);
    if (as_header.ok()) CheckInvariants(*as_header);
  }
  return 0;
}
