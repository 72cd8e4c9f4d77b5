#include "checkpoint/folder/verify.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/file_util.h"
#include "checkpoint/folder/manifest.h"
#include "checkpoint/folder/names.h"

namespace loom::checkpoint {
namespace {

namespace fs = std::filesystem;

FolderCheck Problem(absl::StatusCode code, std::string reason) {
  FolderCheck check;
  check.code = code;
  check.reason = std::move(reason);
  return check;
}

absl::StatusCode CodeForErrno(int err) {
  switch (err) {
    case ENOENT:
      return absl::StatusCode::kNotFound;
    case EACCES:
    case EPERM:
      return absl::StatusCode::kPermissionDenied;
    default:
      return absl::StatusCode::kInternal;
  }
}

std::string FixHint(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kNotFound:
      return "check the path (resume_from_checkpoint / output_dir)";
    case absl::StatusCode::kFailedPrecondition:
      return "the save that wrote it did not finish (or a tool that records no "
             "loom_manifest.json wrote it): resume from another checkpoint, or accept "
             "unverified folders (allow_missing_manifest) if HF's Python Trainer wrote it";
    case absl::StatusCode::kDataLoss:
      return "the folder changed after it was saved (disk corruption, an interrupted copy, or "
             "an edit): restore it from a copy or resume from another checkpoint";
    default:
      return "check the folder's permissions and the disk";
  }
}

}  // namespace

FolderCheck CheckFolder(const fs::path& folder, const VerifyOptions& options) {
  struct stat st;
  if (::stat(folder.c_str(), &st) != 0) {
    if (errno == ENOENT) return Problem(absl::StatusCode::kNotFound, "folder does not exist");
    return Problem(CodeForErrno(errno), absl::StrCat("cannot stat: ", std::strerror(errno)));
  }
  if (!S_ISDIR(st.st_mode))
    return Problem(absl::StatusCode::kFailedPrecondition, "not a directory");

  const fs::path manifest_path = folder / std::string(kManifestFileName);
  struct stat mst;
  if (::lstat(manifest_path.c_str(), &mst) != 0 && errno == ENOENT) {
    if (options.allow_missing_manifest) return FolderCheck{};
    return Problem(absl::StatusCode::kFailedPrecondition,
                   absl::StrCat("incomplete (no ", kManifestFileName, ")"));
  }
  absl::StatusOr<std::string> json = base::ReadFile(manifest_path.string());
  if (!json.ok()) return Problem(json.status().code(), std::string(json.status().message()));
  absl::StatusOr<Manifest> manifest = ParseManifest(*json);
  if (!manifest.ok()) {
    return Problem(manifest.status().code(), std::string(manifest.status().message()));
  }

  FolderCheck check;
  check.summary.has_manifest = true;
  std::vector<std::string> problems;
  absl::StatusCode first_code = absl::StatusCode::kOk;
  auto add = [&](absl::StatusCode code, std::string text) {
    if (first_code == absl::StatusCode::kOk) first_code = code;
    problems.push_back(std::move(text));
  };
  for (const ManifestEntry& entry : manifest->files) {
    const fs::path path = folder / entry.path;
    struct stat fst;
    if (::lstat(path.c_str(), &fst) != 0) {
      if (errno == ENOENT || errno == ENOTDIR) {
        add(absl::StatusCode::kDataLoss, absl::StrCat(entry.path, ": missing"));
      } else {
        add(CodeForErrno(errno), absl::StrCat(entry.path, ": cannot stat: ", std::strerror(errno)));
      }
      continue;
    }
    if (!S_ISREG(fst.st_mode)) {
      add(absl::StatusCode::kDataLoss, absl::StrCat(entry.path, ": not a regular file"));
      continue;
    }
    if (static_cast<uint64_t>(fst.st_size) != entry.size) {
      add(absl::StatusCode::kDataLoss, absl::StrCat(entry.path, ": size mismatch (manifest ",
                                                    entry.size, " bytes, file ", fst.st_size, ")"));
      continue;
    }
    absl::StatusOr<FileDigest> digest = DigestFile(path, Fsync::kNo);
    if (!digest.ok()) {
      add(digest.status().code(), absl::StrCat(entry.path, ": ", digest.status().message()));
      continue;
    }
    if (digest->size != entry.size) {  // changed while we read it
      add(absl::StatusCode::kDataLoss,
          absl::StrCat(entry.path, ": size mismatch (manifest ", entry.size, " bytes, file ",
                       digest->size, ")"));
    } else if (digest->crc32c != entry.crc32c) {
      add(absl::StatusCode::kDataLoss,
          absl::StrCat(entry.path, ": CRC32C mismatch (manifest ", FormatCrc32c(entry.crc32c),
                       ", file ", FormatCrc32c(digest->crc32c), ")"));
    } else {
      ++check.summary.files;
      check.summary.bytes += entry.size;
    }
  }
  if (!problems.empty()) return Problem(first_code, absl::StrJoin(problems, "; "));
  return check;
}

absl::StatusOr<VerifiedFolder> VerifyFolder(const fs::path& folder, const VerifyOptions& options) {
  FolderCheck check = CheckFolder(folder, options);
  if (check.code == absl::StatusCode::kOk) return check.summary;
  return absl::Status(
      check.code, absl::StrCat("checkpoint folder '", folder.string(),
                               "' failed verification: ", check.reason, "; ", FixHint(check.code)));
}

}  // namespace loom::checkpoint
