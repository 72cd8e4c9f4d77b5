// Reading and writing safetensors files of LibTorch tensors (the format HF saves as
// model.safetensors). Hand-written (no Debian package has a C++ safetensors library) over
// safetensors_header.h, which holds the format rules and the bounds-checked parser.
//
// Contract:
//   SaveSafetensors(path, tensors, metadata) writes the reference writer's layout byte for
//     byte (tensors ordered by dtype alignment then name, header padded with spaces to 8
//     bytes, raw little-endian C-order data), streamed to a temporary file that is fsynced and
//     renamed over `path` (atomic; see atomic_file_writer.h). Tensors may live on any device
//     and be non-contiguous; they are copied to CPU one at a time while writing. Supported
//     dtypes are every one LibTorch 1.13 shares with safetensors: F64, F32, F16, BF16, I64, I32,
//     I16, I8, U8, BOOL. Tensors sharing storage are written as separate copies (HF drops tied
//     duplicates before saving). Python's safetensors.torch.save_file(tensors, path, metadata)
//     writes the same bytes; HF's save_pretrained passes metadata {"format": "pt"}
//     (kHfSafetensorsMetadata), which from_pretrained requires.
//   LoadSafetensors(path, options) validates the whole header before touching data (every
//     malformed file is an InvalidArgument naming `path`, never a crash) and returns the
//     tensors in file order with the metadata. With options.mmap (the default) the tensors are
//     zero-copy views of a private copy-on-write mapping of the file: no data is read until
//     used, writing to a tensor never changes the file, and the mapping lives as long as any
//     tensor from it. A tensor whose bytes are not aligned to its element size (possible only
//     in files from other writers) is copied. With mmap = false each tensor is read into its
//     own memory (streaming; no mapping outlives the call). Dtypes LibTorch lacks (U16, U32,
//     U64, F8_*) are an InvalidArgument naming the tensor.
//   Caveat of mmap: if another process truncates the file while its tensors are alive, touching
//   them raises SIGBUS (as with any mapping); use mmap = false for files that may change.
//
// Example:
//   RETURN_IF_ERROR(SaveSafetensors(dir + "/model.safetensors", ModuleStateDict(model),
//                                   kHfSafetensorsMetadata));
//   ASSIGN_OR_RETURN(SafetensorsFile file, LoadSafetensors(dir + "/model.safetensors"));
//   for (const auto& [name, tensor] : file.tensors) { ... }
#ifndef LOOM_CHECKPOINT_SAFETENSORS_H_
#define LOOM_CHECKPOINT_SAFETENSORS_H_

#include <c10/core/ScalarType.h>

#include <map>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "checkpoint/named_tensors.h"
#include "checkpoint/safetensors_header.h"

namespace loom::checkpoint {

using SafetensorsMetadata = std::map<std::string, std::string>;

// The metadata HF's save_pretrained writes and from_pretrained checks.
inline const SafetensorsMetadata kHfSafetensorsMetadata = {{"format", "pt"}};

struct SafetensorsFile {
  NamedTensors tensors;  // in file (data) order
  SafetensorsMetadata metadata;
};

struct SafetensorsLoadOptions {
  bool mmap = true;
};

// The safetensors dtype of a LibTorch dtype and back; InvalidArgument for the ones without a
// counterpart (complex, quantized, ...; U16/U32/U64/F8 on the way back).
absl::StatusOr<SafetensorsDtype> ToSafetensorsDtype(c10::ScalarType type);
absl::StatusOr<c10::ScalarType> ToScalarType(SafetensorsDtype dtype);

absl::Status SaveSafetensors(const std::string& path, const NamedTensors& tensors,
                             const SafetensorsMetadata& metadata = {});

// The whole file in memory (same bytes SaveSafetensors writes).
absl::StatusOr<std::string> SerializeSafetensors(const NamedTensors& tensors,
                                                 const SafetensorsMetadata& metadata = {});

absl::StatusOr<SafetensorsFile> LoadSafetensors(const std::string& path,
                                                SafetensorsLoadOptions options = {});

// Parses a whole file held in memory; the tensors own copies of their bytes.
absl::StatusOr<SafetensorsFile> ParseSafetensors(absl::string_view file_bytes);

// Only the validated header of a file (reads 8 + N bytes).
absl::StatusOr<SafetensorsHeader> ReadSafetensorsHeader(const std::string& path);

}  // namespace loom::checkpoint

#endif  // LOOM_CHECKPOINT_SAFETENSORS_H_
