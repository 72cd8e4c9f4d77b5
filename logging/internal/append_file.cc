#include "logging/internal/append_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/file_util.h"
#include "base/status_macros.h"

namespace loom::logging::internal {

absl::StatusOr<std::unique_ptr<AppendFile>> AppendFile::Open(const std::string& path, int flags) {
  RETURN_IF_ERROR(base::MakeDirs(base::Dirname(path)));
  int fd;
  do {
    fd = ::open(path.c_str(), flags | O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return absl::ErrnoToStatus(errno, absl::StrCat("cannot open '", path, "'"));
  return std::unique_ptr<AppendFile>(new AppendFile(path, fd));
}

absl::StatusOr<std::unique_ptr<AppendFile>> AppendFile::OpenForAppend(const std::string& path) {
  return Open(path, O_APPEND);
}

absl::StatusOr<std::unique_ptr<AppendFile>> AppendFile::CreateNew(const std::string& path) {
  return Open(path, O_EXCL);
}

AppendFile::~AppendFile() { ::close(fd_); }

absl::Status AppendFile::Append(absl::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd_, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return absl::ErrnoToStatus(errno, absl::StrCat("cannot write '", path_, "'"));
    }
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return absl::OkStatus();
}

absl::Status AppendFile::Flush() {
  if (::fsync(fd_) != 0) {
    return absl::ErrnoToStatus(errno, absl::StrCat("cannot fsync '", path_, "'"));
  }
  return absl::OkStatus();
}

}  // namespace loom::logging::internal
