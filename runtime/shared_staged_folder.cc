#include "runtime/shared_staged_folder.h"

#include "base/status_macros.h"

namespace loom::runtime {

absl::StatusOr<SharedStagedFolder> SharedStagedFolder::Begin(ParallelContext& parallel,
                                                            const args::TrainingArguments& args,
                                                            const std::filesystem::path& parent,
                                                            const std::string& name,
                                                            std::string what) {
  std::optional<checkpoint::StagedFolder> staged;
  std::string staging;
  absl::Status begun = absl::OkStatus();
  if (parallel.ShouldSave(args)) {
    // Begin creates `parent` (durably) when it is missing.
    absl::StatusOr<checkpoint::StagedFolder> b = checkpoint::StagedFolder::Begin(parent, name);
    if (b.ok()) {
      staged.emplace(std::move(*b));
      staging = staged->path().string();
    } else {
      begun = b.status();
    }
  }
  RETURN_IF_ERROR_CTX(parallel.ShareFromSaver(args, staging), what);
  if (begun.ok() && staging.empty()) {
    begun = absl::InternalError("the saving rank could not create the checkpoint folder");
  }
  RETURN_IF_ERROR_CTX(parallel.AgreeOnStatus(begun, "creating the checkpoint folder"), what);
  return SharedStagedFolder(&parallel, std::move(staged), std::move(staging), std::move(what));
}

absl::Status SharedStagedFolder::Commit(const absl::Status& written,
                                        const std::function<absl::Status()>& after_commit) {
  RETURN_IF_ERROR_CTX(parallel_->AgreeOnStatus(written, "writing the checkpoint files"), what_);
  absl::Status committed = absl::OkStatus();
  if (staged_.has_value()) {
    committed = staged_->Commit().status();
    if (committed.ok() && after_commit) committed = after_commit();
  }
  // Nobody goes on (and e.g. reads the folder) before it is committed, and a failed commit
  // stops every rank.
  RETURN_IF_ERROR_CTX(parallel_->AgreeOnStatus(committed, "committing the checkpoint"), what_);
  return absl::OkStatus();
}

}  // namespace loom::runtime
