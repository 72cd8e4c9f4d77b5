#include "checkpoint/atomic_file_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/file_util.h"

namespace loom::checkpoint {
namespace {

absl::Status ErrnoError(absl::string_view what, const std::string& path, int err) {
  return base::ErrnoToStatus(what, path, err);
}

}  // namespace

absl::StatusOr<AtomicFileWriter> AtomicFileWriter::Create(const std::string& path, int mode) {
  std::random_device rd;
  std::string temp = absl::StrCat(path, ".tmp.", ::getpid(), ".", rd() & 0xffffff);
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (fd < 0) return ErrnoError("cannot create a temporary file for", path, errno);
  return AtomicFileWriter(path, std::move(temp), fd);
}

AtomicFileWriter::AtomicFileWriter(AtomicFileWriter&& other) noexcept
    : path_(std::move(other.path_)),
      temp_path_(std::move(other.temp_path_)),
      fd_(std::exchange(other.fd_, -1)),
      bytes_written_(other.bytes_written_) {}

AtomicFileWriter& AtomicFileWriter::operator=(AtomicFileWriter&& other) noexcept {
  if (this != &other) {
    Abandon();
    path_ = std::move(other.path_);
    temp_path_ = std::move(other.temp_path_);
    fd_ = std::exchange(other.fd_, -1);
    bytes_written_ = other.bytes_written_;
  }
  return *this;
}

AtomicFileWriter::~AtomicFileWriter() { Abandon(); }

void AtomicFileWriter::Abandon() {
  if (fd_ < 0) return;
  ::close(fd_);
  ::unlink(temp_path_.c_str());
  fd_ = -1;
}

absl::Status AtomicFileWriter::Append(absl::string_view data) {
  if (fd_ < 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("write to '", path_, "' after it was committed or abandoned"));
  }
  while (!data.empty()) {
    // Linux writes at most ~2 GiB per call.
    const size_t chunk = std::min<size_t>(data.size(), size_t{1} << 30);
    const ssize_t n = ::write(fd_, data.data(), chunk);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError("cannot write", temp_path_, errno);
    }
    data.remove_prefix(static_cast<size_t>(n));
    bytes_written_ += static_cast<uint64_t>(n);
  }
  return absl::OkStatus();
}

absl::Status AtomicFileWriter::WriteAt(uint64_t offset, absl::string_view data) {
  if (fd_ < 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("write to '", path_, "' after it was committed or abandoned"));
  }
  while (!data.empty()) {
    const size_t chunk = std::min<size_t>(data.size(), size_t{1} << 30);
    const ssize_t n = ::pwrite(fd_, data.data(), chunk, static_cast<off_t>(offset));
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError("cannot write", temp_path_, errno);
    }
    data.remove_prefix(static_cast<size_t>(n));
    offset += static_cast<uint64_t>(n);
  }
  return absl::OkStatus();
}

absl::Status AtomicFileWriter::Commit() {
  if (fd_ < 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("commit of '", path_, "' after it was committed or abandoned"));
  }
  absl::Status status;
  if (::fsync(fd_) != 0) status = ErrnoError("cannot fsync", temp_path_, errno);
  const int fd = std::exchange(fd_, -1);
  if (::close(fd) != 0 && status.ok()) status = ErrnoError("cannot close", temp_path_, errno);
  if (status.ok() && ::rename(temp_path_.c_str(), path_.c_str()) != 0) {
    status = ErrnoError("cannot rename the temporary file onto", path_, errno);
  }
  if (!status.ok()) {
    ::unlink(temp_path_.c_str());
    return status;
  }
  return base::FsyncDirectory(base::Dirname(path_));
}

}  // namespace loom::checkpoint
