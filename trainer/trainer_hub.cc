// Trainer::PushToHub / CreateModelCard and the --push_to_hub plumbing: HF 4.41's
// init_hf_repo, _push_from_checkpoint, _finish_current_push, push_to_hub and
// create_model_card (TrainingArguments hub_strategy), over //hub.
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "base/file_util.h"
#include "base/status_macros.h"
#include "glog/logging.h"
#include "hub/hub_api.h"
#include "hub/hub_config.h"
#include "hub/hub_pusher.h"
#include "hub/model_card.h"
#include "trainer/trainer.h"

namespace loom::trainer {

absl::Status Trainer::InitHfRepo() {
  absl::Status opened = absl::OkStatus();
  if (parallel_.is_world_zero() && hub_pusher_ == nullptr) {
    opened = [&]() -> absl::Status {
      const std::string model_id = args_.hub_model_id().empty()
                                       ? hub::DefaultModelId(args_.output_dir())
                                       : args_.hub_model_id();
      const std::string hub_url = hub::HubUrlFromEnvironment();
      ASSIGN_OR_RETURN(std::string url, hub::RemoteUrl(model_id, hub_url));
      std::optional<hub::HubToken> token = hub::ResolveHubToken(args_.hub_token());
      const std::optional<std::string> token_value =
          token ? std::optional<std::string>(token->token) : std::nullopt;
      // HF's create_repo(exist_ok=True) where there is a Hub to ask; hub_private_repo either
      // reaches a server that understands it or is refused here, before any work.
      if (hub::IsHubRepoId(model_id)) {
        ASSIGN_OR_RETURN(hub::CreatedRepo created,
                         hub::CreateRepo(hub_url, model_id, token_value, args_.hub_private_repo()),
                         "--push_to_hub");
        // HF: hub_model_id = repo_url.repo_id — the server names the namespace of a bare name.
        if (!created.url.empty()) {
          ASSIGN_OR_RETURN(url, hub::RemoteUrl(created.url, hub_url), "--push_to_hub");
        }
        if (created.outcome == hub::CreateRepoOutcome::kNoApi && args_.hub_private_repo()) {
          return absl::FailedPreconditionError(absl::StrCat(
              "--hub_private_repo: ", hub_url,
              " has no repository API (/api/repos/create), so the repository's visibility cannot "
              "be set; drop the flag, or point LOOM_HUB_URL / HF_ENDPOINT at a Hub-compatible "
              "server"));
        }
        if (created.outcome == hub::CreateRepoOutcome::kCreated) {
          LOG(INFO) << "Created the " << (args_.hub_private_repo() ? "private" : "public")
                    << " repository " << model_id << " at " << hub_url;
        }
      } else if (args_.hub_private_repo()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "--hub_private_repo: --hub_model_id ", model_id,
            " is a git URL or path, which has no visibility to set; drop the flag, or give "
            "hub_model_id as user/name of a Hub-compatible server (LOOM_HUB_URL / "
            "HF_ENDPOINT)"));
      }
      hub::HubPusherOptions o;
      o.output_dir = args_.output_dir();
      o.remote_url = url;
      o.token = token_value;
      ASSIGN_OR_RETURN(o.strategy, hub::ParseHubStrategy(args_.hub_strategy()));
      o.always_push = args_.hub_always_push();
      // A checkpoint push that fails is a warning: training goes on (HF logs and continues).
      o.on_failure = [](const absl::Status& s) {
        LOG(WARNING) << "Pushing to the hub failed; training goes on: " << s.message();
      };
      ASSIGN_OR_RETURN(hub_pusher_, hub::HubPusher::Create(std::move(o)));
      LOG(INFO) << "Pushing to " << url << " (hub_strategy " << args_.hub_strategy() << "; token "
                << (token ? "from " + token->source : std::string("none")) << ")";
      return absl::OkStatus();
    }();
  }
  return parallel_.AgreeOnStatus(opened, "opening the hub repository (--push_to_hub)");
}

absl::Status Trainer::PushFromCheckpoint(const std::string& folder) {
  // HF: "step N" with save_strategy steps, else "epoch int(epoch)".
  const std::string message =
      args_.save_strategy() == "steps"
          ? absl::StrCat("Training in progress, step ", state_.global_step)
          : absl::StrCat("Training in progress, epoch ", static_cast<int64_t>(state_.epoch.value_or(0)));
  const int skipped = hub_pusher_->pushes_skipped();
  RETURN_IF_ERROR(hub_pusher_->OnCheckpoint(folder, message));
  if (hub_pusher_->pushes_skipped() > skipped) {
    LOG(INFO) << "Not pushing " << folder << ": the previous push is still running (set "
                 "--hub_always_push to queue it instead)";
  } else if (args_.hub_strategy() != "end") {
    LOG(INFO) << "Pushing " << folder << " in the background: \"" << message << "\"";
  }
  return absl::OkStatus();
}

void Trainer::FinishCurrentPush() {
  if (hub_pusher_ == nullptr) return;
  if (hub_pusher_->push_in_progress()) {
    LOG(INFO) << "Waiting for the current checkpoint push to be finished, this might take a "
                 "couple of minutes.";
  }
  // A failure was already reported as a warning by the pusher's on_failure.
  (void)hub_pusher_->Wait();
}

absl::Status Trainer::CreateModelCard(const ModelCardOptions& card) {
  if (!parallel_.is_world_zero()) return absl::OkStatus();
  const std::string path = args_.output_dir() + "/README.md";
  std::vector<std::string> existing;
  std::error_code ec;
  if (std::filesystem::exists(path, ec)) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    absl::StatusOr<std::vector<std::string>> tags = ExistingCardTags(text.str());
    if (tags.ok()) {
      existing = *tags;
    } else {
      LOG(WARNING) << path << ": " << tags.status().message() << " (its tags are not kept)";
    }
  }
  hub::TrainingSummary summary =
      SummaryFromTrainer(args_, state_.log_history, parallel_.world_size(), card, existing);
  RETURN_IF_ERROR(base::MakeDirs(args_.output_dir()));
  return base::WriteFileAtomically(path, hub::ToModelCard(summary));
}

absl::Status Trainer::PushToHub(const std::string& commit_message, bool blocking,
                                const ModelCardOptions& card) {
  ModelCardOptions options = card;
  if (!options.model_name) {
    const std::string& id = args_.hub_model_id();
    // HF: hub_model_id's last part (a URL's without ".git"), else output_dir's name.
    std::string name = hub::DefaultModelId(id.empty() ? args_.output_dir() : id);
    if (!id.empty()) {
      std::string trimmed = id;
      while (!trimmed.empty() && trimmed.back() == '/') trimmed.pop_back();
      name = trimmed.substr(trimmed.rfind('/') + 1);
    }
    if (name.size() > 4 && name.substr(name.size() - 4) == ".git") name.resize(name.size() - 4);
    options.model_name = name;
  }
  // HF opens the repository here when push_to_hub was not set.
  RETURN_IF_ERROR(InitHfRepo());
  // A running checkpoint push first (HF waits after saving): a queued one moves its
  // checkpoint's files into output_dir, which must not land over the model saved here.
  FinishCurrentPush();
  RETURN_IF_ERROR(SaveModelFiles(args_.output_dir()));
  if (!parallel_.is_world_zero()) return absl::OkStatus();  // only one process pushes
  RETURN_IF_ERROR(CreateModelCard(options));
  return hub_pusher_->Push(commit_message, blocking);
}

}  // namespace loom::trainer
