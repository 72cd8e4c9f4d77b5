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

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/status_macros.h"
#include "launch/line_prefixer.h"

extern char** environ;

namespace loom::launch {
namespace {

constexpr int kForwardedSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

// Whether `pid` is in a stop (its state in /proc/<pid>/stat, the field after the command name,
// is T: stopped by a signal, or t: stopped by a tracer).
bool IsStopped(pid_t pid) {
  const std::string path = absl::StrCat("/proc/", pid, "/stat");
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[512];
  const ssize_t n = read(fd, buf, sizeof(buf) - 1);
  close(fd);
  if (n <= 0) return false;
  const std::string stat(buf, static_cast<size_t>(n));
  const size_t paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() &&
         (stat[paren + 2] == 'T' || stat[paren + 2] == 't');
}

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

// RunRanks' state: the children, their piped streams and the stop in progress.
class Supervisor {
 public:
  Supervisor(const std::vector<RankSpec>& ranks, const SupervisorOptions& options)
      : ranks_(ranks), options_(options), children_(ranks.size()), self_(getpid()) {}

  absl::StatusOr<RankRunResult> Run() {
    if (signals_.fd() < 0) {
      return absl::InternalError(absl::StrCat("signalfd: ", strerror(errno)));
    }
    for (size_t i = 0; i < ranks_.size(); ++i) {
      absl::Status started = StartRank(i);
      if (!started.ok()) {
        KillAndReapAll();
        return started;
      }
    }
    living_ = children_.size();
    while (living_ > 0 || !streams_.empty()) {
      if (!PollOnce()) break;
      if (!poll_error_.ok()) {
        KillAndReapAll();
        return poll_error_;
      }
    }
    // Leftover pipe readers (grandchildren that outlived their rank) and their groups.
    for (Stream& s : streams_) CloseStream(s);
    if (stopping_) SignalAll(SIGKILL);
    return result_;
  }

 private:
  void SignalAll(int sig) {
    for (const Child& c : children_) {
      if (c.pid > 0) kill(-c.pid, sig);
    }
  }

  void KillAndReapAll() {
    SignalAll(SIGKILL);
    for (Child& c : children_) {
      if (c.pid > 0 && !c.reaped) {
        while (waitpid(c.pid, nullptr, 0) < 0 && errno == EINTR) {
        }
        c.reaped = true;
      }
    }
    for (Stream& s : streams_) CloseStream(s);
  }

  // A stopped rank (SIGSTOP, SIGTSTP, a debugger) takes the signal only once continued.
  void BeginStop(int sig) {
    stopping_ = true;
    SignalAll(sig);
    SignalAll(SIGCONT);
    if (!kill_at_.has_value()) kill_at_ = absl::Now() + options_.grace_period;
  }

  // After rank `failed` failed: each other rank that is stopped, named (the usual reason the
  // failed rank's collectives timed out).
  void ReportStoppedRanks(size_t failed) {
    for (size_t i = 0; i < children_.size(); ++i) {
      if (i == failed || children_[i].reaped || !IsStopped(children_[i].pid)) continue;
      WriteAll(options_.stderr_fd,
               absl::StrCat("launch: rank ", ranks_[i].rank, " (local_rank ", ranks_[i].local_rank,
                            ", pid ", children_[i].pid,
                            ") is stopped (SIGSTOP, SIGTSTP or a debugger): the other ranks' "
                            "collectives time out waiting for it\n"));
    }
  }

  // Starts rank i: its log files, pipes, the fork and exec; an exec failure is an error.
  absl::Status StartRank(size_t i) {
    const RankSpec& spec = ranks_[i];
    std::vector<std::string> argv_strings = {spec.program};
    argv_strings.insert(argv_strings.end(), spec.args.begin(), spec.args.end());
    std::vector<std::string> env_strings = MergedEnvironment(spec.env);
    const std::vector<char*> argv = NullTerminated(argv_strings);
    const std::vector<char*> envp = NullTerminated(env_strings);
    // A stream goes through the launcher when it is prefixed, logged or kept off the console.
    const bool console_out = options_.console_stdout && spec.show_output;
    const bool console_err = options_.console_stderr && spec.show_output;
    const bool pipe_out = options_.prefix_stdout || !console_out || !spec.stdout_log.empty();
    const bool pipe_err = options_.prefix_stderr || !console_err || !spec.stderr_log.empty();
    int log_fds[2] = {-1, -1};
    RETURN_IF_ERROR(OpenLogFiles(spec, log_fds));
    int out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1}, status_pipe[2];
    if ((pipe_out && pipe2(out_pipe, O_CLOEXEC) != 0) ||
        (pipe_err && pipe2(err_pipe, O_CLOEXEC) != 0) || pipe2(status_pipe, O_CLOEXEC) != 0) {
      return absl::InternalError(absl::StrCat("pipe: ", strerror(errno)));
    }
    pid_t pid = fork();
    if (pid < 0) {
      return absl::ResourceExhaustedError(
          absl::StrCat("fork for rank ", spec.rank, ": ", strerror(errno)));
    }
    if (pid == 0) {
      ExecRank(argv, envp, self_, signals_.old_mask(), out_pipe[1], err_pipe[1], status_pipe[1]);
    }
    setpgid(pid, pid);  // also done by the child; whichever runs first wins the race
    children_[i].pid = pid;
    result_.pids.push_back(pid);
    close(status_pipe[1]);
    const std::string prefix = absl::StrCat("[rank ", spec.rank, "]:");
    AddStream(out_pipe, console_out ? options_.stdout_fd : -1, options_.prefix_stdout, prefix,
              log_fds[0]);
    AddStream(err_pipe, console_err ? options_.stderr_fd : -1, options_.prefix_stderr, prefix,
              log_fds[1]);
    return CheckExec(spec, status_pipe[0]);
  }

  static std::vector<char*> NullTerminated(std::vector<std::string>& strings) {
    std::vector<char*> out;
    for (std::string& s : strings) out.push_back(s.data());
    out.push_back(nullptr);
    return out;
  }

  static absl::Status OpenLogFiles(const RankSpec& spec, int log_fds[2]) {
    for (int k = 0; k < 2; ++k) {
      const std::string& path = k == 0 ? spec.stdout_log : spec.stderr_log;
      if (path.empty()) continue;
      log_fds[k] = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      if (log_fds[k] < 0) {
        int err = errno;
        if (k == 1 && log_fds[0] >= 0) close(log_fds[0]);
        return absl::FailedPreconditionError(absl::StrCat("cannot write the log file ", path,
                                                          " of rank ", spec.rank, ": ",
                                                          strerror(err), " (check --log_dir)"));
      }
    }
    return absl::OkStatus();
  }

  void AddStream(const int pipe_fds[2], int console_fd, bool prefixed, const std::string& prefix,
                 int log_fd) {
    if (pipe_fds[0] < 0) return;
    close(pipe_fds[1]);
    streams_.push_back({pipe_fds[0], console_fd,
                        prefixed ? std::make_unique<LinePrefixer>(prefix) : nullptr, log_fd});
  }

  // The child writes errno to the status pipe when exec fails; exec closes it otherwise.
  static absl::Status CheckExec(const RankSpec& spec, int status_fd) {
    int exec_errno = 0;
    ssize_t n;
    do {
      n = read(status_fd, &exec_errno, sizeof(exec_errno));
    } while (n < 0 && errno == EINTR);
    close(status_fd);
    if (n <= 0) return absl::OkStatus();
    return absl::FailedPreconditionError(absl::StrCat(
        "cannot run PROGRAM '", spec.program, "' for rank ", spec.rank, ": ", strerror(exec_errno),
        " (give a path to an executable, or a name found on PATH)"));
  }

  // How long poll() may wait: until the SIGKILL time or the end of draining; -1: no limit.
  int PollTimeoutMs(absl::Time now) const {
    absl::Time wake = absl::InfiniteFuture();
    if (kill_at_.has_value() && living_ > 0) wake = std::min(wake, *kill_at_);
    if (drain_until_.has_value()) wake = std::min(wake, *drain_until_);
    if (wake == absl::InfiniteFuture()) return -1;
    return static_cast<int>(
        std::max<int64_t>(0, absl::ToInt64Milliseconds(wake - now + absl::Milliseconds(1))));
  }

  // One round of the supervision loop. Returns false when it is over (pipes drained long enough
  // after the last rank); a poll() failure is left in poll_error_.
  bool PollOnce() {
    absl::Time now = absl::Now();
    if (living_ == 0) {
      if (!drain_until_.has_value()) drain_until_ = now + absl::Seconds(1);
      if (now >= *drain_until_) return false;
    }
    if (kill_at_.has_value() && now >= *kill_at_ && living_ > 0) {
      SignalAll(SIGKILL);
      kill_at_ = absl::InfiniteFuture();
    }
    std::vector<pollfd> fds = {{signals_.fd(), POLLIN, 0}};
    for (const Stream& s : streams_) fds.push_back({s.fd, POLLIN, 0});
    int ready = poll(fds.data(), fds.size(), PollTimeoutMs(now));
    if (ready < 0) {
      if (errno != EINTR) {
        poll_error_ = absl::InternalError(absl::StrCat("poll: ", strerror(errno)));
      }
      return true;
    }
    // Output first, so that a rank's last lines come before the launcher's message about it.
    ForwardOutput(fds);
    if (fds[0].revents != 0) HandleSignals();
    return true;
  }

  void ForwardOutput(const std::vector<pollfd>& fds) {
    for (size_t k = streams_.size(); k-- > 0;) {
      if (fds[k + 1].revents == 0) continue;
      Stream& s = streams_[k];
      char buf[65536];
      ssize_t n = read(s.fd, buf, sizeof(buf));
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (n > 0) {
        Forward(s, absl::string_view(buf, static_cast<size_t>(n)));
      } else {
        CloseStream(s);
        streams_.erase(streams_.begin() + static_cast<ptrdiff_t>(k));
      }
    }
  }

  void HandleSignals() {
    signalfd_siginfo info;
    while (read(signals_.fd(), &info, sizeof(info)) == sizeof(info)) {
      int sig = static_cast<int>(info.ssi_signo);
      if (sig == SIGCHLD) {
        ReapEndedRanks();
      } else {
        ForwardLauncherSignal(sig);
      }
    }
  }

  void ForwardLauncherSignal(int sig) {
    if (result_.received_signal.has_value()) {
      WriteAll(options_.stderr_fd,
               absl::StrCat("launch: received ", SignalName(sig), " again; killing all ranks\n"));
      SignalAll(SIGKILL);
      kill_at_ = absl::InfiniteFuture();
      return;
    }
    result_.received_signal = sig;
    if (!result_.failed_rank.has_value()) result_.exit_code = 128 + sig;
    WriteAll(options_.stderr_fd,
             absl::StrCat("launch: received ", SignalName(sig), "; forwarding it to all ranks\n"));
    BeginStop(sig);
  }

  // SIGCHLD: reap every rank that ended; the first failure stops the others.
  void ReapEndedRanks() {
    for (size_t i = 0; i < children_.size(); ++i) {
      Child& c = children_[i];
      if (c.reaped) continue;
      int wait_status = 0;
      pid_t r = waitpid(c.pid, &wait_status, WNOHANG);
      if (r != c.pid) continue;
      c.reaped = true;
      --living_;
      bool failed = !WIFEXITED(wait_status) || WEXITSTATUS(wait_status) != 0;
      if (!failed || stopping_) continue;
      const RankSpec& spec = ranks_[i];
      result_.failed_rank = spec.rank;
      result_.failure = DescribeWaitStatus(wait_status);
      result_.exit_code =
          WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : 128 + WTERMSIG(wait_status);
      WriteAll(options_.stderr_fd,
               absl::StrCat("launch: rank ", spec.rank, " (local_rank ", spec.local_rank, ", pid ",
                            c.pid, ") failed: ", result_.failure, "; stopping the other ranks\n"));
      ReportStoppedRanks(i);
      BeginStop(SIGTERM);
    }
  }

  const std::vector<RankSpec>& ranks_;
  const SupervisorOptions& options_;
  SignalState signals_;
  RankRunResult result_;
  std::vector<Child> children_;
  std::vector<Stream> streams_;
  const pid_t self_;
  size_t living_ = 0;
  std::optional<absl::Time> kill_at_;      // SIGKILL everything still alive at this time
  std::optional<absl::Time> drain_until_;  // stop reading pipes held open by grandchildren
  bool stopping_ = false;
  absl::Status poll_error_;
};

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
  Supervisor supervisor(ranks, options);
  return supervisor.Run();
}

}  // namespace loom::launch
