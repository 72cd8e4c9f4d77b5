#include "accelerate/notebook_launcher.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "launch/free_port.h"

namespace loom::accelerate {
namespace {

std::string ReadAll(int fd) {
  std::string out;
  char buf[512];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof(buf))) > 0) out.append(buf, static_cast<size_t>(n));
  return out;
}

}  // namespace

absl::Status NotebookLauncher(const std::function<absl::Status()>& fn, int num_processes,
                              const NotebookLauncherOptions& options) {
  if (num_processes < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("NotebookLauncher: num_processes must be >= 1, got ", num_processes));
  }
  if (num_processes == 1) return fn();
  if (std::getenv("WORLD_SIZE") != nullptr || std::getenv("RANK") != nullptr) {
    return absl::FailedPreconditionError(
        "NotebookLauncher: this process already is a rank of a launched run (RANK / WORLD_SIZE "
        "are set); call the training function directly");
  }
  int port = options.master_port;
  if (port <= 0) {
    absl::StatusOr<int> free_port = launch::PickFreePort();
    if (!free_port.ok()) return free_port.status();
    port = *free_port;
  }
  struct Child {
    pid_t pid = -1;
    int message_fd = -1;  // the child's error message, if any
  };
  std::vector<Child> children(static_cast<size_t>(num_processes));
  // A failed start stops the ranks already started (they would wait for their peers).
  auto abandon = [&](const std::string& what) {
    for (Child& c : children) {
      if (c.pid > 0) {
        ::kill(-c.pid, SIGKILL);
        ::waitpid(c.pid, nullptr, 0);
      }
      if (c.message_fd >= 0) ::close(c.message_fd);
    }
    return absl::InternalError(absl::StrCat("NotebookLauncher: ", what, " failed"));
  };
  std::fflush(nullptr);  // nothing buffered is written twice by the children
  for (int rank = 0; rank < num_processes; ++rank) {
    int fds[2];
    if (::pipe(fds) != 0) return abandon("pipe()");
    const pid_t pid = ::fork();
    if (pid < 0) {
      ::close(fds[0]);
      ::close(fds[1]);
      return abandon("fork()");
    }
    if (pid == 0) {
      // Its own process group (the stop reaches whatever it started), and gone with the parent.
      ::setpgid(0, 0);
      ::prctl(PR_SET_PDEATHSIG, SIGTERM);
      ::close(fds[0]);
      const std::string r = std::to_string(rank), n = std::to_string(num_processes);
      ::setenv("RANK", r.c_str(), 1);
      ::setenv("LOCAL_RANK", r.c_str(), 1);
      ::setenv("WORLD_SIZE", n.c_str(), 1);
      ::setenv("LOCAL_WORLD_SIZE", n.c_str(), 1);
      ::setenv("GROUP_RANK", "0", 1);
      ::setenv("MASTER_ADDR", "127.0.0.1", 1);
      ::setenv("MASTER_PORT", std::to_string(port).c_str(), 1);
      absl::Status s = fn();
      if (!s.ok()) {
        const std::string m(s.message());
        (void)!::write(fds[1], m.data(), m.size());
      }
      ::close(fds[1]);
      std::fflush(nullptr);
      std::cout.flush();
      ::_exit(s.ok() ? 0 : 1);
    }
    ::setpgid(pid, pid);  // also from here: no race with the child's own call
    ::close(fds[1]);
    children[static_cast<size_t>(rank)] = {pid, fds[0]};
  }
  // Wait for all; the first failure stops the rest.
  absl::Status result = absl::OkStatus();
  int remaining = num_processes;
  bool stopping = false;
  auto stop_time = std::chrono::steady_clock::time_point::max();
  while (remaining > 0) {
    bool reaped = false;
    for (size_t rank = 0; rank < children.size(); ++rank) {
      Child& c = children[rank];
      if (c.pid <= 0) continue;
      int status = 0;
      // Only our ranks: other children of this process are not ours to reap.
      if (::waitpid(c.pid, &status, WNOHANG) != c.pid) continue;
      reaped = true;
      c.pid = -1;
      --remaining;
      const std::string message = ReadAll(c.message_fd);
      ::close(c.message_fd);
      const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
      if (!ok && result.ok() && !stopping) {
        const std::string how =
            WIFSIGNALED(status) ? absl::StrCat("killed by signal ", WTERMSIG(status))
                                : absl::StrCat("exit status ", WEXITSTATUS(status));
        result = absl::InternalError(absl::StrCat(
            "NotebookLauncher: rank ", rank, " failed (", how, ")",
            message.empty() ? std::string() : ": " + message, "; the other ranks were stopped"));
        stopping = true;
        stop_time = std::chrono::steady_clock::now() +
                    std::chrono::milliseconds(static_cast<int64_t>(options.grace_period_s * 1000));
        for (const Child& other : children) {
          if (other.pid > 0) ::kill(-other.pid, SIGTERM);
        }
      }
    }
    if (!reaped) {
      if (stopping && std::chrono::steady_clock::now() > stop_time) {
        for (const Child& c : children) {
          if (c.pid > 0) ::kill(-c.pid, SIGKILL);
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  return result;
}

}  // namespace loom::accelerate
