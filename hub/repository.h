// HubRepository: output_dir as a git repository synced with a Hub model repository (or any
// git remote) — HF's init_hf_repo / push_to_hub plumbing for --push_to_hub (transformers
// 4.41 `Trainer.init_hf_repo`, `Trainer.push_to_hub`), over the git and git-lfs programs
// (git.h says why).
//
// Contract:
//   - Open(options): output_dir (made if missing) becomes a repository with origin = remote_url
//     (without credentials): an existing repository must already have that origin (HF: "an
//     existing output_dir must be a local clone of the repo"), else FailedPrecondition naming
//     both. Its branch is the remote's default one — the branch a plain `git clone` checks
//     out: the remote's HEAD, or for an empty repository its unborn HEAD (`git init --bare`
//     gives master), "main" (the Hub's) when the remote says nothing; an existing repository
//     keeps its branch. When the remote already has that branch, the local branch starts from
//     it (files the remote has and output_dir lacks are kept). git-lfs is
//     installed in the repository; .gitattributes tracks the Hub's large/binary patterns with
//     LFS (written unless present); .gitignore holds `ignore` (added to what is there).
//   - Commit(message[, paths]): every change under output_dir (except what .gitignore
//     excludes; removals are not committed) — or under `paths` — in one commit with
//     `message`; false when nothing changed.
//   - Push(): the commits to that branch of origin (logged: "Pushed branch B to URL"), the
//     token through git.h's in-memory helper;
//     on failure git's error naming the remote (never the token) with git's masked output,
//     marked so that IsPushFailure(status) tells it from a local error.
//
// Example:
//   ASSIGN_OR_RETURN(auto repo, HubRepository::Open(RepositoryOptions()
//       .set_folder("/out").set_remote_url(url).set_token(token)));
//   ASSIGN_OR_RETURN(bool committed, repo->Commit("Training in progress, step 500"));
//   if (committed) RETURN_IF_ERROR(repo->Push());
#ifndef LOOM_HUB_REPOSITORY_H_
#define LOOM_HUB_REPOSITORY_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "hub/git.h"

namespace loom::hub {

// The payload URL Push() marks its failures with (the remote's URL as the payload).
inline constexpr char kPushFailedPayload[] = "loom.hub/push-failed";
// A failure of the remote (unreachable, refused, rejected), not of the local folder.
bool IsPushFailure(const absl::Status& status);

// The Hub's default .gitattributes patterns (large and binary files stored with LFS).
const std::vector<std::string>& LfsPatterns();

struct RepositoryOptions {
  std::string folder;
  std::string remote_url;
  std::optional<std::string> token;
  std::vector<std::string> ignore = {"checkpoint-*/", "tmp-checkpoint-*"};
  int timeout_s = 3600;

  RepositoryOptions& set_folder(std::string v) {
    folder = std::move(v);
    return *this;
  }
  RepositoryOptions& set_remote_url(std::string v) {
    remote_url = std::move(v);
    return *this;
  }
  RepositoryOptions& set_token(std::optional<std::string> v) {
    token = std::move(v);
    return *this;
  }
  RepositoryOptions& set_ignore(std::vector<std::string> v) {
    ignore = std::move(v);
    return *this;
  }
};

class HubRepository {
 public:
  static absl::StatusOr<std::unique_ptr<HubRepository>> Open(const RepositoryOptions& options);

  // What Commit stages: git pathspecs (default the whole folder; ":(exclude)x" excludes), with
  // `force` also what .gitignore excludes, with `removals` also deleted files.
  struct Paths {
    std::vector<std::string> specs = {"."};
    bool force = false;
    bool removals = false;
  };
  absl::StatusOr<bool> Commit(const std::string& message, const Paths& paths);
  absl::StatusOr<bool> Commit(const std::string& message) { return Commit(message, Paths()); }
  absl::Status Push();
  const std::string& remote_url() const { return options_.remote_url; }
  const std::string& branch() const { return branch_; }

 private:
  explicit HubRepository(const RepositoryOptions& o)
      : options_(o), git_(o.folder, o.token, o.timeout_s) {}
  absl::Status StartFromRemoteBranch();
  absl::Status WriteGitFiles();

  RepositoryOptions options_;
  Git git_;
  std::string branch_ = "main";
};

}  // namespace loom::hub

#endif  // LOOM_HUB_REPOSITORY_H_
