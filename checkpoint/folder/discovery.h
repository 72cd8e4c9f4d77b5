// Finding the checkpoint to resume from (HF's get_last_checkpoint, with verification), and
// cleaning up the hidden working folders a crash leaves behind.
//
// Contract:
//   FindLastCheckpoint(output_dir, options)
//     Candidates are HF's: entries of output_dir named exactly checkpoint-<digits>
//     (ParseCheckpointFolderName) that are directories (symlinks to directories count, as
//     os.path.isdir). They are tried newest step first (equal steps, e.g. "checkpoint-010" and
//     "checkpoint-10": bytewise name order; HF takes whichever os.listdir lists first) and
//     checked with CheckFolder (verify.h). The first that passes is returned; every newer one
//     that failed is listed in `skipped`, newest first, with its reason, e.g.
//       "checkpoint-60: incomplete (no loom_manifest.json)"
//       "checkpoint-50: optimizer.pt: CRC32C mismatch (manifest 1a2b3c4d, file 5e6f7a8b)"
//     `path` is empty when no candidate passes (HF returns None). Other entries
//     (checkpoint-abc, checkpoint-10.tmp, regular files) are ignored as HF ignores them.
//     `hidden` lists loom's hidden working folders present (names.h), which a crash left or a
//     live writer is using: call RemoveStaleStaging before FindLastCheckpoint when resuming.
//     NotFound (naming output_dir) when output_dir does not exist; other I/O errors listing
//     it are returned as is. Problems inside candidate folders are never errors, only skips.
//   RemoveStaleStaging(output_dir)
//     Cleans up what an interrupted save, replacement or deletion left, touching only entries
//     matching loom's exact hidden pattern (ParseHiddenFolderName) that this process is not
//     using right now:
//       .loom-staging-*   removed (an unfinished save, or an old folder already replaced);
//       .loom-deleting-*  removed (an unfinished deletion);
//       .loom-replaced-<name>.*  renamed back to <name> when <name> does not exist and the
//                         folder passes CheckFolder with allow_missing_manifest (a crash between
//                         the two renames of a kRenameAside replacement); otherwise removed.
//     Returns what it did, entries sorted by name. Call it when no other process writes into
//     output_dir (at startup on the main process, before training or resuming): a live writer
//     in ANOTHER process would lose its staging folder.
//
// Example (resume_from_checkpoint=True):
//   ASSIGN_OR_RETURN(StaleCleanup cleanup, RemoveStaleStaging(args.output_dir));
//   for (const auto& name : cleanup.removed) LOG(INFO) << "removed leftover " << name;
//   ASSIGN_OR_RETURN(LastCheckpoint last, FindLastCheckpoint(args.output_dir));
//   for (const auto& s : last.skipped) LOG(WARNING) << "skipping " << s.ToString();
//   if (last.path.empty()) return absl::NotFoundError("no valid checkpoint in output_dir");
#ifndef LOOM_CHECKPOINT_FOLDER_DISCOVERY_H_
#define LOOM_CHECKPOINT_FOLDER_DISCOVERY_H_

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "checkpoint/folder/verify.h"

namespace loom::checkpoint {

struct DiscoveryOptions {
  // Accept checkpoint folders without loom_manifest.json (written by HF's Python Trainer);
  // LastCheckpoint::verified.has_manifest tells the caller to log that it was not verified.
  bool allow_missing_manifest = false;
};

struct SkippedCheckpoint {
  std::string name;  // "checkpoint-50"
  absl::StatusCode code = absl::StatusCode::kOk;
  std::string reason;  // CheckFolder's reason

  // "checkpoint-50: optimizer.pt: CRC32C mismatch (manifest 1a2b3c4d, file 5e6f7a8b)".
  std::string ToString() const { return name + ": " + reason; }
};

struct LastCheckpoint {
  std::filesystem::path path;              // output_dir/checkpoint-<step>; empty when none passed
  int64_t step = -1;                       // -1 when none passed
  VerifiedFolder verified;                 // what CheckFolder checked in `path`
  std::vector<SkippedCheckpoint> skipped;  // newer candidates that failed, newest first
  std::vector<std::string> hidden;         // loom's hidden working folders seen, sorted
};

absl::StatusOr<LastCheckpoint> FindLastCheckpoint(const std::filesystem::path& output_dir,
                                                  const DiscoveryOptions& options = {});

struct RestoredFolder {
  std::string from;  // ".loom-replaced-checkpoint-40.1234.0123456789abcdef"
  std::string to;    // "checkpoint-40"
};

struct StaleCleanup {
  std::vector<std::string> removed;       // entry names removed
  std::vector<RestoredFolder> restored;   // entries renamed back
  std::vector<std::string> skipped_live;  // in use by this process, left alone
};

absl::StatusOr<StaleCleanup> RemoveStaleStaging(const std::filesystem::path& output_dir);

}  // namespace loom::checkpoint

#endif  // LOOM_CHECKPOINT_FOLDER_DISCOVERY_H_
