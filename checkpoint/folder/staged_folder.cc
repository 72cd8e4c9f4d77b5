#include "checkpoint/folder/staged_folder.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/status_macros.h"
#include "checkpoint/folder/internal/fs.h"
#include "checkpoint/folder/internal/live_folders.h"
#include "checkpoint/folder/names.h"

namespace loom::checkpoint {
namespace {

namespace fs = std::filesystem;
using internal::ErrnoStatus;

absl::Status ValidateRelativeName(absl::string_view relative_name) {
  auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot write '", relative_name, "' into a staged checkpoint folder: ", why));
  };
  if (relative_name.empty()) return bad("the name is empty");
  if (relative_name[0] == '/') return bad("use a path relative to the folder");
  if (relative_name.find('\0') != absl::string_view::npos) return bad("it contains a NUL byte");
  for (absl::string_view part : absl::StrSplit(relative_name, '/')) {
    if (part.empty() || part == "." || part == "..") {
      return bad("it has an empty, '.' or '..' component");
    }
  }
  if (relative_name == kManifestFileName) {
    return bad("the name is reserved for the manifest Commit() writes");
  }
  return absl::OkStatus();
}

absl::Status WriteWholeFile(const fs::path& path, absl::string_view bytes, bool fsync) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoStatus("cannot create", path, errno);
  while (!bytes.empty()) {
    ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      return ErrnoStatus("cannot write", path, err);
    }
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  if (fsync && ::fsync(fd) != 0) {
    int err = errno;
    ::close(fd);
    return ErrnoStatus("cannot fsync", path, err);
  }
  if (::close(fd) != 0) return ErrnoStatus("cannot close", path, errno);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<StagedFolder> StagedFolder::Begin(const fs::path& parent_dir, absl::string_view name,
                                                 StagedFolderOptions options) {
  RETURN_IF_ERROR(ValidateFolderName(name));
  if (parent_dir.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "no parent directory given for checkpoint folder '", name, "'; pass the output_dir"));
  }
  RETURN_IF_ERROR(internal::MakeDirsDurably(parent_dir));
  for (int attempt = 0;; ++attempt) {
    const std::string hidden = HiddenFolderName(HiddenKind::kStaging, name);
    const fs::path path = parent_dir / hidden;
    if (::mkdir(path.c_str(), 0755) == 0) {
      internal::RegisterLiveFolder(hidden);
      return StagedFolder(parent_dir, std::string(name), path, std::move(options));
    }
    if (errno != EEXIST || attempt == 8) {
      return ErrnoStatus(absl::StrCat("cannot create the staging directory for checkpoint folder '",
                                      name, "' (check that the output_dir is writable)"),
                         path, errno);
    }
  }
}

StagedFolder::StagedFolder(fs::path parent, std::string name, fs::path path,
                           StagedFolderOptions options)
    : parent_(std::move(parent)),
      name_(std::move(name)),
      path_(std::move(path)),
      final_path_(parent_ / name_),
      options_(std::move(options)) {}

StagedFolder::StagedFolder(StagedFolder&& other) noexcept
    : parent_(std::move(other.parent_)),
      name_(std::move(other.name_)),
      path_(std::exchange(other.path_, fs::path())),
      final_path_(std::move(other.final_path_)),
      options_(std::move(other.options_)),
      committed_(std::exchange(other.committed_, false)) {}

StagedFolder& StagedFolder::operator=(StagedFolder&& other) noexcept {
  if (this != &other) {
    if (!committed_ && !path_.empty()) (void)internal::RemoveTree(path_);
    Release();
    parent_ = std::move(other.parent_);
    name_ = std::move(other.name_);
    path_ = std::exchange(other.path_, fs::path());
    final_path_ = std::move(other.final_path_);
    options_ = std::move(other.options_);
    committed_ = std::exchange(other.committed_, false);
  }
  return *this;
}

StagedFolder::~StagedFolder() {
  if (!committed_ && !path_.empty()) (void)internal::RemoveTree(path_);
  Release();
}

void StagedFolder::Release() {
  if (!path_.empty()) internal::UnregisterLiveFolder(path_.filename().string());
}

void StagedFolder::Step(CommitStep step) const {
  if (options_.after_step) options_.after_step(step);
}

absl::Status StagedFolder::WriteFile(absl::string_view relative_name, absl::string_view bytes) {
  if (path_.empty() || committed_) {
    return absl::FailedPreconditionError(absl::StrCat(
        "cannot write '", relative_name, "' into checkpoint folder '", final_path_.string(),
        "': it was already committed (or moved from); begin a new StagedFolder"));
  }
  RETURN_IF_ERROR(ValidateRelativeName(relative_name));
  const fs::path path = path_ / std::string(relative_name);
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  if (ec) return ErrnoStatus("cannot create directory", path.parent_path(), ec.value());
  return WriteWholeFile(path, bytes, /*fsync=*/false);
}

absl::Status StagedFolder::Abort() {
  if (path_.empty() || committed_) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot abort checkpoint folder '", final_path_.string(),
                     "': it was already committed (or moved from)"));
  }
  absl::Status s = internal::RemoveTree(path_);
  Release();
  path_.clear();
  return s;
}

absl::StatusOr<CommitInfo> StagedFolder::Commit() {
  if (path_.empty() || committed_) {
    return absl::FailedPreconditionError(
        absl::StrCat("checkpoint folder '", final_path_.string(),
                     "' was already committed (or moved from); begin a new StagedFolder"));
  }
  const std::string context =
      absl::StrCat("cannot commit checkpoint folder '", final_path_.string(), "'");
  ASSIGN_OR_RETURN(Manifest manifest, ComputeManifest(path_, Fsync::kFsync), context);
  ASSIGN_OR_RETURN(std::string json, SerializeManifest(manifest), context);
  RETURN_IF_ERROR_CTX(WriteWholeFile(path_ / std::string(kManifestFileName), json,
                                     /*fsync=*/true),
                      context);
  RETURN_IF_ERROR_CTX(internal::FsyncPath(path_), context);
  Step(CommitStep::kManifestWritten);
  return SwitchIn(std::move(manifest));
}

absl::StatusOr<CommitInfo> StagedFolder::SwitchIn(Manifest manifest) {
  const std::string context =
      absl::StrCat("cannot commit checkpoint folder '", final_path_.string(), "'");
  CommitInfo info;
  info.path = final_path_;
  info.manifest = std::move(manifest);

  struct stat st;
  if (::lstat(final_path_.c_str(), &st) != 0) {
    if (errno != ENOENT)
      return ErrnoStatus(absl::StrCat(context, ": cannot stat"), final_path_, errno);
    absl::Status renamed = internal::RenameNoReplace(path_, final_path_);
    if (renamed.ok()) {
      committed_ = true;
      Step(CommitStep::kRenamed);
      RETURN_IF_ERROR_CTX(internal::FsyncPath(parent_),
                          absl::StrCat("checkpoint folder '", final_path_.string(),
                                       "' is in place but its rename may not be durable"));
      Step(CommitStep::kParentSynced);
      Release();
      return info;
    }
    if (!absl::IsAlreadyExists(renamed)) return base::Annotate(renamed, context);
    // Someone created `name` meanwhile: replace it like any existing folder.
    if (::lstat(final_path_.c_str(), &st) != 0) {
      return ErrnoStatus(absl::StrCat(context, ": cannot stat"), final_path_, errno);
    }
  }
  if (S_ISLNK(st.st_mode) || !S_ISDIR(st.st_mode)) {
    return absl::FailedPreconditionError(absl::StrCat(
        context, ": it exists and is ", S_ISLNK(st.st_mode) ? "a symbolic link" : "not a directory",
        ", which loom does not replace; remove it or save under another output_dir"));
  }
  info.replaced_existing = true;
  if (options_.replace == ReplaceMethod::kAtomicExchange) {
    absl::Status exchanged = internal::RenameExchange(path_, final_path_);
    if (exchanged.ok()) {
      // path_ now holds the old folder under its hidden staging name.
      committed_ = true;
      info.replace_method = ReplaceMethod::kAtomicExchange;
      Step(CommitStep::kRenamed);
      absl::Status synced = internal::FsyncPath(parent_);
      if (synced.ok()) Step(CommitStep::kParentSynced);
      if (internal::RemoveTree(path_).ok()) {
        Step(CommitStep::kOldRemoved);
      } else {
        info.leftover = path_.filename().string();
      }
      Release();
      RETURN_IF_ERROR_CTX(synced,
                          absl::StrCat("checkpoint folder '", final_path_.string(),
                                       "' is in place but the exchange may not be durable"));
      return info;
    }
    if (!absl::IsUnimplemented(exchanged)) return base::Annotate(exchanged, context);
  }
  return ReplaceByRenameAside(std::move(info));
}

absl::StatusOr<CommitInfo> StagedFolder::ReplaceByRenameAside(CommitInfo info) {
  const std::string context =
      absl::StrCat("cannot commit checkpoint folder '", final_path_.string(), "'");
  info.replace_method = ReplaceMethod::kRenameAside;
  const std::string aside_name = HiddenFolderName(HiddenKind::kReplaced, name_);
  const fs::path aside = parent_ / aside_name;
  internal::LiveFolder live_aside(aside_name);
  RETURN_IF_ERROR_CTX(internal::RenameNoReplace(final_path_, aside), context);
  if (absl::Status s = internal::FsyncPath(parent_); !s.ok()) {
    (void)internal::Rename(aside, final_path_);
    return base::Annotate(s, context);
  }
  Step(CommitStep::kOldMovedAside);
  if (absl::Status s = internal::RenameNoReplace(path_, final_path_); !s.ok()) {
    absl::Status restored = internal::Rename(aside, final_path_);
    if (!restored.ok()) {
      return base::Annotate(
          s, absl::StrCat(context, " (and the old folder could not be moved back from '",
                          aside.string(), "': ", restored.message(),
                          "; RemoveStaleStaging restores it)"));
    }
    return base::Annotate(s, context);
  }
  committed_ = true;
  Step(CommitStep::kRenamed);
  absl::Status synced = internal::FsyncPath(parent_);
  if (synced.ok()) Step(CommitStep::kParentSynced);
  // Rename to a "deleting" name first, so a .loom-replaced-* folder is never partial.
  const std::string deleting_name = HiddenFolderName(HiddenKind::kDeleting, name_);
  const fs::path deleting = parent_ / deleting_name;
  internal::LiveFolder live_deleting(deleting_name);
  if (internal::Rename(aside, deleting).ok() && internal::RemoveTree(deleting).ok()) {
    Step(CommitStep::kOldRemoved);
  } else {
    info.leftover = fs::exists(aside) ? aside_name : deleting_name;
  }
  Release();
  RETURN_IF_ERROR_CTX(synced, absl::StrCat("checkpoint folder '", final_path_.string(),
                                           "' is in place but its rename may not be durable"));
  return info;
}

}  // namespace loom::checkpoint
