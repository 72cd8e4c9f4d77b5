#include "examples/script_resume.h"

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "checkpoint/folder/discovery.h"
#include "checkpoint/folder/names.h"
#include "glog/logging.h"

namespace loom::examples {

using trainer::ResumeFrom;

absl::StatusOr<std::optional<ResumeFrom>> ResumeFromArgs(const args::TrainingArguments& args) {
  if (args.has_resume_from_checkpoint() && !args.resume_from_checkpoint().empty()) {
    return ResumeFrom::Path(args.resume_from_checkpoint());
  }
  const std::filesystem::path dir(args.output_dir());
  std::error_code ec;
  if (!args.do_train() || args.overwrite_output_dir() || !std::filesystem::is_directory(dir, ec)) {
    return std::nullopt;
  }
  // Read-only: in a launched run every rank looks, and the Trainer's resume (one rank cleans
  // up, then all discover) does the rest.
  checkpoint::DiscoveryOptions options;
  options.allow_missing_manifest = true;
  ASSIGN_OR_RETURN(checkpoint::LastCheckpoint last, checkpoint::FindLastCheckpoint(dir, options),
                   "--output_dir");
  for (const auto& skipped : last.skipped) {
    LOG(WARNING) << "Not resuming from " << skipped.ToString();
  }
  // A save interrupted while replacing a folder may have left the only complete copy hidden;
  // the Trainer's clean-up puts it back.
  bool hidden_copy = false;
  for (const std::string& h : last.hidden) {
    auto parsed = checkpoint::ParseHiddenFolderName(h);
    hidden_copy = hidden_copy || (parsed && parsed->kind == checkpoint::HiddenKind::kReplaced);
  }
  if (last.path.empty() && !hidden_copy) {
    // Leftovers of an interrupted save do not count as content.
    bool has_content = false;
    for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
      if (!checkpoint::ParseHiddenFolderName(entry.path().filename().string())) has_content = true;
    }
    if (has_content) {
      return absl::InvalidArgumentError(absl::StrCat(
          "Output directory (", args.output_dir(),
          ") already exists and is not empty. Use --overwrite_output_dir to overcome."));
    }
    return std::nullopt;
  }
  LOG(INFO) << "Checkpoint detected, resuming training at "
            << (last.path.empty() ? dir.string() : last.path.string())
            << ". To avoid this behavior, change the `--output_dir` or add "
               "`--overwrite_output_dir` to train from scratch.";
  return ResumeFrom::Latest();
}

}  // namespace loom::examples
