// The safetensors file format without LibTorch: the dtype table, a bounds-checked header
// parser and the header writer. Hand-written because no Debian package has a C++ safetensors
// library; it follows the format of huggingface/safetensors (the Rust crate behind the Python
// package), not its code.
//
// File layout (all integers little-endian):
//   bytes [0, 8)        N, a u64: the byte length of the JSON header
//   bytes [8, 8 + N)    the header, UTF-8 JSON: an object mapping each tensor name to
//                       {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}
//                       plus an optional "__metadata__" object of string -> string;
//                       the reference writer pads it with spaces to a multiple of 8 bytes
//   bytes [8 + N, end)  the data section; a tensor's bytes are [begin, end) of it, C order
//
// Parser contract (ParseSafetensorsHeader / ParseHeaderLength): every check of the reference
// reader, each failure an InvalidArgument whose message names the tensor or field and says what
// is wrong; nothing a file holds can make it crash, read out of bounds or allocate more than
// the header's own size:
//   - the file has at least 8 bytes; N <= kMaxHeaderSize (100,000,000, the reference's limit);
//     8 + N <= file size;
//   - the header is valid UTF-8, starts with '{', and is one JSON object (trailing whitespace
//     allowed, nothing else); no key appears twice in any object (the reference keeps the
//     last; loom rejects the file because the two readings disagree);
//   - "__metadata__" is an object of strings (or null); every other entry is an object with a
//     known "dtype" string, a "shape" array of non-negative integers and a "data_offsets" array
//     of exactly two non-negative integers (other keys are ignored, as the reference does);
//   - sorted by data_offsets, the tensors tile the data section from 0 without gaps or
//     overlaps, each spans exactly product(shape) * dtype size bytes (computed with overflow
//     checks), and the last one ends exactly at the end of the file.
// Tensors come back in data order (the order of their bytes in the file).
//
// Writer contract (OrderForWriting + SerializeSafetensorsHeader): the reference writer's
// layout byte for byte: tensors sorted by dtype alignment, largest first (in the reference's
// Dtype order, I64 > F64 > F32 > I32 > BF16 > F16 > I16 > I8 > U8 > BOOL for LibTorch's
// types), then by name; offsets assigned back to back; compact JSON with "__metadata__"
// first (keys sorted; the reference's order is a hash map's, which no reader depends on) and
// each tensor's keys in the order dtype, shape, data_offsets; spaces appended up to a
// multiple of 8 bytes. An empty metadata map writes no "__metadata__" (Python's
// metadata=None); HF's save_pretrained passes {"format": "pt"}.
//
// Example:
//   ASSIGN_OR_RETURN(uint64_t n, ParseHeaderLength(first_8_bytes, file_size));
//   ASSIGN_OR_RETURN(SafetensorsHeader header,
//                    ParseSafetensorsHeader(json_bytes, file_size - 8 - n));
//   for (const TensorEntry& t : header.tensors) { ... t.begin, t.end ... }
#ifndef LOOM_CHECKPOINT_SAFETENSORS_HEADER_H_
#define LOOM_CHECKPOINT_SAFETENSORS_HEADER_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace loom::checkpoint {

// The reference's dtypes, in its order (increasing alignment). LibTorch 1.13 has no U16,
// U32, U64 or F8 types; the parser knows them so foreign files validate fully, and the tensor
// layer (safetensors.h) reports them as unsupported.
enum class SafetensorsDtype {
  kBool,
  kU8,
  kI8,
  kF8E5M2,
  kF8E4M3,
  kI16,
  kU16,
  kF16,
  kBF16,
  kI32,
  kU32,
  kF32,
  kF64,
  kI64,
  kU64,
};

// "BOOL", "U8", ..., "F8_E5M2", "F8_E4M3", ... as the header spells them.
absl::string_view DtypeName(SafetensorsDtype dtype);
std::optional<SafetensorsDtype> DtypeFromName(absl::string_view name);
// Bytes per element.
uint64_t DtypeSize(SafetensorsDtype dtype);
// product(shape) * DtypeSize(dtype), or nullopt when that overflows 64 bits.
std::optional<uint64_t> TensorByteSize(SafetensorsDtype dtype, const std::vector<uint64_t>& shape);

// The reference reader's limit on N.
inline constexpr uint64_t kMaxHeaderSize = 100'000'000;

struct TensorEntry {
  std::string name;
  SafetensorsDtype dtype = SafetensorsDtype::kF32;
  std::vector<uint64_t> shape;
  // data_offsets: [begin, end) relative to the start of the data section.
  uint64_t begin = 0;
  uint64_t end = 0;
};

struct SafetensorsHeader {
  std::vector<TensorEntry> tensors;  // in data order
  std::map<std::string, std::string> metadata;
  uint64_t header_size = 0;  // N
  uint64_t data_size = 0;    // bytes after the header

  uint64_t data_start() const { return 8 + header_size; }
};

// N from the first 8 bytes of a file of `file_size` bytes; checks N against the limit and the
// file size. `first_bytes` may be shorter than 8 only when the file is.
absl::StatusOr<uint64_t> ParseHeaderLength(absl::string_view first_bytes, uint64_t file_size);

// Parses and validates the N header bytes for a data section of `data_size` bytes.
// Returns the tensors in data order with header_size = json.size() and data_size set.
absl::StatusOr<SafetensorsHeader> ParseSafetensorsHeader(absl::string_view json,
                                                         uint64_t data_size);

// Both steps over a whole file held in memory.
absl::StatusOr<SafetensorsHeader> ParseSafetensorsBuffer(absl::string_view file_bytes);

// Sorts `tensors` the way the reference writer does and assigns begin/end back to back from
// 0 (their shapes and dtypes must be set). InvalidArgument for a duplicate or non-UTF-8 name,
// or a size that overflows 64 bits. Returns the size of the data section.
absl::StatusOr<uint64_t> OrderForWriting(std::vector<TensorEntry>& tensors);

// The first 8 + N bytes of the file for `tensors` (already ordered and offset, as
// OrderForWriting leaves them): the length, the JSON and the space padding.
// InvalidArgument for non-UTF-8 names or metadata, or a header over kMaxHeaderSize.
absl::StatusOr<std::string> SerializeSafetensorsHeader(
    const std::vector<TensorEntry>& tensors, const std::map<std::string, std::string>& metadata);

// Whether `text` is well-formed UTF-8 (no overlong forms, surrogates or code points past
// U+10FFFF), the check the reference applies to the header.
bool IsValidUtf8(absl::string_view text);

namespace internal {
// A name as error messages show it: quoted, C-escaped, cut after 120 bytes.
std::string Quote(absl::string_view s);
}  // namespace internal

}  // namespace loom::checkpoint

#endif  // LOOM_CHECKPOINT_SAFETENSORS_HEADER_H_
