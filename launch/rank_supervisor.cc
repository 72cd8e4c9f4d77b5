#include "launch/rank_supervisor.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <map>
#include <memory>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "launch/line_prefixer.h"

extern char** environ;

namespace loom::launch {
namespace {

constexpr int kForwardedSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

void WriteAll(int fd, absl::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = write(fd, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return;  // e.g. EPIPE: the reader went away; drop the output
    }
    bytes.remove_prefix(static_cast<size_t>(n));
  }
}

std::string SignalName(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev != nullptr ? absl::StrCat("SIG", abbrev) : absl::StrCat("signal ", sig);
}

// One end of a pipe carrying a rank's stream, when that stream is prefixed.
struct Stream {
  int fd = -1;
  int out_fd = -1;                         // console; -1: none
  std::unique_ptr<LinePrefixer> prefixer;  // null: console gets the raw bytes
  int file_fd = -1;                        // log file; -1: none
};

void Forward(Stream& s, absl::string_view bytes) {
  if (s.file_fd >= 0) WriteAll(s.file_fd, bytes);
  if (s.out_fd < 0) return;
  WriteAll(s.out_fd, s.prefixer != nullptr ? s.prefixer->Append(bytes) : std::string(bytes));
}

void CloseStream(Stream& s) {
  if (s.out_fd >= 0 && s.prefixer != nullptr) WriteAll(s.out_fd, s.prefixer->Finish());
  close(s.fd);
  if (s.file_fd >= 0) close(s.file_fd);
}

struct Child {
  pid_t pid = -1;
  bool reaped = false;
};

// Restores the launcher's signal state when RunRanks returns.
class SignalState {
 public:
  SignalState() {
    sigset_t set;
    sigemptyset(&set);
    for (int sig : kForwardedSignals) sigaddset(&set, sig);
    sigaddset(&set, SIGCHLD);
    sigprocmask(SIG_BLOCK, &set, &old_mask_);
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &ignore, &old_pipe_);
    fd_ = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
  }
  ~SignalState() {
    if (fd_ >= 0) close(fd_);
    sigaction(SIGPIPE, &old_pipe_, nullptr);
    sigprocmask(SIG_SETMASK, &old_mask_, nullptr);
  }
  int fd() const { return fd_; }
  const sigset_t& old_mask() const { return old_mask_; }

 private:
  sigset_t old_mask_;
  struct sigaction old_pipe_ {};
  int fd_ = -1;
};

// In the child between fork and exec: only async-signal-safe calls.
[[noreturn]] void ExecRank(const std::vector<char*>& argv, const std::vector<char*>& envp,
                           pid_t parent, const sigset_t& old_mask, int out_pipe, int err_pipe,
                           int status_pipe) {
  setpgid(0, 0);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(127);  // the launcher died before prctl
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int sig : kForwardedSignals) sigaction(sig, &dfl, nullptr);
  sigaction(SIGPIPE, &dfl, nullptr);
  sigaction(SIGCHLD, &dfl, nullptr);
  sigprocmask(SIG_SETMASK, &old_mask, nullptr);
  if (out_pipe >= 0 && dup2(out_pipe, STDOUT_FILENO) < 0) _exit(127);
  if (err_pipe >= 0 && dup2(err_pipe, STDERR_FILENO) < 0) _exit(127);
  execvpe(argv[0], argv.data(), envp.data());
  int err = errno;
  ssize_t ignored = write(status_pipe, &err, sizeof(err));
  (void)ignored;
  _exit(127);
}

std::vector<std::string> MergedEnvironment(
    const std::vector<std::pair<std::string, std::string>>& overrides) {
  std::map<std::string, std::string> merged;
  std::vector<std::string> order;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string entry(*e);
    size_t eq = entry.find('=');
    if (eq == std::string::npos) continue;
    std::string name = entry.substr(0, eq);
    if (merged.emplace(name, entry.substr(eq + 1)).second) order.push_back(name);
  }
  for (const auto& [name, value] : overrides) {
    if (merged.count(name) == 0) order.push_back(name);
    merged[name] = value;
  }
  std::vector<std::string> out;
  out.reserve(order.size());
  for (const std::string& name : order) out.push_back(absl::StrCat(name, "=", merged[name]));
  return out;
}

}  // namespace

std::string DescribeWaitStatus(int wait_status) {
  if (WIFEXITED(wait_status)) return absl::StrCat("exited with code ", WEXITSTATUS(wait_status));
  if (WIFSIGNALED(wait_status)) {
    int sig = WTERMSIG(wait_status);
    return absl::StrCat("killed by ", SignalName(sig), " (signal ", sig, ")");
  }
  return absl::StrCat("ended with wait status ", wait_status);
}

absl::StatusOr<RankRunResult> RunRanks(const std::vector<RankSpec>& ranks,
                                       const SupervisorOptions& options) {
  SignalState signals;
  if (signals.fd() < 0) {
    return absl::InternalError(absl::StrCat("signalfd: ", strerror(errno)));
  }
  RankRunResult result;
  std::vector<Child> children(ranks.size());
  std::vector<Stream> streams;
  const pid_t self = getpid();

  auto signal_all = [&](int sig) {
    for (const Child& c : children) {
      if (c.pid > 0) kill(-c.pid, sig);
    }
  };
  auto kill_and_reap_all = [&]() {
    signal_all(SIGKILL);
    for (Child& c : children) {
      if (c.pid > 0 && !c.reaped) {
        while (waitpid(c.pid, nullptr, 0) < 0 && errno == EINTR) {
        }
        c.reaped = true;
      }
    }
    for (Stream& s : streams) CloseStream(s);
  };

  for (size_t i = 0; i < ranks.size(); ++i) {
    const RankSpec& spec = ranks[i];
    std::vector<std::string> argv_strings = {spec.program};
    argv_strings.insert(argv_strings.end(), spec.args.begin(), spec.args.end());
    std::vector<std::string> env_strings = MergedEnvironment(spec.env);
    std::vector<char*> argv, envp;
    for (std::string& s : argv_strings) argv.push_back(s.data());
    argv.push_back(nullptr);
    for (std::string& s : env_strings) envp.push_back(s.data());
    envp.push_back(nullptr);

    // A stream goes through the launcher when it is prefixed, logged or kept off the console.
    const bool console_out = options.console_stdout && spec.show_output;
    const bool console_err = options.console_stderr && spec.show_output;
    const bool pipe_out = options.prefix_stdout || !console_out || !spec.stdout_log.empty();
    const bool pipe_err = options.prefix_stderr || !console_err || !spec.stderr_log.empty();
    int log_fds[2] = {-1, -1};
    for (int k = 0; k < 2; ++k) {
      const std::string& path = k == 0 ? spec.stdout_log : spec.stderr_log;
      if (path.empty()) continue;
      log_fds[k] = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      if (log_fds[k] < 0) {
        int err = errno;
        if (k == 1 && log_fds[0] >= 0) close(log_fds[0]);
        kill_and_reap_all();
        return absl::FailedPreconditionError(absl::StrCat("cannot write the log file ", path,
                                                          " of rank ", spec.rank, ": ",
                                                          strerror(err), " (check --log_dir)"));
      }
    }
    int out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1}, status_pipe[2];
    if ((pipe_out && pipe2(out_pipe, O_CLOEXEC) != 0) ||
        (pipe_err && pipe2(err_pipe, O_CLOEXEC) != 0) || pipe2(status_pipe, O_CLOEXEC) != 0) {
      int err = errno;
      kill_and_reap_all();
      return absl::InternalError(absl::StrCat("pipe: ", strerror(err)));
    }
    pid_t pid = fork();
    if (pid < 0) {
      int err = errno;
      kill_and_reap_all();
      return absl::ResourceExhaustedError(
          absl::StrCat("fork for rank ", spec.rank, ": ", strerror(err)));
    }
    if (pid == 0) {
      ExecRank(argv, envp, self, signals.old_mask(), out_pipe[1], err_pipe[1], status_pipe[1]);
    }
    setpgid(pid, pid);  // also done by the child; whichever runs first wins the race
    children[i].pid = pid;
    result.pids.push_back(pid);
    close(status_pipe[1]);
    const std::string prefix = absl::StrCat("[rank ", spec.rank, "]:");
    if (out_pipe[0] >= 0) {
      close(out_pipe[1]);
      streams.push_back({out_pipe[0], console_out ? options.stdout_fd : -1,
                         options.prefix_stdout ? std::make_unique<LinePrefixer>(prefix) : nullptr,
                         log_fds[0]});
    }
    if (err_pipe[0] >= 0) {
      close(err_pipe[1]);
      streams.push_back({err_pipe[0], console_err ? options.stderr_fd : -1,
                         options.prefix_stderr ? std::make_unique<LinePrefixer>(prefix) : nullptr,
                         log_fds[1]});
    }
    int exec_errno = 0;
    ssize_t n;
    do {
      n = read(status_pipe[0], &exec_errno, sizeof(exec_errno));
    } while (n < 0 && errno == EINTR);
    close(status_pipe[0]);
    if (n > 0) {
      kill_and_reap_all();
      return absl::FailedPreconditionError(absl::StrCat(
          "cannot run PROGRAM '", spec.program, "' for rank ", spec.rank, ": ",
          strerror(exec_errno), " (give a path to an executable, or a name found on PATH)"));
    }
  }

  size_t living = children.size();
  std::optional<absl::Time> kill_at;      // SIGKILL everything still alive at this time
  std::optional<absl::Time> drain_until;  // stop reading pipes held open by grandchildren
  bool stopping = false;
  auto begin_stop = [&](int sig) {
    stopping = true;
    signal_all(sig);
    if (!kill_at.has_value()) kill_at = absl::Now() + options.grace_period;
  };

  while (living > 0 || !streams.empty()) {
    absl::Time now = absl::Now();
    if (living == 0) {
      if (!drain_until.has_value()) drain_until = now + absl::Seconds(1);
      if (now >= *drain_until) break;
    }
    if (kill_at.has_value() && now >= *kill_at && living > 0) {
      signal_all(SIGKILL);
      kill_at = absl::InfiniteFuture();
    }
    absl::Time wake = absl::InfiniteFuture();
    if (kill_at.has_value() && living > 0) wake = std::min(wake, *kill_at);
    if (drain_until.has_value()) wake = std::min(wake, *drain_until);
    int timeout_ms = -1;
    if (wake != absl::InfiniteFuture()) {
      timeout_ms = static_cast<int>(
          std::max<int64_t>(0, absl::ToInt64Milliseconds(wake - now + absl::Milliseconds(1))));
    }

    std::vector<pollfd> fds = {{signals.fd(), POLLIN, 0}};
    for (const Stream& s : streams) fds.push_back({s.fd, POLLIN, 0});
    int ready = poll(fds.data(), fds.size(), timeout_ms);
    if (ready < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      kill_and_reap_all();
      return absl::InternalError(absl::StrCat("poll: ", strerror(err)));
    }

    // Output first, so that a rank's last lines come before the launcher's message about it.
    for (size_t k = streams.size(); k-- > 0;) {
      if (fds[k + 1].revents == 0) continue;
      Stream& s = streams[k];
      char buf[65536];
      ssize_t n = read(s.fd, buf, sizeof(buf));
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (n > 0) {
        Forward(s, absl::string_view(buf, static_cast<size_t>(n)));
      } else {
        CloseStream(s);
        streams.erase(streams.begin() + static_cast<ptrdiff_t>(k));
      }
    }

    if (fds[0].revents == 0) continue;
    signalfd_siginfo info;
    while (read(signals.fd(), &info, sizeof(info)) == sizeof(info)) {
      int sig = static_cast<int>(info.ssi_signo);
      if (sig != SIGCHLD) {
        if (result.received_signal.has_value()) {
          WriteAll(options.stderr_fd, absl::StrCat("launch: received ", SignalName(sig),
                                                   " again; killing all ranks\n"));
          signal_all(SIGKILL);
          kill_at = absl::InfiniteFuture();
        } else {
          result.received_signal = sig;
          if (!result.failed_rank.has_value()) result.exit_code = 128 + sig;
          WriteAll(options.stderr_fd, absl::StrCat("launch: received ", SignalName(sig),
                                                   "; forwarding it to all ranks\n"));
          begin_stop(sig);
        }
        continue;
      }
      // SIGCHLD: reap every rank that ended.
      for (size_t i = 0; i < children.size(); ++i) {
        Child& c = children[i];
        if (c.reaped) continue;
        int wait_status = 0;
        pid_t r = waitpid(c.pid, &wait_status, WNOHANG);
        if (r != c.pid) continue;
        c.reaped = true;
        --living;
        bool failed = !WIFEXITED(wait_status) || WEXITSTATUS(wait_status) != 0;
        if (!failed || stopping) continue;
        const RankSpec& spec = ranks[i];
        result.failed_rank = spec.rank;
        result.failure = DescribeWaitStatus(wait_status);
        result.exit_code =
            WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : 128 + WTERMSIG(wait_status);
        WriteAll(options.stderr_fd, absl::StrCat("launch: rank ", spec.rank, " (local_rank ",
                                                 spec.local_rank, ", pid ", c.pid, ") failed: ",
                                                 result.failure, "; stopping the other ranks\n"));
        begin_stop(SIGTERM);
      }
    }
  }
  // Leftover pipe readers (grandchildren that outlived their rank) and their groups.
  for (Stream& s : streams) CloseStream(s);
  if (stopping) signal_all(SIGKILL);
  return result;
}

}  // namespace loom::launch
