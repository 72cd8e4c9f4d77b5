// HubPusher: HF Trainer's push schedule for --push_to_hub (TrainingArguments `hub_strategy`,
// transformers 4.41's _push_from_checkpoint / push_to_hub), over HubRepository.
//
// Contract (only the main process makes one; other ranks never touch the repository):
//   - Create(options): opens output_dir's repository (repository.h). .gitignore: "_*",
//     "tmp-checkpoint-*" and ".loom-*" (checkpoint folders being staged) always,
//     "checkpoint-*/" except with all_checkpoints (whose checkpoint folders are pushed as they
//     are).
//   - OnCheckpoint(checkpoint_folder, message) after each checkpoint save, for every strategy
//     but "end": when the previous push has not finished it returns at once without pushing
//     (HF's rule) unless always_push, which queues it after the running one. Otherwise the
//     modeling files (config.json, model.safetensors, pytorch_model.bin, any sharded weights
//     with their index, training_args.bin, the tokenizer's files) — with "checkpoint" the
//     whole checkpoint too — are
//     copied now (as HF copies them) into a folder of this push's own (output_dir/_push-<n>,
//     ignored by git; a copy that fails — a full disk, an I/O error — removes that folder and
//     is the call's error, naming the file; Create removes the _push-* folders a killed run
//     left); in the background the push moves them into output_dir (each file by a
//     rename; last-checkpoint/ swapped in by renames), commits `message` ("Training in
//     progress, step N" / "..., epoch N") over everything but checkpoints, with "checkpoint" /
//     "all_checkpoints" a second commit "<message>, checkpoint" over last-checkpoint/ or the
//     checkpoint folder itself (skipped when --save_total_limit removed that folder first),
//     and pushes. So each queued push commits its own checkpoint's files.
//   - Push(message, blocking): HF's Trainer.push_to_hub — after a running push, commits
//     everything in output_dir (not checkpoint-*/, HF's ignore pattern) and pushes, in the foreground when
//     `blocking`. A caller writing the final model first calls Wait(): a queued checkpoint
//     push moves its own files into output_dir when it runs.
//   - Wait(): the running push's outcome (OK when none). A failed background push goes to
//     on_failure, a warning the caller logs (training goes on); Push(blocking) returns its
//     error instead.
//   - pushes_started() / pushes_skipped(): counts, for logs and tests.
//
// Example:
//   ASSIGN_OR_RETURN(auto pusher, HubPusher::Create(opts));
//   pusher->OnCheckpoint("/out/checkpoint-500", "Training in progress, step 500");
//   ...
//   RETURN_IF_ERROR(pusher->Push("End of training", /*blocking=*/true));
#ifndef LOOM_HUB_HUB_PUSHER_H_
#define LOOM_HUB_HUB_PUSHER_H_

#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "hub/repository.h"

namespace loom::hub {

enum class HubStrategy { kEnd, kEverySave, kCheckpoint, kAllCheckpoints };
// "end", "every_save", "checkpoint", "all_checkpoints" (InvalidArgument naming --hub_strategy
// otherwise).
absl::StatusOr<HubStrategy> ParseHubStrategy(const std::string& name);

struct HubPusherOptions {
  std::string output_dir;
  std::string remote_url;
  std::optional<std::string> token;
  HubStrategy strategy = HubStrategy::kEverySave;
  bool always_push = false;
  // Called with each background push's failure (the remote, never the token); the Trainer logs
  // it as a warning. Null: the failure is kept for Wait().
  std::function<void(const absl::Status&)> on_failure;
};

class HubPusher {
 public:
  static absl::StatusOr<std::unique_ptr<HubPusher>> Create(HubPusherOptions options);
  ~HubPusher();

  // Copies happen now; the commit and push run in the background. Errors returned are of the
  // copies (the local folder), never of the remote.
  absl::Status OnCheckpoint(const std::string& checkpoint_folder, const std::string& message);
  absl::Status Push(const std::string& message, bool blocking);
  absl::Status Wait();

  int pushes_started() const { return pushes_started_; }
  int pushes_skipped() const { return pushes_skipped_; }
  bool push_in_progress() const;

 private:
  explicit HubPusher(HubPusherOptions o) : options_(std::move(o)) {}
  // Runs `job` after the running push (if any), in the background; its failure goes to
  // on_failure when `report_failure`.
  void Start(std::function<absl::Status()> job, bool report_failure = true);

  HubPusherOptions options_;
  std::unique_ptr<HubRepository> repo_;
  mutable std::mutex mu_;  // guards repo_ use by the background job and running_
  std::shared_future<absl::Status> running_;
  int pending_seq_ = 0;  // names each push's folder of copied files
  int pushes_started_ = 0;
  int pushes_skipped_ = 0;
};

}  // namespace loom::hub

#endif  // LOOM_HUB_HUB_PUSHER_H_
