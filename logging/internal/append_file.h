// An append-only file for the metric sinks: each Append() goes straight to the kernel with
// write(2) (no user-space buffer to lose in a crash), Flush() fsync(2)s it to the disk.
//
// Contract:
//   OpenForAppend(path)  opens `path` for appending, creating it (0644) and its missing parent
//                        directories; existing contents are kept.
//   CreateNew(path)      creates `path`, which must not exist (O_EXCL): AlreadyExists if it does.
//   Append(bytes)        writes all of `bytes` at the end of the file (retrying short writes).
//   Flush()              fsync(2).
//   Errors carry the errno's status code and name the file; the destructor closes the file.
//
// Example:
//   ASSIGN_OR_RETURN(std::unique_ptr<AppendFile> f, AppendFile::OpenForAppend(path));
//   RETURN_IF_ERROR(f->Append(line));
//   RETURN_IF_ERROR(f->Flush());
#ifndef LOOM_LOGGING_INTERNAL_APPEND_FILE_H_
#define LOOM_LOGGING_INTERNAL_APPEND_FILE_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace loom::logging::internal {

class AppendFile {
 public:
  static absl::StatusOr<std::unique_ptr<AppendFile>> OpenForAppend(const std::string& path);
  static absl::StatusOr<std::unique_ptr<AppendFile>> CreateNew(const std::string& path);
  ~AppendFile();
  AppendFile(const AppendFile&) = delete;
  AppendFile& operator=(const AppendFile&) = delete;

  absl::Status Append(absl::string_view bytes);
  absl::Status Flush();
  const std::string& path() const { return path_; }

 private:
  AppendFile(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  static absl::StatusOr<std::unique_ptr<AppendFile>> Open(const std::string& path, int flags);

  std::string path_;
  int fd_;
};

}  // namespace loom::logging::internal

#endif  // LOOM_LOGGING_INTERNAL_APPEND_FILE_H_
