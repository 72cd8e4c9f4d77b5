// Filesystem primitives shared by the checkpoint/folder libraries (internal; not for use
// outside checkpoint/folder). Every error names the path and the failed operation.
//
// Contract:
//   ErrnoStatus(what, path, err)    absl::Status for a failed system call: NotFound for ENOENT,
//                                   PermissionDenied for EACCES/EPERM/EROFS, AlreadyExists for
//                                   EEXIST, ResourceExhausted for ENOSPC/EDQUOT, else Internal.
//   ListDirectory(dir)              entry names (no "." / ".."), sorted bytewise.
//   RemoveTree(path)                rm -rf; OK when `path` does not exist.
//   FsyncPath(path)                 fsync()s a file or directory opened read-only.
//   RenameNoReplace(from, to)       rename that fails with AlreadyExists when `to` exists
//                                   (renameat2 RENAME_NOREPLACE; plain rename() where the
//                                   filesystem lacks the flag, which still refuses a non-empty
//                                   directory at `to`).
//   RenameExchange(a, b)            atomically swaps two existing entries (renameat2
//                                   RENAME_EXCHANGE); Unimplemented where the filesystem or
//                                   kernel lacks it.
//   Rename(from, to)                plain rename(2).
//   MakeDirsDurably(dir)            mkdir -p that fsyncs the parent of every directory it creates.
//   RandomHex16()                   16 lowercase hex digits from std::random_device.
//
// Example:
//   RETURN_IF_ERROR(internal::RenameNoReplace(staging, final_path));
//   RETURN_IF_ERROR(internal::FsyncPath(parent));
#ifndef LOOM_CHECKPOINT_FOLDER_INTERNAL_FS_H_
#define LOOM_CHECKPOINT_FOLDER_INTERNAL_FS_H_

#include <filesystem>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace loom::checkpoint::internal {

absl::Status ErrnoStatus(absl::string_view what, const std::filesystem::path& path, int err);

absl::StatusOr<std::vector<std::string>> ListDirectory(const std::filesystem::path& dir);

absl::Status RemoveTree(const std::filesystem::path& path);

absl::Status FsyncPath(const std::filesystem::path& path);

absl::Status RenameNoReplace(const std::filesystem::path& from, const std::filesystem::path& to);

absl::Status RenameExchange(const std::filesystem::path& a, const std::filesystem::path& b);

absl::Status Rename(const std::filesystem::path& from, const std::filesystem::path& to);

absl::Status MakeDirsDurably(const std::filesystem::path& dir);

std::string RandomHex16();

}  // namespace loom::checkpoint::internal

#endif  // LOOM_CHECKPOINT_FOLDER_INTERNAL_FS_H_
