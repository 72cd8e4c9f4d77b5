#include "hub/git.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"

extern char** environ;

namespace loom::hub {
namespace {

constexpr char kTokenVariable[] = "LOOM_HUB_GIT_TOKEN";
// git runs this with "get", "store" or "erase"; only "get" answers.
constexpr char kHelper[] =
    "credential.helper=!f() { test \"$1\" = get || exit 0; echo username=loom; "
    "echo \"password=${LOOM_HUB_GIT_TOKEN}\"; }; f";

}  // namespace

std::string Git::Mask(std::string text) const {
  if (token_ && !token_->empty()) text = absl::StrReplaceAll(text, {{*token_, "<HUB_TOKEN>"}});
  return text;
}

namespace {

// Starts git with stdin from /dev/null and stdout and stderr into `out_fd`; posix_spawnp's
// result. git gets SIGPIPE's default disposition back: loom's ranks ignore it
// (process_group.h), and an ignored signal would be inherited (Python's subprocess restores it
// the same way).
int SpawnGit(std::vector<char*>& argv, std::vector<char*>& env, int out_fd, pid_t* pid) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_fd, 1);
  posix_spawn_file_actions_adddup2(&actions, out_fd, 2);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t default_signals;
  sigemptyset(&default_signals);
  sigaddset(&default_signals, SIGPIPE);
  posix_spawnattr_setsigdefault(&attr, &default_signals);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF);
  const int rc = ::posix_spawnp(pid, "git", &actions, &attr, argv.data(), env.data());
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&actions);
  return rc;
}

}  // namespace

absl::StatusOr<GitResult> Git::Run(const std::vector<std::string>& args) const {
  std::vector<std::string> argv = {"git", "-C", folder_};
  if (token_) {
    // An empty helper first resets any configured one, then ours.
    argv.insert(argv.end(), {"-c", "credential.helper=", "-c", kHelper});
  }
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string var = *e;
    if (var.rfind("GIT_TERMINAL_PROMPT=", 0) == 0 || var.rfind("LC_ALL=", 0) == 0 ||
        var.rfind(std::string(kTokenVariable) + "=", 0) == 0) {
      continue;
    }
    env.push_back(var);
  }
  env.push_back("GIT_TERMINAL_PROMPT=0");
  env.push_back("LC_ALL=C");
  if (token_) env.push_back(absl::StrCat(kTokenVariable, "=", *token_));
  std::vector<char*> c_argv, c_env;
  for (std::string& a : argv) c_argv.push_back(a.data());
  c_argv.push_back(nullptr);
  for (std::string& e : env) c_env.push_back(e.data());
  c_env.push_back(nullptr);

  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
    return absl::InternalError(absl::StrCat("pipe: ", std::strerror(errno)));
  }
  pid_t pid = 0;
  const int rc = SpawnGit(c_argv, c_env, pipe_fds[1], &pid);
  ::close(pipe_fds[1]);
  if (rc != 0) {
    ::close(pipe_fds[0]);
    return absl::FailedPreconditionError(
        absl::StrCat("cannot run git (", std::strerror(rc),
                     "); install git and git-lfs (./bazelw installs them)"));
  }
  GitResult result;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s_);
  bool timed_out = false;
  char buf[4096];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - std::chrono::steady_clock::now())
                          .count();
    if (left <= 0) {
      timed_out = true;
      ::kill(pid, SIGKILL);
      break;
    }
    pollfd p = {pipe_fds[0], POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 1000)));
    if (ready < 0 && errno != EINTR) break;
    if (ready <= 0) continue;
    const ssize_t n = ::read(pipe_fds[0], buf, sizeof(buf));
    if (n <= 0) break;
    result.output.append(buf, static_cast<size_t>(n));
  }
  ::close(pipe_fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.output = Mask(std::move(result.output));
  if (timed_out) {
    return absl::DeadlineExceededError(absl::StrCat("git ", Mask(absl::StrJoin(args, " ")),
                                                    " did not finish within ", timeout_s_, " s in ",
                                                    folder_));
  }
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

absl::StatusOr<std::string> Git::Check(const std::vector<std::string>& args,
                                       const std::string& what) const {
  absl::StatusOr<GitResult> r = Run(args);
  if (!r.ok())
    return absl::Status(r.status().code(), absl::StrCat(what, ": ", r.status().message()));
  if (r->exit_code != 0) {
    return absl::UnavailableError(absl::StrCat(what, " (git ", Mask(absl::StrJoin(args, " ")),
                                               " in ", folder_, ", exit ", r->exit_code,
                                               "): ", r->output));
  }
  return r->output;
}

}  // namespace loom::hub
