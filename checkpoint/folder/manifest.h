// loom_manifest.json: the list of files in a checkpoint folder with their sizes and CRC32C
// checksums. It is loom's addition to the HF checkpoint layout (HF tools ignore files they do
// not know); StagedFolder::Commit writes it last, so its presence marks a complete folder, and
// VerifyFolder checks the folder against it.
//
// Format (UTF-8 JSON; files sorted by path; paths relative, '/'-separated):
//   {
//     "format": "loom-checkpoint-manifest",
//     "version": 1,
//     "files": [
//       {"path": "model.safetensors", "size": 1048576, "crc32c": "1a2b3c4d"},
//       {"path": "optimizer.pt", "size": 2097152, "crc32c": "e3069283"}
//     ]
//   }
// "crc32c" is the CRC-32C (//logging:crc32c) of the whole file as 8 lowercase hex digits.
//
// Contract:
//   ComputeManifest(folder, fsync)  walks `folder` recursively and describes every regular
//                                   file except the top-level loom_manifest.json itself. A
//                                   symlink or other special file is an InvalidArgument error
//                                   naming it. With
//                                   fsync == kFsync every file and directory is fsync()ed
//                                   as it is visited (sub-directories before their parent).
//   DigestFile(path, fsync)         size and CRC32C of one file (reads it in 1 MiB pieces).
//   SerializeManifest(m)            the JSON above; InvalidArgument when a path is not UTF-8.
//   ParseManifest(json)             the inverse. DataLoss for malformed JSON, a wrong "format",
//                                   an unknown "version", or an entry whose path is absolute,
//                                   empty, has an empty, "." or ".." component, names the
//                                   manifest itself, or appears twice.
//
// Example:
//   ASSIGN_OR_RETURN(Manifest m, ComputeManifest(dir, Fsync::kFsync));
//   ASSIGN_OR_RETURN(std::string json, SerializeManifest(m));
#ifndef LOOM_CHECKPOINT_FOLDER_MANIFEST_H_
#define LOOM_CHECKPOINT_FOLDER_MANIFEST_H_

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace loom::checkpoint {

struct ManifestEntry {
  std::string path;  // relative to the folder, '/'-separated
  uint64_t size = 0;
  uint32_t crc32c = 0;

  bool operator==(const ManifestEntry& o) const {
    return path == o.path && size == o.size && crc32c == o.crc32c;
  }
};

struct Manifest {
  std::vector<ManifestEntry> files;  // sorted by path

  uint64_t total_bytes() const;
};

enum class Fsync { kNo, kFsync };

struct FileDigest {
  uint64_t size = 0;
  uint32_t crc32c = 0;
};

absl::StatusOr<FileDigest> DigestFile(const std::filesystem::path& path, Fsync fsync);

absl::StatusOr<Manifest> ComputeManifest(const std::filesystem::path& folder, Fsync fsync);

absl::StatusOr<std::string> SerializeManifest(const Manifest& manifest);

absl::StatusOr<Manifest> ParseManifest(absl::string_view json);

// "1a2b3c4d".
std::string FormatCrc32c(uint32_t crc);

}  // namespace loom::checkpoint

#endif  // LOOM_CHECKPOINT_FOLDER_MANIFEST_H_
