#include "checkpoint/folder/discovery.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "checkpoint/folder/internal/fs.h"
#include "checkpoint/folder/internal/live_folders.h"
#include "checkpoint/folder/names.h"

namespace loom::checkpoint {
namespace {

namespace fs = std::filesystem;

struct Candidate {
  int64_t step;
  std::string name;
};

absl::StatusOr<std::vector<std::string>> ListOutputDir(const fs::path& output_dir) {
  absl::StatusOr<std::vector<std::string>> names = internal::ListDirectory(output_dir);
  if (!names.ok() && absl::IsNotFound(names.status())) {
    return absl::NotFoundError(
        absl::StrCat("output_dir '", output_dir.string(), "' does not exist; check --output_dir"));
  }
  return names;
}

}  // namespace

absl::StatusOr<LastCheckpoint> FindLastCheckpoint(const fs::path& output_dir,
                                                  const DiscoveryOptions& options) {
  ASSIGN_OR_RETURN(std::vector<std::string> names, ListOutputDir(output_dir));
  LastCheckpoint last;
  std::vector<Candidate> candidates;
  for (const std::string& name : names) {
    if (ParseHiddenFolderName(name).has_value()) {
      last.hidden.push_back(name);
      continue;
    }
    std::optional<int64_t> step = ParseCheckpointFolderName(name);
    if (!step.has_value()) continue;
    struct stat st;  // os.path.isdir follows symlinks
    if (::stat((output_dir / name).c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) continue;
    candidates.push_back(Candidate{*step, name});
  }
  std::sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
    if (a.step != b.step) return a.step > b.step;
    return a.name < b.name;
  });
  VerifyOptions verify;
  verify.allow_missing_manifest = options.allow_missing_manifest;
  for (const Candidate& c : candidates) {
    FolderCheck check = CheckFolder(output_dir / c.name, verify);
    if (check.code == absl::StatusCode::kOk) {
      last.path = output_dir / c.name;
      last.step = c.step;
      last.verified = check.summary;
      break;
    }
    last.skipped.push_back(SkippedCheckpoint{c.name, check.code, std::move(check.reason)});
  }
  return last;
}

absl::StatusOr<StaleCleanup> RemoveStaleStaging(const fs::path& output_dir) {
  ASSIGN_OR_RETURN(std::vector<std::string> names, ListOutputDir(output_dir));
  StaleCleanup cleanup;
  bool changed = false;
  for (const std::string& entry : names) {
    std::optional<HiddenFolder> hidden = ParseHiddenFolderName(entry);
    if (!hidden.has_value()) continue;
    if (internal::IsLiveFolder(entry)) {
      cleanup.skipped_live.push_back(entry);
      continue;
    }
    const fs::path path = output_dir / entry;
    const std::string context = absl::StrCat("cannot clean up leftover folder '", path.string(),
                                             "' (remove it by hand once no save is running)");
    if (hidden->kind == HiddenKind::kReplaced) {
      const fs::path target = output_dir / hidden->name;
      struct stat st;
      const bool target_missing = ::lstat(target.c_str(), &st) != 0 && errno == ENOENT;
      VerifyOptions accept_unmanifested;
      accept_unmanifested.allow_missing_manifest = true;
      if (target_missing && CheckFolder(path, accept_unmanifested).code == absl::StatusCode::kOk) {
        RETURN_IF_ERROR_CTX(internal::RenameNoReplace(path, target), context);
        cleanup.restored.push_back(RestoredFolder{entry, hidden->name});
        changed = true;
        continue;
      }
      // Never leave a partial .loom-replaced-* behind: rename it to a deleting name first.
      const std::string deleting_name = HiddenFolderName(HiddenKind::kDeleting, hidden->name);
      internal::LiveFolder live(deleting_name);
      RETURN_IF_ERROR_CTX(internal::Rename(path, output_dir / deleting_name), context);
      RETURN_IF_ERROR_CTX(internal::RemoveTree(output_dir / deleting_name), context);
    } else {
      RETURN_IF_ERROR_CTX(internal::RemoveTree(path), context);
    }
    cleanup.removed.push_back(entry);
    changed = true;
  }
  if (changed) RETURN_IF_ERROR(internal::FsyncPath(output_dir));
  return cleanup;
}

}  // namespace loom::checkpoint
