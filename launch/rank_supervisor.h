// Runs the ranks of one node as child processes and supervises them like torchrun's local agent
// (without elastic restarts).
//
// Contract of RunRanks:
//   * Every rank is started with execvp(program, args) and the launcher's environment plus
//     RankSpec::env (overriding same-named variables). Each child leads its own process group, and
//     gets PR_SET_PDEATHSIG=SIGKILL, so it dies when the launcher dies, even by SIGKILL.
//     A program that cannot be executed is an error (FailedPrecondition naming the program and
//     the rank); ranks already started are killed first.
//   * Output: a rank's stdout/stderr go straight to the launcher's, unless prefixing is asked for
//     that stream; then each line is written as "[rank N]:line" in one write(), so lines of
//     different ranks never interleave mid-line. A stream with a log file (RankSpec::stdout_log /
//     stderr_log, created or truncated; an unwritable one is an error naming it) is also copied
//     there unprefixed, or only there when console_stdout / console_stderr is false.
//   * SIGINT, SIGTERM, SIGHUP and SIGQUIT received by the launcher are forwarded to every rank's
//     process group; a second such signal sends SIGKILL at once. The result's exit_code is then
//     128 + the first signal.
//   * When a rank exits non-zero or is killed by a signal (the first such rank), the launcher
//     writes "launch: rank R (local_rank L, pid P) failed: <how>" to stderr_fd, and names each
//     other rank that is stopped (SIGSTOP, SIGTSTP, a debugger: "launch: rank R ... is
//     stopped ..."), since a stopped rank makes its peers' collectives time out without failing
//     itself. It then sends SIGTERM (and SIGCONT, so stopped ranks take it) to every process
//     group, and SIGKILL to those still alive `grace_period` later. exit_code is that
//     rank's exit code, or 128 + signal.
//   * Returns once every rank has been reaped (no zombies, no processes of the ranks left).
//   * Blocks SIGINT/SIGTERM/SIGHUP/SIGQUIT/SIGCHLD and ignores SIGPIPE while running (restored on
//     return); meant for a single-threaded launcher main.
//
// Example:
//   std::vector<RankSpec> ranks = ...;  // one per local rank
//   ASSIGN_OR_RETURN(RankRunResult result, RunRanks(ranks, {.prefix_stdout = true}));
//   return result.exit_code;
#ifndef LOOM_LAUNCH_RANK_SUPERVISOR_H_
#define LOOM_LAUNCH_RANK_SUPERVISOR_H_

#include <sys/types.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace loom::launch {

struct RankSpec {
  int rank = 0;        // global rank: messages and the "[rank N]:" prefix
  int local_rank = 0;  // messages
  std::string program;
  std::vector<std::string> args;  // after the program name
  std::vector<std::pair<std::string, std::string>> env;
  std::string stdout_log;  // non-empty: also write the rank's stdout (raw) to this file
  std::string stderr_log;
  bool show_output = true;  // false: nothing of this rank on the console (log files still)
};

struct SupervisorOptions {
  bool prefix_stdout = false;
  bool prefix_stderr = false;
  bool console_stdout = true;  // false: the ranks' stdout goes only to RankSpec::stdout_log
  bool console_stderr = true;
  absl::Duration grace_period = absl::Seconds(5);
  int stdout_fd = 1;  // the launcher's stdout (ranks' stdout, prefixed or inherited)
  int stderr_fd = 2;  // the launcher's stderr (ranks' stderr and the launcher's messages)
};

struct RankRunResult {
  int exit_code = 0;                   // 0, the failed rank's code, or 128 + signal
  std::optional<int> failed_rank;      // the first rank that failed
  std::string failure;                 // e.g. "exited with code 3", "killed by SIGKILL (signal 9)"
  std::optional<int> received_signal;  // the first signal the launcher received
  std::vector<pid_t> pids;             // in RankSpec order
};

absl::StatusOr<RankRunResult> RunRanks(const std::vector<RankSpec>& ranks,
                                       const SupervisorOptions& options);

// "exited with code 3" / "killed by SIGKILL (signal 9)" for a waitpid status.
std::string DescribeWaitStatus(int wait_status);

}  // namespace loom::launch

#endif  // LOOM_LAUNCH_RANK_SUPERVISOR_H_
