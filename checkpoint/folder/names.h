// Names in a Trainer output_dir: HF's `checkpoint-<step>` folders, loom's manifest file, and
// the hidden working names loom uses while a folder is being written, replaced or deleted.
//
// Contract:
//   CheckpointFolderName(40)          "checkpoint-40" (HF's PREFIX_CHECKPOINT_DIR + "-" + step).
//   ParseCheckpointFolderName(name)   HF's get_last_checkpoint rule: the step when `name` is
//                                     exactly "checkpoint-" followed by ASCII digits
//                                     (^checkpoint\-(\d+)$), else nullopt. "checkpoint-010" is
//                                     step 10. Steps that do not fit in int64 are nullopt.
//   ParseSortedCheckpointStep(name)   HF's _sorted_checkpoints rule (transformers 4.38-4.41):
//                                     `name` starts with "checkpoint-" (the glob
//                                     "checkpoint-*") and re.match(".*checkpoint-([0-9]+)")
//                                     finds digits: the LAST "checkpoint-<digit>" in the name
//                                     wins and all its digits are the step. So it is more
//                                     lenient than the rule above: "checkpoint-10.tmp" is step
//                                     10, "checkpoint-5-checkpoint-7" is step 7, and
//                                     "checkpoint-abc" is nullopt. (HF applies the regex to the
//                                     whole path; loom applies it to the entry name, which only
//                                     differs when output_dir itself contains "checkpoint-<N>".)
//   HiddenFolderName(kind, name)      ".loom-<kind>-<name>.<pid>.<16 hex digits>", a fresh name
//                                     (random suffix) for a working directory beside `name`.
//                                     It starts with '.', so it never matches either rule above:
//                                     HF tools, get_last_checkpoint and rotation ignore it.
//   ParseHiddenFolderName(entry)      the parts of a name HiddenFolderName made (exact pattern:
//                                     ^\.loom-(staging|replaced|deleting)-(.+)\.(\d+)\.([0-9a-f]{16})$),
//                                     else nullopt. Only these are ever removed as leftovers.
//   ValidateFolderName(name)          OK for a single path component usable as a checkpoint
//                                     folder name (non-empty, no '/', no NUL, not "." or "..",
//                                     not starting with '.', short enough for a hidden name).
//   kManifestFileName                 "loom_manifest.json", loom's addition to the HF layout.
//
// Kinds of hidden folders:
//   kStaging   a StagedFolder being written (or, after an atomic exchange, the old folder it
//              replaced, about to be removed).
//   kReplaced  an old folder renamed aside while a new one takes its name (only on filesystems
//              without RENAME_EXCHANGE); restored by RemoveStaleStaging if the new one never
//              arrived.
//   kDeleting  a folder being deleted (rotation, or the tail of a replacement).
//
// Example:
//   std::string name = CheckpointFolderName(state.global_step);   // "checkpoint-40"
//   if (auto step = ParseCheckpointFolderName(entry)) { ... *step ... }
#ifndef LOOM_CHECKPOINT_FOLDER_NAMES_H_
#define LOOM_CHECKPOINT_FOLDER_NAMES_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace loom::checkpoint {

inline constexpr absl::string_view kCheckpointPrefix = "checkpoint";
inline constexpr absl::string_view kManifestFileName = "loom_manifest.json";

std::string CheckpointFolderName(int64_t step);

std::optional<int64_t> ParseCheckpointFolderName(absl::string_view name);

std::optional<int64_t> ParseSortedCheckpointStep(absl::string_view name);

enum class HiddenKind { kStaging, kReplaced, kDeleting };

// "staging", "replaced" or "deleting".
absl::string_view HiddenKindName(HiddenKind kind);

std::string HiddenFolderName(HiddenKind kind, absl::string_view name);

struct HiddenFolder {
  HiddenKind kind;
  std::string name;  // the visible name it belongs to, e.g. "checkpoint-40"
  int64_t pid;       // the process that created it
};

std::optional<HiddenFolder> ParseHiddenFolderName(absl::string_view entry);

absl::Status ValidateFolderName(absl::string_view name);

}  // namespace loom::checkpoint

#endif  // LOOM_CHECKPOINT_FOLDER_NAMES_H_
