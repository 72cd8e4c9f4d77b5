#include "base/fork_ranks.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <exception>
#include <iostream>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"

namespace loom::base {
namespace {

constexpr size_t kMaxMessage = 16 * 1024;

struct Rank {
  pid_t pid = -1;       // > 0 while it runs
  int message_fd = -1;  // read end of the pipe its error message comes through
  int outcome = kRankStillRunning;
  bool at_deadline = false;  // stopped because the deadline passed: its outcome stays so
};

// What the parent knows while it waits.
struct WaitState {
  absl::Status result;
  bool stopping = false;
  absl::Time kill_at = absl::InfiniteFuture();  // SIGKILL from then on
};

// Whatever the (finished) child wrote; the read end is non-blocking, so a grandchild that still
// holds the write end cannot make this wait.
std::string ReadMessage(int fd) {
  std::string out;
  char buf[512];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof(buf))) > 0) out.append(buf, static_cast<size_t>(n));
  return out;
}

absl::Status CallCatching(const std::function<absl::Status(int)>& fn, int rank) {
  try {
    return fn(rank);
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("threw: ", e.what()));
  } catch (...) {
    return absl::InternalError("threw a non-standard exception");
  }
}

// The child's whole life: its own process group, gone with the forking thread, fn, exit.
[[noreturn]] void RunChild(int rank, const std::function<absl::Status(int)>& fn, int message_fd) {
  ::setpgid(0, 0);
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);
  const absl::Status status = CallCatching(fn, rank);
  if (!status.ok()) {
    // At most what the pipe holds: the parent reads it only once this process has ended.
    const std::string message(status.message().substr(0, kMaxMessage));
    (void)!::write(message_fd, message.data(), message.size());
  }
  ::close(message_fd);
  std::cout.flush();
  std::fflush(nullptr);
  ::_exit(status.ok() ? 0 : 1);
}

void SignalRunning(const std::vector<Rank>& ranks, int signal) {
  for (const Rank& r : ranks) {
    if (r.pid > 0) ::kill(-r.pid, signal);
  }
}

// After a failed start: the ranks already started would wait for their peers forever.
absl::Status AbandonStart(std::vector<Rank>& ranks, const std::string& label,
                          const std::string& what) {
  for (Rank& r : ranks) {
    if (r.pid > 0) {
      ::kill(-r.pid, SIGKILL);
      ::waitpid(r.pid, nullptr, 0);
      r.pid = -1;
    }
    if (r.message_fd >= 0) ::close(r.message_fd);
    r.message_fd = -1;
  }
  return absl::InternalError(absl::StrCat(label, ": ", what, " failed"));
}

absl::Status StartRanks(const std::function<absl::Status(int)>& fn, const std::string& label,
                        std::vector<Rank>& ranks) {
  std::cout.flush();
  std::fflush(nullptr);  // nothing buffered is written twice by the children
  for (size_t r = 0; r < ranks.size(); ++r) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return AbandonStart(ranks, label, "pipe()");
    const pid_t pid = ::fork();
    if (pid < 0) {
      ::close(fds[0]);
      ::close(fds[1]);
      return AbandonStart(ranks, label, "fork()");
    }
    if (pid == 0) {
      ::close(fds[0]);
      RunChild(static_cast<int>(r), fn, fds[1]);
    }
    ::setpgid(pid, pid);  // also from here: no race with the child's own call
    ::close(fds[1]);
    ::fcntl(fds[0], F_SETFL, O_NONBLOCK);
    ranks[r].pid = pid;
    ranks[r].message_fd = fds[0];
  }
  return absl::OkStatus();
}

std::string HowItEnded(int wait_status) {
  return WIFSIGNALED(wait_status) ? absl::StrCat("killed by signal ", WTERMSIG(wait_status))
                                  : absl::StrCat("exit status ", WEXITSTATUS(wait_status));
}

void BeginStopping(const std::vector<Rank>& ranks, const ForkRanksOptions& options,
                   WaitState& state) {
  state.stopping = true;
  state.kill_at = absl::Now() + options.grace_period;
  SignalRunning(ranks, SIGTERM);
}

// Reaps rank r if it ended; the first failure stops the others. Returns whether it ended.
bool ReapRank(size_t r, std::vector<Rank>& ranks, const ForkRanksOptions& options,
              WaitState& state) {
  Rank& rank = ranks[r];
  int wait_status = 0;
  if (::waitpid(rank.pid, &wait_status, WNOHANG) != rank.pid) return false;
  rank.pid = -1;
  const std::string message = ReadMessage(rank.message_fd);
  ::close(rank.message_fd);
  rank.message_fd = -1;
  if (rank.at_deadline) return true;
  rank.outcome = WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : -WTERMSIG(wait_status);
  if (rank.outcome == 0 || state.stopping) return true;
  state.result = absl::InternalError(
      absl::StrCat(options.label, ": rank ", r, " failed (", HowItEnded(wait_status), ")",
                   message.empty() ? "" : ": ", message,
                   ranks.size() > 1 ? "; the other ranks were stopped" : ""));
  BeginStopping(ranks, options, state);
  return true;
}

void StopAtDeadline(std::vector<Rank>& ranks, const ForkRanksOptions& options, WaitState& state) {
  std::vector<size_t> running;
  for (size_t r = 0; r < ranks.size(); ++r) {
    if (ranks[r].pid <= 0) continue;
    running.push_back(r);
    ranks[r].at_deadline = true;
  }
  state.result = absl::DeadlineExceededError(
      absl::StrCat(options.label, ": rank", running.size() > 1 ? "s " : " ",
                   absl::StrJoin(running, ", "), " still running at the deadline (",
                   absl::FormatDuration(options.deadline), "); the ranks were stopped"));
  BeginStopping(ranks, options, state);
}

int Running(const std::vector<Rank>& ranks) {
  int n = 0;
  for (const Rank& r : ranks) n += r.pid > 0 ? 1 : 0;
  return n;
}

absl::Status WaitForRanks(std::vector<Rank>& ranks, const ForkRanksOptions& options) {
  const absl::Time deadline = absl::Now() + options.deadline;
  WaitState state;
  while (Running(ranks) > 0) {
    bool reaped = false;
    for (size_t r = 0; r < ranks.size(); ++r) {
      if (ranks[r].pid > 0) reaped = ReapRank(r, ranks, options, state) || reaped;
    }
    if (reaped) continue;
    if (!state.stopping && absl::Now() > deadline) StopAtDeadline(ranks, options, state);
    if (state.stopping && absl::Now() >= state.kill_at) SignalRunning(ranks, SIGKILL);
    absl::SleepFor(absl::Milliseconds(10));
  }
  return state.result;
}

}  // namespace

absl::Status ForkRanks(int n, const std::function<absl::Status(int rank)>& fn,
                       const ForkRanksOptions& options) {
  if (n < 1) return absl::InvalidArgumentError(absl::StrCat(options.label, ": no ranks (", n, ")"));
  std::vector<Rank> ranks(static_cast<size_t>(n));
  absl::Status status = StartRanks(fn, options.label, ranks);
  if (status.ok()) status = WaitForRanks(ranks, options);
  if (options.outcomes != nullptr) {
    options.outcomes->clear();
    for (const Rank& r : ranks) options.outcomes->push_back(r.outcome);
  }
  return status;
}

}  // namespace loom::base
