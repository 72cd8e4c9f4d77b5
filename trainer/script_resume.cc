#include "trainer/script_resume.h"

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "checkpoint/folder/discovery.h"
#include "glog/logging.h"

namespace loom::trainer {

absl::StatusOr<std::optional<ResumeFrom>> ResumeFromArgs(const args::TrainingArguments& args) {
  if (args.has_resume_from_checkpoint() && !args.resume_from_checkpoint().empty()) {
    return ResumeFrom::Path(args.resume_from_checkpoint());
  }
  const std::filesystem::path dir(args.output_dir());
  std::error_code ec;
  if (!args.do_train() || args.overwrite_output_dir() || !std::filesystem::is_directory(dir, ec)) {
    return std::nullopt;
  }
  ASSIGN_OR_RETURN(checkpoint::StaleCleanup cleanup, checkpoint::RemoveStaleStaging(dir),
                   "--output_dir");
  checkpoint::DiscoveryOptions options;
  options.allow_missing_manifest = true;
  ASSIGN_OR_RETURN(checkpoint::LastCheckpoint last, checkpoint::FindLastCheckpoint(dir, options),
                   "--output_dir");
  for (const auto& skipped : last.skipped) {
    LOG(WARNING) << "Not resuming from " << skipped.ToString();
  }
  if (last.path.empty()) {
    if (std::filesystem::directory_iterator(dir, ec) != std::filesystem::directory_iterator()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "Output directory (", args.output_dir(),
          ") already exists and is not empty. Use --overwrite_output_dir to overcome."));
    }
    return std::nullopt;
  }
  LOG(INFO) << "Checkpoint detected, resuming training at " << last.path.string()
            << ". To avoid this behavior, change the `--output_dir` or add "
               "`--overwrite_output_dir` to train from scratch.";
  return ResumeFrom::Path(last.path.string());
}

}  // namespace loom::trainer
