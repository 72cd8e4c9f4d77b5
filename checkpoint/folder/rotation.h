// Checkpoint rotation: HF Trainer's _sorted_checkpoints(use_mtime=False) and
// _rotate_checkpoints (transformers 4.38-4.41), with a crash-safe folder deletion.
//
// Contract:
//   SortedCheckpoints(output_dir, best_model_checkpoint)
//     The entries of output_dir that are directories (symlinks to directories count, as
//     os.path.isdir) with a step by ParseSortedCheckpointStep (names.h: the glob
//     "checkpoint-*" and the regex ".*checkpoint-([0-9]+)", so "checkpoint-10.tmp" counts as
//     step 10, unlike in get_last_checkpoint), as output_dir/<name>, sorted by (step, path).
//     If best_model_checkpoint names one of them, it is then moved towards the end by
//     swapping it with its successor for i in [its index, len-2): it lands second to last
//     (or stays where it is when it is already last or second to last).
//   RotateCheckpoints(output_dir, options)
//     Nothing when save_total_limit is unset or <= 0, or when there are at most
//     save_total_limit checkpoints. With save_total_limit == 1, a best_model_checkpoint set,
//     and the last sorted checkpoint not the best (also when the best is not among them, as in
//     HF), the limit becomes 2. Then the first len - limit sorted checkpoints are deleted, in
//     order, with DeleteCheckpointFolder. HF's shutil.rmtree(ignore_errors=True) ignores
//     failures; loom also goes on but reports them in RotationResult::failures. A symlinked
//     checkpoint is never deleted (shutil.rmtree refuses symlinks): it is reported as a failure.
//   DeleteCheckpointFolder(folder)
//     Renames `folder` to a hidden .loom-deleting-<name>.* beside it, fsyncs the parent, then
//     removes the tree. The rename is atomic, so discovery never sees a half-deleted
//     checkpoint-<N>; a crash during the removal leaves a hidden folder for RemoveStaleStaging.
//
// HF (transformers 4.41 `Trainer._sorted_checkpoints` / `_rotate_checkpoints`, and the
// `save_total_limit` docs): with load_best_model_at_end, save_total_limit=5
// keeps the 4 most recent + the best; save_total_limit=1 can leave 2 (the last and the best).
//
// Deviations from HF, on purpose:
//   * Paths are compared after std::filesystem absolute() + lexically_normal() (HF compares
//     strings after pathlib's normalization, so "./out/checkpoint-5" and "out/checkpoint-5"
//     differ there and the best checkpoint could be deleted).
//   * The step regex is applied to the entry name, not to the whole path (names.h).
//   * A step that does not fit in int64 is not a checkpoint (HF's Python ints are unbounded).
//
// Example (after each save, as HF's _save_checkpoint does):
//   RotationOptions rot;
//   rot.save_total_limit = args.save_total_limit;            // std::optional<int64_t>
//   rot.best_model_checkpoint = state.best_model_checkpoint;  // std::optional<std::string>
//   ASSIGN_OR_RETURN(RotationResult r, RotateCheckpoints(args.output_dir, rot));
//   for (const auto& p : r.deleted)
//     LOG(INFO) << "Deleting older checkpoint [" << p.string() << "] due to args.save_total_limit";
#ifndef LOOM_CHECKPOINT_FOLDER_ROTATION_H_
#define LOOM_CHECKPOINT_FOLDER_ROTATION_H_

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace loom::checkpoint {

struct RotationOptions {
  std::optional<int64_t> save_total_limit;           // TrainingArguments.save_total_limit
  std::optional<std::string> best_model_checkpoint;  // TrainerState.best_model_checkpoint
};

struct RotationResult {
  std::vector<std::filesystem::path> deleted;  // in deletion order
  std::vector<std::string> failures;           // "<path>: <why>", not deleted
};

// NotFound naming output_dir when it does not exist.
absl::StatusOr<std::vector<std::filesystem::path>> SortedCheckpoints(
    const std::filesystem::path& output_dir,
    const std::optional<std::string>& best_model_checkpoint = std::nullopt);

absl::StatusOr<RotationResult> RotateCheckpoints(const std::filesystem::path& output_dir,
                                                 const RotationOptions& options);

absl::Status DeleteCheckpointFolder(const std::filesystem::path& folder);

}  // namespace loom::checkpoint

#endif  // LOOM_CHECKPOINT_FOLDER_ROTATION_H_
