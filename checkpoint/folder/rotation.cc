#include "checkpoint/folder/rotation.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <system_error>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "checkpoint/folder/internal/fs.h"
#include "checkpoint/folder/internal/live_folders.h"
#include "checkpoint/folder/names.h"

namespace loom::checkpoint {
namespace {

namespace fs = std::filesystem;

// Absolute and lexically normal, without a trailing separator.
fs::path Normalize(const fs::path& p) {
  std::error_code ec;
  fs::path abs = fs::absolute(p, ec);
  if (ec) abs = p;
  abs = abs.lexically_normal();
  if (!abs.has_filename() && abs.has_relative_path()) abs = abs.parent_path();
  return abs;
}

bool Exists(const fs::path& p) {
  struct stat st;
  return ::lstat(p.c_str(), &st) == 0;
}

}  // namespace

absl::StatusOr<std::vector<fs::path>> SortedCheckpoints(
    const fs::path& output_dir, const std::optional<std::string>& best_model_checkpoint) {
  absl::StatusOr<std::vector<std::string>> names = internal::ListDirectory(output_dir);
  if (!names.ok() && absl::IsNotFound(names.status())) {
    return absl::NotFoundError(
        absl::StrCat("output_dir '", output_dir.string(), "' does not exist; check --output_dir"));
  }
  RETURN_IF_ERROR(names.status());
  std::vector<std::pair<int64_t, std::string>> ordering;  // (step, name)
  for (const std::string& name : *names) {
    std::optional<int64_t> step = ParseSortedCheckpointStep(name);
    if (!step.has_value()) continue;
    struct stat st;  // os.path.isdir follows symlinks
    if (::stat((output_dir / name).c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) continue;
    ordering.emplace_back(*step, name);
  }
  // HF sorts (step, str(path)) tuples; all paths share the output_dir prefix, so comparing
  // names is the same.
  std::sort(ordering.begin(), ordering.end());
  std::vector<fs::path> sorted;
  sorted.reserve(ordering.size());
  for (const auto& [step, name] : ordering) sorted.push_back(output_dir / name);

  if (best_model_checkpoint.has_value()) {
    const fs::path best = Normalize(*best_model_checkpoint);
    auto it = std::find_if(sorted.begin(), sorted.end(),
                           [&](const fs::path& p) { return Normalize(p) == best; });
    if (it != sorted.end()) {
      const int64_t n = static_cast<int64_t>(sorted.size());
      for (int64_t i = it - sorted.begin(); i < n - 2; ++i) std::swap(sorted[i], sorted[i + 1]);
    }
  }
  return sorted;
}

absl::StatusOr<RotationResult> RotateCheckpoints(const fs::path& output_dir,
                                                 const RotationOptions& options) {
  RotationResult result;
  if (!options.save_total_limit.has_value() || *options.save_total_limit <= 0) return result;
  ASSIGN_OR_RETURN(std::vector<fs::path> sorted,
                   SortedCheckpoints(output_dir, options.best_model_checkpoint));
  int64_t limit = *options.save_total_limit;
  const int64_t n = static_cast<int64_t>(sorted.size());
  if (n <= limit) return result;
  // With save_total_limit=1 and load_best_model_at_end, HF keeps the last checkpoint too so
  // that training can resume.
  if (options.best_model_checkpoint.has_value() && limit == 1 &&
      Normalize(sorted.back()) != Normalize(*options.best_model_checkpoint)) {
    limit = 2;
  }
  const int64_t to_delete = std::max<int64_t>(0, n - limit);
  for (int64_t i = 0; i < to_delete; ++i) {
    absl::Status s = DeleteCheckpointFolder(sorted[i]);
    if (s.ok() || !Exists(sorted[i])) result.deleted.push_back(sorted[i]);
    if (!s.ok()) result.failures.push_back(std::string(s.message()));
  }
  return result;
}

absl::Status DeleteCheckpointFolder(const fs::path& folder) {
  fs::path path = folder;
  if (!path.has_filename() && path.has_relative_path()) path = path.parent_path();
  const std::string name = path.filename().string();
  fs::path parent = path.parent_path();
  if (parent.empty()) parent = ".";
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) {
    return internal::ErrnoStatus("cannot delete checkpoint folder", path, errno);
  }
  if (S_ISLNK(st.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat("'", path.string(),
                     "': is a symbolic link; not deleted (HF's shutil.rmtree refuses symlinks "
                     "too); remove the link by hand if it should go"));
  }
  if (!S_ISDIR(st.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat("'", path.string(), "': is not a directory; not deleted"));
  }
  const std::string hidden = HiddenFolderName(HiddenKind::kDeleting, name);
  internal::LiveFolder live(hidden);
  RETURN_IF_ERROR(internal::RenameNoReplace(path, parent / hidden));
  RETURN_IF_ERROR(internal::FsyncPath(parent));
  absl::Status removed = internal::RemoveTree(parent / hidden);
  if (!removed.ok()) {
    return base::Annotate(
        removed, absl::StrCat("checkpoint folder '", path.string(), "' was moved to '", hidden,
                              "' but not fully removed (RemoveStaleStaging removes it later)"));
  }
  return absl::OkStatus();
}

}  // namespace loom::checkpoint
