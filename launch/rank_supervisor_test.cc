// In-process tests of RunRanks with /bin/sh ranks; tests/launch/launch_test.cc drives the whole
// binary with signals from outside.
#include "launch/rank_supervisor.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::launch {
namespace {

using ::loom::base::testing::StatusIs;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;

int WaitStatusOf(void (*body)()) {
  pid_t pid = fork();
  if (pid == 0) {
    body();
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return status;
}

TEST(DescribeWaitStatusTest, ExitCodesAndSignals) {
  EXPECT_EQ(DescribeWaitStatus(WaitStatusOf([] { _exit(3); })), "exited with code 3");
  EXPECT_EQ(DescribeWaitStatus(WaitStatusOf([] { raise(SIGKILL); })),
            "killed by SIGKILL (signal 9)");
  EXPECT_EQ(DescribeWaitStatus(WaitStatusOf([] { raise(SIGSEGV); })),
            "killed by SIGSEGV (signal 11)");
}

// Output files standing in for the launcher's stdout and stderr.
class RunRanksTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string dir = getenv("TEST_TMPDIR");
    out_path_ = dir + "/out." + ::testing::UnitTest::GetInstance()->current_test_info()->name();
    err_path_ = out_path_ + ".err";
    options_.stdout_fd = open(out_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    options_.stderr_fd = open(err_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    ASSERT_GE(options_.stdout_fd, 0);
    ASSERT_GE(options_.stderr_fd, 0);
  }
  void TearDown() override {
    close(options_.stdout_fd);
    close(options_.stderr_fd);
  }
  static std::string Read(const std::string& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  static RankSpec Sh(int rank, const std::string& script) {
    return {rank, rank, "/bin/sh", {"-c", script}, {{"MY_RANK", absl::StrCat(rank)}}};
  }

  SupervisorOptions options_;
  std::string out_path_, err_path_;
};

TEST_F(RunRanksTest, PrefixesEachStreamAndPassesTheEnvironment) {
  options_.prefix_stdout = options_.prefix_stderr = true;
  setenv("LOOM_TEST_VAR", "outer", 1);
  std::vector<RankSpec> ranks = {Sh(0, "echo out $MY_RANK; echo err $MY_RANK >&2"),
                                 Sh(1, "printf 'a\\nb'; echo $LOOM_TEST_VAR >&2")};
  ranks[1].env.emplace_back("LOOM_TEST_VAR", "inner");
  ASSERT_OK_AND_ASSIGN(RankRunResult result, RunRanks(ranks, options_));
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_FALSE(result.failed_rank.has_value());
  EXPECT_EQ(result.pids.size(), 2u);
  std::vector<std::string> out = absl::StrSplit(Read(out_path_), '\n');
  EXPECT_THAT(out, UnorderedElementsAre("[rank 0]:out 0", "[rank 1]:a", "[rank 1]:b", ""));
  std::vector<std::string> err = absl::StrSplit(Read(err_path_), '\n');
  EXPECT_THAT(err, UnorderedElementsAre("[rank 0]:err 0", "[rank 1]:inner", ""));
}

TEST_F(RunRanksTest, LogFilesGetRawBytesWithOrWithoutTheConsole) {
  options_.prefix_stdout = true;
  options_.console_stderr = false;
  std::vector<RankSpec> ranks = {Sh(0, "echo out; printf 'err'; printf 'x' >&2")};
  ranks[0].stdout_log = out_path_ + ".rank0.stdout";
  ranks[0].stderr_log = out_path_ + ".rank0.stderr";
  ASSERT_OK_AND_ASSIGN(RankRunResult result, RunRanks(ranks, options_));
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_EQ(Read(out_path_), "[rank 0]:out\n[rank 0]:err\n");
  EXPECT_EQ(Read(ranks[0].stdout_log), "out\nerr");
  EXPECT_EQ(Read(err_path_), "");
  EXPECT_EQ(Read(ranks[0].stderr_log), "x");

  ranks[0].stdout_log = "/no/such/dir/stdout.log";
  EXPECT_THAT(RunRanks(ranks, options_),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("cannot write the log file /no/such/dir/stdout.log of rank 0")));
}

TEST_F(RunRanksTest, FirstFailureWinsAndStopsTheOthers) {
  options_.grace_period = absl::Seconds(5);
  std::vector<RankSpec> ranks = {Sh(0, "exec sleep 30"), Sh(1, "exit 4"), Sh(2, "exec sleep 30")};
  absl::Time start = absl::Now();
  ASSERT_OK_AND_ASSIGN(RankRunResult result, RunRanks(ranks, options_));
  EXPECT_LT(absl::Now() - start, absl::Seconds(4));  // SIGTERM ended the sleeps, not SIGKILL
  EXPECT_EQ(result.exit_code, 4);
  EXPECT_EQ(result.failed_rank, 1);
  EXPECT_EQ(result.failure, "exited with code 4");
  EXPECT_EQ(Read(err_path_), absl::StrCat("launch: rank 1 (local_rank 1, pid ", result.pids[1],
                                          ") failed: exited with code 4; stopping the other "
                                          "ranks\n"));
  for (pid_t pid : result.pids) EXPECT_NE(kill(pid, 0), 0) << pid;
}

TEST_F(RunRanksTest, UnrunnableProgramIsAnErrorAndNothingIsLeft) {
  std::vector<RankSpec> ranks = {Sh(0, "exec sleep 30"), {1, 1, "/no/such/binary", {}, {}}};
  EXPECT_THAT(RunRanks(ranks, options_),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("cannot run PROGRAM '/no/such/binary' for rank 1: No such file")));
  // The rank already started was killed and reaped: this process has no children left.
  EXPECT_EQ(waitpid(-1, nullptr, WNOHANG), -1);
}

TEST_F(RunRanksTest, SignalStateIsRestored) {
  sigset_t before, after;
  sigprocmask(SIG_SETMASK, nullptr, &before);
  ASSERT_OK(RunRanks({Sh(0, "true")}, options_).status());
  sigprocmask(SIG_SETMASK, nullptr, &after);
  for (int sig : {SIGINT, SIGTERM, SIGCHLD, SIGHUP, SIGQUIT}) {
    EXPECT_EQ(sigismember(&before, sig), sigismember(&after, sig)) << sig;
  }
  struct sigaction pipe_action;
  sigaction(SIGPIPE, nullptr, &pipe_action);
  EXPECT_EQ(pipe_action.sa_handler, SIG_DFL);
}

}  // namespace
}  // namespace loom::launch
