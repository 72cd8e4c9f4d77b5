#include "checkpoint/folder/internal/fs.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <random>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/file_util.h"

namespace loom::checkpoint::internal {

namespace fs = std::filesystem;

absl::Status ErrnoStatus(absl::string_view what, const fs::path& path, int err) {
  return base::ErrnoToStatus(what, path.string(), err);
}

absl::StatusOr<std::vector<std::string>> ListDirectory(const fs::path& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return ErrnoStatus("cannot list directory", dir, errno);
  std::vector<std::string> names;
  while (true) {
    errno = 0;
    dirent* e = ::readdir(d);
    if (e == nullptr) {
      int err = errno;
      ::closedir(d);
      if (err != 0) return ErrnoStatus("cannot list directory", dir, err);
      break;
    }
    std::string name = e->d_name;
    if (name != "." && name != "..") names.push_back(std::move(name));
  }
  std::sort(names.begin(), names.end());
  return names;
}

absl::Status RemoveTree(const fs::path& path) {
  std::error_code ec;
  fs::remove_all(path, ec);
  if (ec) return ErrnoStatus("cannot remove", path, ec.value());
  return absl::OkStatus();
}

absl::Status FsyncPath(const fs::path& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus("cannot open (to fsync)", path, errno);
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  if (rc != 0) return ErrnoStatus("cannot fsync", path, err);
  return absl::OkStatus();
}

absl::Status RenameNoReplace(const fs::path& from, const fs::path& to) {
  if (::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE) == 0) {
    return absl::OkStatus();
  }
  int err = errno;
  if (err == EINVAL || err == ENOSYS) {
    // The filesystem has no RENAME_NOREPLACE. Check, then rename: rename(2) still refuses a
    // non-empty directory at `to`, and callers only create `to` through this package.
    struct stat st;
    if (::lstat(to.c_str(), &st) == 0) {
      return ErrnoStatus(absl::StrCat("cannot rename '", from.string(), "' to"), to, EEXIST);
    }
    if (::rename(from.c_str(), to.c_str()) == 0) return absl::OkStatus();
    err = errno;
  }
  if (err == ENOTEMPTY) err = EEXIST;
  return ErrnoStatus(absl::StrCat("cannot rename '", from.string(), "' to"), to, err);
}

absl::Status RenameExchange(const fs::path& a, const fs::path& b) {
  if (::renameat2(AT_FDCWD, a.c_str(), AT_FDCWD, b.c_str(), RENAME_EXCHANGE) == 0) {
    return absl::OkStatus();
  }
  int err = errno;
  if (err == EINVAL || err == ENOSYS) {
    return absl::UnimplementedError(
        absl::StrCat("the filesystem holding '", b.string(),
                     "' cannot exchange two directories atomically (renameat2 "
                     "RENAME_EXCHANGE: ",
                     std::strerror(err), ")"));
  }
  return ErrnoStatus(absl::StrCat("cannot exchange '", a.string(), "' with"), b, err);
}

absl::Status Rename(const fs::path& from, const fs::path& to) {
  if (::rename(from.c_str(), to.c_str()) == 0) return absl::OkStatus();
  return ErrnoStatus(absl::StrCat("cannot rename '", from.string(), "' to"), to, errno);
}

absl::Status MakeDirsDurably(const fs::path& dir) {
  std::vector<fs::path> missing;
  fs::path p = dir.lexically_normal();
  if (!p.empty() && !p.has_filename()) p = p.parent_path();  // "a/b/" -> "a/b"
  while (!p.empty()) {
    struct stat st;
    if (::stat(p.c_str(), &st) == 0) {
      if (!S_ISDIR(st.st_mode)) {
        return absl::FailedPreconditionError(absl::StrCat(
            "'", p.string(), "' exists and is not a directory; remove it or choose another path"));
      }
      break;
    }
    if (errno != ENOENT && errno != ENOTDIR) return ErrnoStatus("cannot stat", p, errno);
    missing.push_back(p);
    fs::path parent = p.parent_path();
    if (parent == p) break;
    p = parent;
  }
  for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
    if (::mkdir(it->c_str(), 0755) != 0 && errno != EEXIST) {
      return ErrnoStatus("cannot create directory", *it, errno);
    }
    fs::path parent = it->parent_path();
    if (parent.empty()) parent = ".";
    if (absl::Status s = FsyncPath(parent); !s.ok()) return s;
  }
  return absl::OkStatus();
}

std::string RandomHex16() {
  std::random_device rd;
  uint64_t v = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  return absl::StrFormat("%016x", v);
}

}  // namespace loom::checkpoint::internal
