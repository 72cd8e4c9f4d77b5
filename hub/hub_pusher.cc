#include "hub/hub_pusher.h"

#include <filesystem>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace loom::hub {
namespace fs = std::filesystem;
namespace {

constexpr char kLastCheckpoint[] = "last-checkpoint";

// HF's modeling files (config, weights in either format, their sharded forms), the arguments
// file and the tokenizer's files: what _push_from_checkpoint puts into output_dir (it saves
// the tokenizer there; loom takes the checkpoint's copy, so no file is written into output_dir
// while a push reads it).
bool IsModelingFile(const std::string& name) {
  for (const char* tokenizer_file :
       {"vocab.txt", "tokenizer_config.json", "special_tokens_map.json", "tokenizer.json",
        "added_tokens.json", "vocab.json", "merges.txt", "spiece.model"}) {
    if (name == tokenizer_file) return true;
  }
  return name == "config.json" || name == "model.safetensors" || name == "pytorch_model.bin" ||
         name == "training_args.bin" || name == "model.safetensors.index.json" ||
         name == "pytorch_model.bin.index.json" ||
         (name.rfind("model-", 0) == 0 && name.size() > 12 &&
          name.substr(name.size() - 12) == ".safetensors") ||
         (name.rfind("pytorch_model-", 0) == 0 && name.size() > 4 &&
          name.substr(name.size() - 4) == ".bin");
}

// `from` copied to `to`: written beside it and renamed over it. A copy, not a hard link: a
// later write into output_dir in place must never reach the checkpoint's file.
absl::Status CopyFile(const fs::path& from, const fs::path& to) {
  std::error_code ec;
  const fs::path tmp = to.string() + ".loom-tmp";
  fs::remove(tmp, ec);
  fs::copy_file(from, tmp, fs::copy_options::overwrite_existing, ec);
  if (!ec) fs::rename(tmp, to, ec);
  if (ec) {
    fs::remove(tmp);
    return absl::InternalError(
        absl::StrCat("copying ", from.string(), " to ", to.string(), ": ", ec.message()));
  }
  return absl::OkStatus();
}

// `from` as the folder `to`: built beside it (a name .gitignore's "_*" hides) and swapped in
// by renames, so that a push running meanwhile sees the old folder or the new one.
absl::Status ReplaceTree(const fs::path& from, const fs::path& to) {
  std::error_code ec;
  const fs::path building = to.parent_path() / ("_" + to.filename().string() + ".new");
  const fs::path old = to.parent_path() / ("_" + to.filename().string() + ".old");
  fs::remove_all(building, ec);
  fs::remove_all(old, ec);
  fs::create_directories(building, ec);
  if (ec) {
    return absl::InternalError(absl::StrCat("creating ", building.string(), ": ", ec.message()));
  }
  for (const auto& entry : fs::recursive_directory_iterator(from)) {
    const fs::path dest = building / fs::relative(entry.path(), from);
    if (entry.is_directory()) {
      fs::create_directories(dest, ec);
    } else {
      RETURN_IF_ERROR(CopyFile(entry.path(), dest));
    }
  }
  if (fs::exists(to)) fs::rename(to, old, ec);
  if (!ec) fs::rename(building, to, ec);
  if (ec) return absl::InternalError(absl::StrCat("replacing ", to.string(), ": ", ec.message()));
  fs::remove_all(old, ec);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<HubStrategy> ParseHubStrategy(const std::string& name) {
  if (name == "end") return HubStrategy::kEnd;
  if (name == "every_save") return HubStrategy::kEverySave;
  if (name == "checkpoint") return HubStrategy::kCheckpoint;
  if (name == "all_checkpoints") return HubStrategy::kAllCheckpoints;
  return absl::InvalidArgumentError(absl::StrCat(
      "--hub_strategy: '", name, "' is not one of end, every_save, checkpoint, all_checkpoints"));
}

absl::StatusOr<std::unique_ptr<HubPusher>> HubPusher::Create(HubPusherOptions options) {
  auto pusher = absl::WrapUnique(new HubPusher(std::move(options)));
  const HubPusherOptions& o = pusher->options_;
  // "_*": HF's ignore pattern (and this pusher's own folders); ".loom-*": checkpoint folders
  // being staged or replaced (checkpoint/folder), never pushed half-written.
  std::vector<std::string> ignore = {"_*", "tmp-checkpoint-*", ".loom-*"};
  if (o.strategy != HubStrategy::kAllCheckpoints) ignore.push_back("checkpoint-*/");
  ASSIGN_OR_RETURN(pusher->repo_, HubRepository::Open(RepositoryOptions()
                                                          .set_folder(o.output_dir)
                                                          .set_remote_url(o.remote_url)
                                                          .set_token(o.token)
                                                          .set_ignore(ignore)));
  // A killed run's push folders (_push-<n>): copies nobody will move any more.
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(o.output_dir, ec)) {
    if (entry.path().filename().string().rfind("_push-", 0) == 0) fs::remove_all(entry.path(), ec);
  }
  return pusher;
}

HubPusher::~HubPusher() {
  if (running_.valid()) running_.wait();
}

bool HubPusher::push_in_progress() const {
  std::lock_guard<std::mutex> lock(mu_);
  return running_.valid() &&
         running_.wait_for(std::chrono::seconds(0)) != std::future_status::ready;
}

void HubPusher::Start(std::function<absl::Status()> job, bool report_failure) {
  std::lock_guard<std::mutex> lock(mu_);
  std::shared_future<absl::Status> before = running_;
  ++pushes_started_;
  auto on_failure = report_failure ? options_.on_failure : nullptr;
  running_ = std::async(std::launch::async, [before, job = std::move(job), on_failure] {
               if (before.valid()) before.wait();  // one push at a time, in order
               absl::Status s = job();
               if (!s.ok() && on_failure) on_failure(s);
               return s;
             }).share();
}

namespace {

// The checkpoint's modeling files (and, for "checkpoint", the whole folder as last-checkpoint)
// copied into `pending`; `files` names those copied.
absl::Status CopyForPush(const std::string& checkpoint_folder, const fs::path& pending,
                         HubStrategy strategy, std::vector<std::string>& files) {
  for (const auto& entry : fs::directory_iterator(checkpoint_folder)) {
    const std::string file = entry.path().filename().string();
    if (entry.is_regular_file() && IsModelingFile(file)) {
      RETURN_IF_ERROR(CopyFile(entry.path(), pending / file));
      files.push_back(file);
    }
  }
  if (strategy == HubStrategy::kCheckpoint) {
    RETURN_IF_ERROR(ReplaceTree(checkpoint_folder, pending / kLastCheckpoint));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status HubPusher::OnCheckpoint(const std::string& checkpoint_folder,
                                     const std::string& message) {
  if (options_.strategy == HubStrategy::kEnd) return absl::OkStatus();
  if (!options_.always_push && push_in_progress()) {
    ++pushes_skipped_;  // HF: a new push only when the previous one finished
    return absl::OkStatus();
  }
  // The files are copied now (HF's _push_from_checkpoint copies them before returning), into
  // a folder of this push's own ("_*": ignored by git); the background job moves them into
  // output_dir right before its commit, so a queued push (always_push) commits its own
  // checkpoint's files, not a later one's.
  const fs::path out(options_.output_dir);
  const fs::path pending = out / absl::StrCat("_push-", ++pending_seq_);
  std::error_code ec;
  fs::remove_all(pending, ec);
  fs::create_directories(pending, ec);
  if (ec) {
    return absl::InternalError(absl::StrCat("creating ", pending.string(), ": ", ec.message()));
  }
  std::vector<std::string> files;
  const HubStrategy strategy = options_.strategy;
  absl::Status copied = CopyForPush(checkpoint_folder, pending, strategy, files);
  if (!copied.ok()) {
    fs::remove_all(pending, ec);  // a full disk: give the space back; the checkpoint is intact
    return copied;
  }
  const std::string name = fs::path(checkpoint_folder).filename().string();
  HubRepository* repo = repo_.get();
  Start([repo, strategy, out, pending, files, name, message]() -> absl::Status {
    // This push's files into output_dir, each by a rename.
    std::error_code ec;
    for (const std::string& f : files) {
      fs::rename(pending / f, out / f, ec);
      if (ec) {
        return absl::InternalError(absl::StrCat("moving ", (pending / f).string(), " into ",
                                                out.string(), ": ", ec.message()));
      }
    }
    if (strategy == HubStrategy::kCheckpoint) {
      const fs::path last = out / kLastCheckpoint, old = out / "_last-checkpoint.old";
      fs::remove_all(old, ec);
      if (fs::exists(last)) fs::rename(last, old, ec);
      if (!ec) fs::rename(pending / kLastCheckpoint, last, ec);
      if (ec)
        return absl::InternalError(absl::StrCat("replacing ", last.string(), ": ", ec.message()));
      fs::remove_all(old, ec);
    }
    fs::remove_all(pending, ec);
    // The model commit: everything but checkpoints (HF's ignore_patterns "_*", "checkpoint-*").
    HubRepository::Paths model;
    model.specs = {".", ":(exclude)checkpoint-*", absl::StrCat(":(exclude)", kLastCheckpoint)};
    RETURN_IF_ERROR(repo->Commit(message, model).status());
    // checkpoint: last-checkpoint/; all_checkpoints: the folder under its own name (unless
    // --save_total_limit removed it meanwhile).
    const std::string in_repo = strategy == HubStrategy::kCheckpoint ? kLastCheckpoint : name;
    if (strategy != HubStrategy::kEverySave && fs::exists(out / in_repo)) {
      HubRepository::Paths checkpoint;
      checkpoint.specs = {in_repo};
      checkpoint.force = true;
      checkpoint.removals = true;
      RETURN_IF_ERROR(repo->Commit(absl::StrCat(message, ", checkpoint"), checkpoint).status());
    }
    return repo->Push();
  });
  return absl::OkStatus();
}

absl::Status HubPusher::Push(const std::string& message, bool blocking) {
  HubRepository* repo = repo_.get();
  // HF's push_to_hub: everything but "_*" and the checkpoint folders.
  Start(
      [repo, message]() -> absl::Status {
        HubRepository::Paths paths;
        paths.specs = {".", ":(exclude)checkpoint-*"};
        RETURN_IF_ERROR(repo->Commit(message, paths).status());
        return repo->Push();
      },
      /*report_failure=*/!blocking);  // a blocking push's failure is returned instead
  return blocking ? Wait() : absl::OkStatus();
}

absl::Status HubPusher::Wait() {
  std::shared_future<absl::Status> running;
  {
    std::lock_guard<std::mutex> lock(mu_);
    running = running_;
  }
  return running.valid() ? running.get() : absl::OkStatus();
}

}  // namespace loom::hub
