#include "checkpoint/folder/manifest.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <optional>
#include <set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "base/status_macros.h"
#include "checkpoint/folder/internal/fs.h"
#include "checkpoint/folder/names.h"
#include "logging/crc32c.h"
#include "nlohmann/json.hpp"

namespace loom::checkpoint {
namespace {

namespace fs = std::filesystem;
using internal::ErrnoStatus;

constexpr absl::string_view kFormat = "loom-checkpoint-manifest";
constexpr int kVersion = 1;

absl::Status Walk(const fs::path& root, const std::string& relative_dir, Fsync fsync,
                  std::vector<ManifestEntry>* out) {
  const fs::path dir = relative_dir.empty() ? root : root / relative_dir;
  ASSIGN_OR_RETURN(std::vector<std::string> names, internal::ListDirectory(dir));
  for (const std::string& name : names) {
    const std::string relative =
        relative_dir.empty() ? name : absl::StrCat(relative_dir, "/", name);
    if (relative == kManifestFileName) continue;
    const fs::path path = root / relative;
    struct stat st;
    if (::lstat(path.c_str(), &st) != 0) return ErrnoStatus("cannot stat", path, errno);
    if (S_ISDIR(st.st_mode)) {
      RETURN_IF_ERROR(Walk(root, relative, fsync, out));
    } else if (S_ISREG(st.st_mode)) {
      ASSIGN_OR_RETURN(FileDigest digest, DigestFile(path, fsync));
      out->push_back(ManifestEntry{relative, digest.size, digest.crc32c});
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          "'", path.string(), "' is ",
          S_ISLNK(st.st_mode) ? "a symbolic link" : "not a regular file or directory",
          "; a checkpoint folder may hold only regular files and directories: copy the data "
          "into the folder instead"));
    }
  }
  if (fsync == Fsync::kFsync) RETURN_IF_ERROR(internal::FsyncPath(dir));
  return absl::OkStatus();
}

absl::Status Malformed(absl::string_view why) {
  return absl::DataLossError(absl::StrCat(kManifestFileName, " is malformed: ", why));
}

absl::Status ValidateEntryPath(absl::string_view path) {
  if (path.empty()) return Malformed("an entry has an empty path");
  if (path[0] == '/') return Malformed(absl::StrCat("entry '", path, "' is an absolute path"));
  for (absl::string_view part : absl::StrSplit(path, '/')) {
    if (part.empty() || part == "." || part == "..") {
      return Malformed(absl::StrCat("entry '", path, "' has an empty, '.' or '..' component"));
    }
  }
  if (path.find('\0') != absl::string_view::npos) {
    return Malformed(absl::StrCat("entry '", path, "' contains a NUL byte"));
  }
  if (path == kManifestFileName) return Malformed("it lists itself");
  return absl::OkStatus();
}

// Exactly 8 hex digits (either case).
std::optional<uint32_t> ParseCrc32c(absl::string_view hex) {
  if (hex.size() != 8) return std::nullopt;
  uint32_t value = 0;
  for (char c : hex) {
    int d;
    if (c >= '0' && c <= '9') {
      d = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      d = c - 'a' + 10;
    } else if (c >= 'A' && c <= 'F') {
      d = c - 'A' + 10;
    } else {
      return std::nullopt;
    }
    value = (value << 4) | static_cast<uint32_t>(d);
  }
  return value;
}

}  // namespace

uint64_t Manifest::total_bytes() const {
  uint64_t total = 0;
  for (const ManifestEntry& e : files) total += e.size;
  return total;
}

std::string FormatCrc32c(uint32_t crc) { return absl::StrFormat("%08x", crc); }

absl::StatusOr<FileDigest> DigestFile(const fs::path& path, Fsync fsync) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus("cannot open", path, errno);
  FileDigest digest;
  std::vector<char> buf(1 << 20);
  while (true) {
    ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      return ErrnoStatus("cannot read", path, err);
    }
    if (n == 0) break;
    digest.crc32c =
        logging::Crc32cExtend(digest.crc32c, absl::string_view(buf.data(), static_cast<size_t>(n)));
    digest.size += static_cast<uint64_t>(n);
  }
  if (fsync == Fsync::kFsync && ::fsync(fd) != 0) {
    int err = errno;
    ::close(fd);
    return ErrnoStatus("cannot fsync", path, err);
  }
  ::close(fd);
  return digest;
}

absl::StatusOr<Manifest> ComputeManifest(const fs::path& folder, Fsync fsync) {
  Manifest manifest;
  RETURN_IF_ERROR(Walk(folder, "", fsync, &manifest.files));
  std::sort(manifest.files.begin(), manifest.files.end(),
            [](const ManifestEntry& a, const ManifestEntry& b) { return a.path < b.path; });
  return manifest;
}

absl::StatusOr<std::string> SerializeManifest(const Manifest& manifest) {
  nlohmann::ordered_json files = nlohmann::ordered_json::array();
  for (const ManifestEntry& e : manifest.files) {
    nlohmann::ordered_json entry;
    entry["path"] = e.path;
    entry["size"] = e.size;
    entry["crc32c"] = FormatCrc32c(e.crc32c);
    files.push_back(std::move(entry));
  }
  nlohmann::ordered_json root;
  root["format"] = kFormat;
  root["version"] = kVersion;
  root["files"] = std::move(files);
  try {
    return root.dump(2) + "\n";
  } catch (const nlohmann::json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("cannot write ", kManifestFileName,
                                                   ": a file name is not valid UTF-8 (", e.what(),
                                                   "); name checkpoint files with UTF-8 names"));
  }
}

absl::StatusOr<Manifest> ParseManifest(absl::string_view json) {
  nlohmann::json root = nlohmann::json::parse(json.begin(), json.end(), nullptr,
                                              /*allow_exceptions=*/false);
  if (root.is_discarded()) return Malformed("not valid JSON (truncated or overwritten?)");
  if (!root.is_object()) return Malformed("not a JSON object");
  auto format = root.find("format");
  if (format == root.end() || !format->is_string() || format->get<std::string>() != kFormat) {
    return Malformed(absl::StrCat("\"format\" is not \"", kFormat, "\""));
  }
  auto version = root.find("version");
  if (version == root.end() || !version->is_number_integer()) {
    return Malformed("\"version\" is missing or not an integer");
  }
  if (version->get<int64_t>() != kVersion) {
    return Malformed(absl::StrCat("version ", version->get<int64_t>(),
                                  " is not supported (this loom reads version ", kVersion,
                                  "; a newer loom wrote it?)"));
  }
  auto files = root.find("files");
  if (files == root.end() || !files->is_array()) return Malformed("\"files\" is not a list");
  Manifest manifest;
  std::set<std::string> seen;
  for (const nlohmann::json& entry : *files) {
    if (!entry.is_object()) return Malformed("an entry of \"files\" is not an object");
    auto path = entry.find("path");
    auto size = entry.find("size");
    auto crc = entry.find("crc32c");
    if (path == entry.end() || !path->is_string()) return Malformed("an entry has no \"path\"");
    ManifestEntry e;
    e.path = path->get<std::string>();
    RETURN_IF_ERROR(ValidateEntryPath(e.path));
    if (size == entry.end() || !size->is_number_unsigned()) {
      return Malformed(absl::StrCat("entry '", e.path, "' has no non-negative integer \"size\""));
    }
    e.size = size->get<uint64_t>();
    std::optional<uint32_t> crc_value;
    if (crc != entry.end() && crc->is_string()) crc_value = ParseCrc32c(crc->get<std::string>());
    if (!crc_value.has_value()) {
      return Malformed(absl::StrCat("entry '", e.path, "' has no 8-hex-digit \"crc32c\""));
    }
    e.crc32c = *crc_value;
    if (!seen.insert(e.path).second) {
      return Malformed(absl::StrCat("entry '", e.path, "' appears twice"));
    }
    manifest.files.push_back(std::move(e));
  }
  return manifest;
}

}  // namespace loom::checkpoint
