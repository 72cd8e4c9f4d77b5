#include "hub/repository.h"

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "base/status_macros.h"
#include "glog/logging.h"
#include "hub/hub_config.h"

namespace loom::hub {
namespace fs = std::filesystem;

const std::vector<std::string>& LfsPatterns() {
  static const auto* patterns = new std::vector<std::string>{
      "*.7z", "*.arrow", "*.bin", "*.bz2", "*.ckpt", "*.ftz", "*.gz", "*.h5", "*.joblib",
      "*.lfs.*", "*.mlmodel", "*.model", "*.msgpack", "*.npy", "*.npz", "*.onnx", "*.ot",
      "*.parquet", "*.pb", "*.pickle", "*.pkl", "*.pt", "*.pth", "*.rar", "*.safetensors",
      "saved_model/**/*", "*.tar.*", "*.tar", "*.tflite", "*.tgz", "*.wasm", "*.xz", "*.zip",
      "*.zst", "*tfevents*"};
  return *patterns;
}

namespace {

std::string ReadText(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The branch `git ls-remote --symref origin HEAD` names ("ref: refs/heads/<b>\tHEAD"), "" when
// the remote's HEAD does not resolve (an empty repository).
absl::StatusOr<std::string> AdvertisedHead(const Git& git) {
  ASSIGN_OR_RETURN(GitResult listed, git.Run({"ls-remote", "--symref", "origin", "HEAD"}));
  if (listed.exit_code != 0) return std::string();
  for (absl::string_view line : absl::StrSplit(listed.output, '\n')) {
    if (absl::ConsumePrefix(&line, "ref: refs/heads/") && absl::ConsumeSuffix(&line, "\tHEAD")) {
      return std::string(line);
    }
  }
  return std::string();
}

// The branch a plain `git clone` of the remote checks out: its HEAD; for an empty repository
// its unborn HEAD (`git init --bare` gives master or init.defaultBranch), learnt by cloning the
// empty remote into .git/ (git advertises unborn HEADs to clone, not to ls-remote); "main" — the
// Hub's — when neither says.
absl::StatusOr<std::string> RemoteDefaultBranch(const Git& git, const std::string& remote,
                                                const fs::path& folder) {
  ASSIGN_OR_RETURN(std::string head, AdvertisedHead(git));
  if (!head.empty()) return head;
  const fs::path probe = folder / ".git" / "loom-remote-head";
  std::error_code ec;
  fs::remove_all(probe, ec);
  // A remote that does not advertise its unborn HEAD (older protocols) leaves the clone on the
  // local default branch: a sentinel default tells that case apart.
  constexpr char kUnknown[] = "loom-remote-head-unknown";
  ASSIGN_OR_RETURN(GitResult cloned,
                   git.Run({"-c", absl::StrCat("init.defaultBranch=", kUnknown), "clone", "-q",
                            "--bare", remote, probe.string()}));
  if (cloned.exit_code == 0) {
    ASSIGN_OR_RETURN(GitResult ref, Git(probe.string(), std::nullopt)
                                        .Run({"symbolic-ref", "--short", "HEAD"}));
    head = ref.exit_code == 0 ? std::string(absl::StripAsciiWhitespace(ref.output)) : "";
  }
  fs::remove_all(probe, ec);
  return head.empty() || head == kUnknown ? std::string("main") : head;
}

}  // namespace

absl::StatusOr<std::unique_ptr<HubRepository>> HubRepository::Open(const RepositoryOptions& o) {
  std::error_code ec;
  fs::create_directories(o.folder, ec);
  if (ec) {
    return absl::InvalidArgumentError(
        absl::StrCat("--output_dir ", o.folder, ": cannot create it: ", ec.message()));
  }
  auto repo = absl::WrapUnique(new HubRepository(o));
  Git& git = repo->git_;
  const std::string remote = o.remote_url;
  if (fs::exists(fs::path(o.folder) / ".git")) {
    absl::StatusOr<GitResult> origin = git.Run({"remote", "get-url", "origin"});
    if (!origin.ok()) return origin.status();
    const std::string current(absl::StripAsciiWhitespace(origin->output));
    if (origin->exit_code != 0 || current != remote) {
      return absl::FailedPreconditionError(absl::StrCat(
          "--push_to_hub: ", o.folder, " is a git repository whose origin is '",
          origin->exit_code == 0 ? current : "(none)", "', not ", remote,
          "; use an output_dir that is a clone of the Hub repository, or a new folder"));
    }
    ASSIGN_OR_RETURN(GitResult branch, git.Run({"symbolic-ref", "--short", "HEAD"}));
    repo->branch_ = branch.exit_code == 0 ? std::string(absl::StripAsciiWhitespace(branch.output))
                                          : "main";
  } else {
    RETURN_IF_ERROR(git.Check({"init", "-q", "-b", "main"}, "creating the repository").status());
    RETURN_IF_ERROR(
        git.Check({"remote", "add", "origin", remote}, "setting the remote").status());
    RETURN_IF_ERROR(repo->StartFromRemoteBranch());
  }
  RETURN_IF_ERROR(git.Check({"lfs", "install", "--local"}, "installing git-lfs").status());
  RETURN_IF_ERROR(repo->WriteGitFiles());
  return repo;
}

absl::Status HubRepository::StartFromRemoteBranch() {
  ASSIGN_OR_RETURN(branch_, RemoteDefaultBranch(git_, options_.remote_url, options_.folder));
  if (branch_ != "main") {
    RETURN_IF_ERROR(
        git_.Check({"symbolic-ref", "HEAD", "refs/heads/" + branch_}, "naming the branch").status());
  }
  // A remote with history: start from its branch (its files stay).
  ASSIGN_OR_RETURN(GitResult fetched, git_.Run({"fetch", "-q", "origin", branch_}));
  if (fetched.exit_code != 0) return absl::OkStatus();
  const std::string upstream = "origin/" + branch_;
  RETURN_IF_ERROR(git_.Check({"reset", "-q", upstream},
                             absl::StrCat("starting from the remote's ", branch_, " branch"))
                      .status());
  return git_
      .Check({"branch", "-q", "--set-upstream-to=" + upstream},
             absl::StrCat("tracking the remote's ", branch_, " branch"))
      .status();
}

absl::Status HubRepository::WriteGitFiles() {
  const fs::path folder(options_.folder);
  if (!fs::exists(folder / ".gitattributes")) {
    std::ofstream out(folder / ".gitattributes");
    for (const std::string& p : LfsPatterns()) {
      out << p << " filter=lfs diff=lfs merge=lfs -text\n";
    }
    if (!out) return absl::InternalError(absl::StrCat("writing ", options_.folder, "/.gitattributes"));
  }
  const std::string existing = ReadText(folder / ".gitignore");
  std::set<std::string> have;
  for (absl::string_view line : absl::StrSplit(existing, '\n')) have.insert(std::string(line));
  std::string add;
  for (const std::string& line : options_.ignore) {
    if (have.count(line) == 0) add += line + "\n";
  }
  if (!add.empty()) {
    std::ofstream out(folder / ".gitignore", std::ios::app);
    if (!existing.empty() && existing.back() != '\n') out << "\n";
    out << add;
    if (!out) return absl::InternalError(absl::StrCat("writing ", options_.folder, "/.gitignore"));
  }
  return absl::OkStatus();
}

absl::StatusOr<bool> HubRepository::Commit(const std::string& message, const Paths& paths) {
  std::vector<std::string> add = {"add", paths.removals ? "--all" : "--ignore-removal"};
  if (paths.force) add.push_back("--force");
  add.push_back("--");
  add.insert(add.end(), paths.specs.begin(), paths.specs.end());
  RETURN_IF_ERROR(git_.Check(add, "staging the files").status());
  absl::StatusOr<GitResult> staged = git_.Run({"diff", "--cached", "--quiet"});
  if (!staged.ok()) return staged.status();
  if (staged->exit_code == 0) return false;  // nothing changed
  // The user's identity where git has one, else loom's.
  absl::StatusOr<GitResult> name = git_.Run({"config", "user.name"});
  std::vector<std::string> args;
  if (!name.ok() || name->exit_code != 0) {
    args = {"-c", "user.name=loom", "-c", "user.email=loom@localhost"};
  }
  args.insert(args.end(), {"commit", "-q", "-m", message});
  RETURN_IF_ERROR(git_.Check(args, "committing").status());
  return true;
}

absl::Status HubRepository::Push() {
  absl::Status pushed = git_
                            .Check({"push", "-q", "--set-upstream", "origin", "HEAD:" + branch_},
                                   absl::StrCat("pushing to ", options_.remote_url))
                            .status();
  if (!pushed.ok()) {
    pushed.SetPayload(kPushFailedPayload, absl::Cord(options_.remote_url));
    return pushed;
  }
  LOG(INFO) << "Pushed branch " << branch_ << " to " << RedactUrlCredentials(options_.remote_url);
  return pushed;
}

bool IsPushFailure(const absl::Status& status) {
  return status.GetPayload(kPushFailedPayload).has_value();
}

}  // namespace loom::hub
