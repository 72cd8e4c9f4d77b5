// File helpers with absl::Status errors that name the file.
//
// WriteFileAtomically(path, bytes) gives all-or-nothing replacement: the bytes go to a
// temporary file beside `path` (same directory, so rename is atomic), which is fsynced,
// renamed over `path`, and then the directory is fsynced so the rename itself survives a
// crash. Readers see either the old file or the complete new one, never a torn write.
// On failure the temporary file is removed and `path` is untouched.
//
// Example:
//   RETURN_IF_ERROR(base::WriteFileAtomically(dir + "/trainer_state.json", json));
//   ASSIGN_OR_RETURN(std::string text, base::ReadFile(dir + "/config.json"));
#ifndef LOOM_BASE_FILE_UTIL_H_
#define LOOM_BASE_FILE_UTIL_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace loom::base {

// The Status for a failed system call on `path` ("<what> '<path>': <strerror>"): NotFound for
// ENOENT, PermissionDenied for EACCES/EPERM/EROFS, AlreadyExists for EEXIST,
// ResourceExhausted for ENOSPC/EDQUOT, Internal otherwise.
absl::Status ErrnoToStatus(absl::string_view what, const std::string& path, int err);

// Reads the whole file. NotFound when it does not exist.
absl::StatusOr<std::string> ReadFile(const std::string& path);

// Atomically replaces (or creates) `path` with `contents`; see the header comment.
// `mode` is the permission of the new file (before umask).
absl::Status WriteFileAtomically(const std::string& path, absl::string_view contents,
                                 int mode = 0644);

// fsync()s a directory so that entries created, renamed or removed in it are durable.
absl::Status FsyncDirectory(const std::string& dir);

// Creates `dir` and its missing parents (like `mkdir -p`).
absl::Status MakeDirs(const std::string& dir);

// The directory part of `path` ("." when there is none).
std::string Dirname(const std::string& path);

}  // namespace loom::base

#endif  // LOOM_BASE_FILE_UTIL_H_
