// StagedFolder: writes a checkpoint folder (e.g. output_dir/checkpoint-40) so that it becomes
// visible under its name only when it is complete, also across crashes and power loss.
//
// Contract:
//   Begin(parent_dir, name) creates parent_dir if needed (fsyncing what it creates) and a
//     hidden directory parent_dir/.loom-staging-<name>.<pid>.<16 hex> (names.h). Its name
//     starts with '.', so it never matches HF's checkpoint-<N> patterns: HF tools,
//     get_last_checkpoint, FindLastCheckpoint and rotation all ignore it. `name` must be a
//     single, non-hidden path component (ValidateFolderName).
//   path() is that directory: callers write their files there, directly (any writer; close
//     the files before Commit) or through WriteFile(relative_name, bytes).
//   Commit() (1) walks path() and fsyncs every regular file and directory while computing each
//     file's size and CRC32C; (2) writes loom_manifest.json (manifest.h) LAST and fsyncs it and
//     path(); (3) moves path() to parent_dir/name (below); (4) fsyncs parent_dir. So a folder
//     under `name` that holds a manifest holds everything the manifest lists.
//   An uncommitted StagedFolder's destructor removes its directory (errors ignored; Abort()
//     does the same and reports them). A failed Commit leaves the object uncommitted (the
//     destructor cleans up), except when only the final parent fsync failed: then the new
//     folder is already in place, committed() is true and the error says so.
//   The old folder of a replacement is removed after the switch; if that fails, Commit still
//     succeeds and CommitInfo::leftover names the hidden folder (RemoveStaleStaging removes it).
//   Several StagedFolders may be open at once (distinct names or not); RemoveStaleStaging in the
//     same process never touches a live one. Not thread-safe per object.
//
// loom_manifest.json is loom's addition to the HF layout: HF's Python Trainer and other HF
// tools ignore files they do not know, and folders written by them have no manifest (see
// VerifyOptions::allow_missing_manifest). The name "loom_manifest.json" is reserved.
//
// Replacing an existing parent_dir/name (HF saves checkpoint-N again when the same step is
// saved twice) — what a crash leaves at each point, and what discovery sees:
//   kAtomicExchange (default): renameat2(RENAME_EXCHANGE) swaps the staging directory and the
//     old folder in one atomic step, so `name` always holds a complete folder, old or new.
//       crash before the exchange: `name` = old (complete); .loom-staging-* = new, hidden.
//       crash after the exchange:  `name` = new (complete); .loom-staging-* = old, hidden.
//     RemoveStaleStaging deletes the hidden one in both cases. Where the filesystem has no
//     RENAME_EXCHANGE (Unimplemented from renameat2: e.g. some network filesystems), Commit
//     falls back to kRenameAside.
//   kRenameAside: rename old -> .loom-replaced-<name>.*, fsync parent, rename staging ->
//     `name`, fsync parent, rename the old one to .loom-deleting-<name>.* and remove it (so a
//     .loom-replaced-* folder is never partly deleted). Between the two renames `name` is
//     absent:
//       crash in that window: `name` missing; .loom-replaced-* = old (complete);
//         .loom-staging-* = new (complete, hidden). FindLastCheckpoint alone would not see
//         step N (it reports the hidden folders in LastCheckpoint::hidden), so resume must run
//         RemoveStaleStaging first: it renames .loom-replaced-* back to `name` (the old,
//         complete folder; the new one, never acknowledged by Commit, is deleted).
//       crash after the second rename: `name` = new; .loom-replaced-* is deleted by
//         RemoveStaleStaging because `name` exists.
//   A new name (nothing at parent_dir/name): one rename(RENAME_NOREPLACE); `name` is either
//     absent or complete.
// Several ranks: the path is per process (pid + random); a Checkpointer in which other ranks
// write shards into the same folder must share path() with them (e.g. broadcast it) and commit
// on one rank after all have closed their files.
// Power loss: files, manifest and directories are fsynced before any rename and parent_dir
// after it, so whichever state the rename reached on disk, the folder under `name` is
// complete. Removing an old folder happens after the switch and only ever touches hidden names.
//
// Example:
//   ASSIGN_OR_RETURN(StagedFolder staged,
//                    StagedFolder::Begin(args.output_dir, CheckpointFolderName(step)));
//   RETURN_IF_ERROR(SaveSafetensors(staged.path() / "model.safetensors", weights));
//   RETURN_IF_ERROR(staged.WriteFile("trainer_state.json", state_json));
//   ASSIGN_OR_RETURN(CommitInfo info, staged.Commit());   // info.path: .../checkpoint-40
#ifndef LOOM_CHECKPOINT_FOLDER_STAGED_FOLDER_H_
#define LOOM_CHECKPOINT_FOLDER_STAGED_FOLDER_H_

#include <filesystem>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "checkpoint/folder/manifest.h"

namespace loom::checkpoint {

// How Commit() replaces an existing folder of the same name (see the header comment).
enum class ReplaceMethod { kAtomicExchange, kRenameAside };

// The points of Commit() after which a crash leaves a distinct state on disk.
enum class CommitStep {
  kManifestWritten,  // files, manifest and directories fsynced; nothing renamed yet
  kOldMovedAside,    // kRenameAside only: old folder at .loom-replaced-*, `name` absent
  kRenamed,          // the new folder is at `name` (exchange: the old one at the staging name)
  kParentSynced,     // parent_dir fsynced: the switch is durable
  kOldRemoved,       // replacement only: the old folder is gone
};

struct StagedFolderOptions {
  ReplaceMethod replace = ReplaceMethod::kAtomicExchange;
  // Called after each step that happened, in order (tests use it to crash at each point).
  std::function<void(CommitStep)> after_step;
};

struct CommitInfo {
  std::filesystem::path path;  // parent_dir/name
  Manifest manifest;           // what loom_manifest.json records
  bool replaced_existing = false;
  ReplaceMethod replace_method = ReplaceMethod::kAtomicExchange;  // used, when replacing
  // A hidden folder holding the replaced folder that could not be removed (empty when none);
  // the commit still succeeded, and RemoveStaleStaging removes it later.
  std::string leftover;
};

class StagedFolder {
 public:
  static absl::StatusOr<StagedFolder> Begin(const std::filesystem::path& parent_dir,
                                            absl::string_view name,
                                            StagedFolderOptions options = {});

  StagedFolder(StagedFolder&& other) noexcept;
  StagedFolder& operator=(StagedFolder&& other) noexcept;
  StagedFolder(const StagedFolder&) = delete;
  StagedFolder& operator=(const StagedFolder&) = delete;
  ~StagedFolder();

  // The hidden staging directory to write into (empty after a move).
  const std::filesystem::path& path() const { return path_; }
  // parent_dir/name: where Commit() puts it.
  const std::filesystem::path& final_path() const { return final_path_; }
  bool committed() const { return committed_; }

  // Writes `bytes` to path()/relative_name, creating sub-directories; replaces an existing
  // file. `relative_name` must be relative without "." / ".." components and must not be
  // loom_manifest.json. Not fsynced here: Commit() fsyncs everything.
  absl::Status WriteFile(absl::string_view relative_name, absl::string_view bytes);

  // See the header comment. FailedPrecondition when already committed or moved from.
  absl::StatusOr<CommitInfo> Commit();

  // Removes the staging directory now (the destructor does it silently). FailedPrecondition
  // when already committed.
  absl::Status Abort();

 private:
  StagedFolder(std::filesystem::path parent, std::string name, std::filesystem::path path,
               StagedFolderOptions options);
  void Step(CommitStep step) const;
  absl::StatusOr<CommitInfo> SwitchIn(Manifest manifest);
  absl::StatusOr<CommitInfo> ReplaceByRenameAside(CommitInfo info);
  void Release();

  std::filesystem::path parent_;
  std::string name_;
  std::filesystem::path path_;
  std::filesystem::path final_path_;
  StagedFolderOptions options_;
  bool committed_ = false;
};

}  // namespace loom::checkpoint

#endif  // LOOM_CHECKPOINT_FOLDER_STAGED_FOLDER_H_
