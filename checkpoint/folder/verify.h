// VerifyFolder: checks a checkpoint folder against its loom_manifest.json (manifest.h) before
// the Trainer resumes from it.
//
// Contract:
//   CheckFolder(folder, options) never fails; it returns what it found:
//     code == kOk       the manifest exists, parses, and every file it lists exists as a
//                       regular file with the recorded size and CRC32C. Files the manifest does
//                       not list (e.g. added later by hand) are ignored.
//     kNotFound         `folder` does not exist.          reason "folder does not exist"
//     kFailedPrecondition  `folder` is not a directory    reason "not a directory"
//                       or has no manifest                reason "incomplete (no
//                       loom_manifest.json)"
//     kDataLoss         a malformed manifest, or listed files that are missing, are not regular
//                       files, or have the wrong size or CRC32C. reason lists every bad file in
//                       manifest order, "; "-separated, e.g.
//                         "optimizer.pt: CRC32C mismatch (manifest 1a2b3c4d, file 5e6f7a8b)"
//                         "model.safetensors: size mismatch (manifest 4096 bytes, file 1000)"
//                         "scheduler.pt: missing"
//     other codes       an I/O error reading the folder (reason names the file and errno).
//     With options.allow_missing_manifest a folder without a manifest is kOk with
//     has_manifest == false: only its existence was checked (folders written by HF's Python
//     Trainer have no manifest). The caller should log that clearly.
//   VerifyFolder(folder, options) is the same as a Status: OK with the summary, or the code above
//     with a message that names the folder, gives the reason, and says how to fix it.
// Only the size check needs no reading; the CRC check reads every listed file once.
//
// Example:
//   ASSIGN_OR_RETURN(VerifiedFolder v, VerifyFolder(resume_dir));
//   if (!v.has_manifest) LOG(WARNING) << resume_dir << " has no loom_manifest.json; not verified";
#ifndef LOOM_CHECKPOINT_FOLDER_VERIFY_H_
#define LOOM_CHECKPOINT_FOLDER_VERIFY_H_

#include <cstdint>
#include <filesystem>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace loom::checkpoint {

struct VerifyOptions {
  // Accept a folder that has no loom_manifest.json (written by HF's Python Trainer or another
  // tool); then only the folder's existence is checked.
  bool allow_missing_manifest = false;
};

struct VerifiedFolder {
  bool has_manifest = false;
  int64_t files = 0;   // files checked
  uint64_t bytes = 0;  // bytes checked
};

struct FolderCheck {
  absl::StatusCode code = absl::StatusCode::kOk;
  std::string reason;      // empty when code == kOk
  VerifiedFolder summary;  // valid when code == kOk
};

FolderCheck CheckFolder(const std::filesystem::path& folder, const VerifyOptions& options = {});

absl::StatusOr<VerifiedFolder> VerifyFolder(const std::filesystem::path& folder,
                                            const VerifyOptions& options = {});

}  // namespace loom::checkpoint

#endif  // LOOM_CHECKPOINT_FOLDER_VERIFY_H_
