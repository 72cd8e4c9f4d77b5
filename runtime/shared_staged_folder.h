// SharedStagedFolder: a checkpoint folder that every rank of a run writes into and that appears
// atomically (checkpoint/folder's StagedFolder: staged, fsynced, renamed) only when every rank
// wrote its files — the one multi-rank staging both front ends save through (the Trainer's
// checkpoint-<step>/, the Accelerator's SaveState folder).
//
// Contract (collectives: every rank calls Begin and Commit, in the same order):
//   - Begin(parallel, args, parent, name): the saving rank(s) (parallel.ShouldSave(args): world
//     rank 0, or each node's local rank 0 with save_on_each_node) stage parent/name (creating
//     parent when missing); every rank learns its saver's staging path (path()). Any rank's
//     failure is every rank's error, prefixed with `what`.
//   - Commit(written, after_commit): every rank passes the outcome of writing its files; when
//     all succeeded the saver commits the folder and then runs after_commit (e.g. push, rotate;
//     may be null). Every rank returns the first failure of any rank (prefixed with `what`):
//     nobody goes on, or reads the folder, before it is committed. A folder not committed is left
//     staged for checkpoint/folder's RemoveStaleStaging to clean up.
//
// Example:
//   ASSIGN_OR_RETURN(SharedStagedFolder folder,
//                    SharedStagedFolder::Begin(parallel, args, out_dir, "checkpoint-10", what));
//   absl::Status written = WriteMyFiles(folder.path());
//   RETURN_IF_ERROR(folder.Commit(written, /*after_commit=*/nullptr));
#ifndef LOOM_RUNTIME_SHARED_STAGED_FOLDER_H_
#define LOOM_RUNTIME_SHARED_STAGED_FOLDER_H_

#include <filesystem>
#include <functional>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "args/training_args.pb.h"
#include "checkpoint/folder/staged_folder.h"
#include "runtime/parallel_context.h"

namespace loom::runtime {

class SharedStagedFolder {
 public:
  static absl::StatusOr<SharedStagedFolder> Begin(ParallelContext& parallel,
                                                  const args::TrainingArguments& args,
                                                  const std::filesystem::path& parent,
                                                  const std::string& name, std::string what);

  // The staging folder this rank writes into.
  const std::string& path() const { return staging_; }
  // Whether this rank stages and commits (writes the shared files).
  bool saver() const { return staged_.has_value(); }

  absl::Status Commit(const absl::Status& written,
                      const std::function<absl::Status()>& after_commit);

 private:
  SharedStagedFolder(ParallelContext* parallel, std::optional<checkpoint::StagedFolder> staged,
                     std::string staging, std::string what)
      : parallel_(parallel),
        staged_(std::move(staged)),
        staging_(std::move(staging)),
        what_(std::move(what)) {}

  ParallelContext* parallel_;
  std::optional<checkpoint::StagedFolder> staged_;
  std::string staging_;
  std::string what_;
};

}  // namespace loom::runtime

#endif  // LOOM_RUNTIME_SHARED_STAGED_FOLDER_H_
