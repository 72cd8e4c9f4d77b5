// End-to-end tests of //tools:launch: the real binary starts real ranks (rank_helper) and the
// tests send real signals. Every wait is bounded, so a hang fails instead of blocking the suite.
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "threads/cpu_topology.h"
#include "gtest/gtest.h"

namespace {

using ::testing::HasSubstr;
using ::testing::UnorderedElementsAreArray;

constexpr char kLaunch[] = "tools/launch";
constexpr char kHelper[] = "tests/launch/rank_helper";

// A running //tools:launch with its stdout and stderr captured.
class Launch {
 public:
  explicit Launch(const std::vector<std::string>& args,
                  const std::vector<std::pair<std::string, std::string>>& env = {}) {
    int out[2], err[2];
    EXPECT_EQ(pipe2(out, O_CLOEXEC), 0);
    EXPECT_EQ(pipe2(err, O_CLOEXEC), 0);
    std::vector<std::string> argv_s = {kLaunch};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    pid_ = fork();
    if (pid_ == 0) {
      dup2(out[1], 1);
      dup2(err[1], 2);
      for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
      std::vector<char*> argv;
      for (std::string& s : argv_s) argv.push_back(s.data());
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
    close(out[1]);
    close(err[1]);
    out_fd_ = out[0];
    err_fd_ = err[0];
    start_ = absl::Now();
  }
  ~Launch() {
    if (pid_ > 0 && !done_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (out_fd_ >= 0) close(out_fd_);
    if (err_fd_ >= 0) close(err_fd_);
  }

  pid_t pid() const { return pid_; }

  // Reads output until launch closes it and exits, for at most `timeout`. Returns false on
  // timeout (launch is then killed).
  bool Wait(absl::Duration timeout = absl::Seconds(20)) {
    absl::Time deadline = absl::Now() + timeout;
    while (out_fd_ >= 0 || err_fd_ >= 0) {
      std::vector<pollfd> fds;
      if (out_fd_ >= 0) fds.push_back({out_fd_, POLLIN, 0});
      if (err_fd_ >= 0) fds.push_back({err_fd_, POLLIN, 0});
      int ms = static_cast<int>(absl::ToInt64Milliseconds(deadline - absl::Now()));
      if (ms <= 0 || poll(fds.data(), fds.size(), ms) == 0) return TimedOut();
      for (const pollfd& p : fds) {
        if (p.revents == 0) continue;
        char buf[4096];
        ssize_t n = read(p.fd, buf, sizeof(buf));
        std::string& sink = p.fd == out_fd_ ? out_ : err_;
        if (n > 0) {
          sink.append(buf, static_cast<size_t>(n));
        } else {
          close(p.fd);
          (p.fd == out_fd_ ? out_fd_ : err_fd_) = -1;
        }
      }
    }
    while (absl::Now() < deadline) {
      int status;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        done_ = true;
        status_ = status;
        elapsed_ = absl::Now() - start_;
        return true;
      }
      absl::SleepFor(absl::Milliseconds(5));
    }
    return TimedOut();
  }

  int exit_code() const { return WIFEXITED(status_) ? WEXITSTATUS(status_) : -WTERMSIG(status_); }
  const std::string& out() const { return out_; }
  // stderr without the launcher's OMP_NUM_THREADS note (DefaultsAndOmpNumThreads checks it).
  std::string err() const {
    const std::string fence = "*****************************************\n";
    const size_t start = err_.find(fence + "Setting OMP_NUM_THREADS");
    if (start == std::string::npos) return err_;
    const size_t end = err_.find(fence, start + fence.size());
    return err_.substr(0, start) + err_.substr(end + fence.size());
  }
  const std::string& raw_err() const { return err_; }
  absl::Duration elapsed() const { return elapsed_; }

 private:
  bool TimedOut() {
    ADD_FAILURE() << "launch did not finish in time; stdout:\n" << out_ << "\nstderr:\n" << err_;
    return false;
  }

  pid_t pid_ = -1;
  int out_fd_ = -1, err_fd_ = -1;
  bool done_ = false;
  int status_ = 0;
  std::string out_, err_;
  absl::Time start_;
  absl::Duration elapsed_;
};

std::string TempDir() {
  std::string tmpl =
      absl::StrCat(getenv("TEST_TMPDIR") ? getenv("TEST_TMPDIR") : "/tmp", "/launchXXXXXX");
  char* dir = mkdtemp(tmpl.data());
  EXPECT_NE(dir, nullptr);
  return tmpl;
}

// Waits (at most 10 s) for DIR/pid.R of `ranks` and returns the pids.
std::vector<pid_t> RankPids(const std::string& dir, std::vector<int> ranks) {
  std::vector<pid_t> pids;
  absl::Time deadline = absl::Now() + absl::Seconds(10);
  for (int r : ranks) {
    std::string path = absl::StrCat(dir, "/pid.", r);
    while (access(path.c_str(), F_OK) != 0 && absl::Now() < deadline) {
      absl::SleepFor(absl::Milliseconds(5));
    }
    std::ifstream in(path);
    pid_t pid = 0;
    in >> pid;
    EXPECT_GT(pid, 0) << "rank " << r << " never wrote " << path;
    pids.push_back(pid);
  }
  return pids;
}

bool Alive(pid_t pid) { return kill(pid, 0) == 0 || errno != ESRCH; }

bool Exists(const std::string& path) { return access(path.c_str(), F_OK) == 0; }

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines = absl::StrSplit(text, '\n');
  if (!lines.empty() && lines.back().empty()) lines.pop_back();
  return lines;
}

TEST(LaunchTest, EachRankSeesTorchrunsEnvironment) {
  Launch launch({"--nproc_per_node", "2", "--nnodes=3", "--node-rank", "2", "--master_addr",
                 "10.1.2.3", "--master_port=4321", kHelper, "env", "--flag", "a b"},
                {{"OMP_NUM_THREADS", ""}, {"CUDA_VISIBLE_DEVICES", "7"}});
  ASSERT_TRUE(launch.Wait());
  EXPECT_EQ(launch.exit_code(), 0) << launch.err();
  std::vector<std::string> expected;
  for (int local = 0; local < 2; ++local) {
    std::string r = absl::StrCat("rank ", 4 + local, ": ");
    for (std::string kv :
         {absl::StrCat("RANK=", 4 + local), absl::StrCat("LOCAL_RANK=", local),
          std::string("WORLD_SIZE=6"), std::string("LOCAL_WORLD_SIZE=2"),
          std::string("GROUP_RANK=2"), std::string("MASTER_ADDR=10.1.2.3"),
          std::string("MASTER_PORT=4321"), std::string("OMP_NUM_THREADS="),
          std::string("CUDA_VISIBLE_DEVICES=7"), std::string("TORCHELASTIC_RUN_ID=<unset>"),
          std::string("args [--flag] [a b]")}) {
      expected.push_back(r + kv);
    }
  }
  EXPECT_THAT(Lines(launch.out()), UnorderedElementsAreArray(expected));
  EXPECT_EQ(launch.err(), "");
}

TEST(LaunchTest, DefaultsAndOmpNumThreads) {
  Launch launch({"--nproc_per_node=2", kHelper, "env"});
  ASSERT_TRUE(launch.Wait());
  EXPECT_EQ(launch.exit_code(), 0);
  EXPECT_THAT(launch.out(), HasSubstr("rank 1: MASTER_ADDR=127.0.0.1\n"));
  EXPECT_THAT(launch.out(), HasSubstr("rank 1: MASTER_PORT=29500\n"));
  EXPECT_THAT(launch.out(), HasSubstr("rank 0: WORLD_SIZE=2\n"));
  if (getenv("OMP_NUM_THREADS") == nullptr) {
    // Each rank's share of the physical cores, and torchrun's note about it.
    const int cores = loom::threads::DetectCpuTopology().physical_cores;
    const int share = std::max(1, cores / 2);
    EXPECT_THAT(launch.out(), HasSubstr(absl::StrCat("rank 1: OMP_NUM_THREADS=", share, "\n")));
    EXPECT_THAT(launch.raw_err(),
                HasSubstr(absl::StrCat("Setting OMP_NUM_THREADS environment variable for each "
                                       "process to be ",
                                       share, " (", cores, " physical cores / 2 processes)")));
  }
}

TEST(LaunchTest, StandalonePicksAPort) {
  Launch launch({"--standalone", kHelper, "env"});
  ASSERT_TRUE(launch.Wait());
  EXPECT_EQ(launch.exit_code(), 0);
  EXPECT_THAT(launch.out(), HasSubstr("rank 0: MASTER_PORT="));
  EXPECT_THAT(launch.out(), ::testing::Not(HasSubstr("MASTER_PORT=29500")));
}

TEST(LaunchTest, FailedRankStopsTheOthersAndSetsTheExitCode) {
  std::string dir = TempDir();
  Launch launch({"--nproc_per_node=3", kHelper, "fail", dir, "1", "7"});
  std::vector<pid_t> pids = RankPids(dir, {0, 1, 2});
  ASSERT_TRUE(launch.Wait(absl::Seconds(10)));
  EXPECT_EQ(launch.exit_code(), 7);
  EXPECT_LT(launch.elapsed(), absl::Seconds(5));
  EXPECT_EQ(launch.out(), "rank 1 failing\n");
  EXPECT_EQ(launch.err(), absl::StrCat("launch: rank 1 (local_rank 1, pid ", pids[1],
                                       ") failed: exited with code 7; stopping the other ranks\n"));
  // The others got SIGTERM (their handler records it) and nothing is left.
  EXPECT_TRUE(Exists(dir + "/term.0"));
  EXPECT_TRUE(Exists(dir + "/term.2"));
  EXPECT_FALSE(Exists(dir + "/term.1"));
  for (pid_t pid : pids) EXPECT_FALSE(Alive(pid)) << pid;
}

TEST(LaunchTest, RankKilledBySigkillMakesLaunchExitNamingTheRank) {
  std::string dir = TempDir();
  Launch launch({"--nproc_per_node=2", "--nnodes=2", "--node_rank=1", kHelper, "sleep", dir});
  std::vector<pid_t> pids = RankPids(dir, {2, 3});
  ASSERT_EQ(kill(pids[1], SIGKILL), 0);
  ASSERT_TRUE(launch.Wait(absl::Seconds(10)));
  EXPECT_EQ(launch.exit_code(), 128 + SIGKILL);
  EXPECT_LT(launch.elapsed(), absl::Seconds(10));
  EXPECT_EQ(launch.err(),
            absl::StrCat("launch: rank 3 (local_rank 1, pid ", pids[1],
                         ") failed: killed by SIGKILL (signal 9); stopping the other ranks\n"));
  EXPECT_TRUE(Exists(dir + "/term.2"));
  for (pid_t pid : pids) EXPECT_FALSE(Alive(pid)) << pid;
}

// A stopped rank does not fail; its peers' collectives time out. When one of them fails, the
// launcher names the stopped rank, and the SIGTERM reaches it (SIGCONT follows) so it ends
// within the grace period like the others, its handler run.
TEST(LaunchTest, AStoppedRankIsNamedAndStillTakesTheStop) {
  std::string dir = TempDir();
  Launch launch({"--nproc_per_node=3", "--grace_period_s=5", kHelper, "sleep", dir});
  std::vector<pid_t> pids = RankPids(dir, {0, 1, 2});
  ASSERT_EQ(kill(pids[2], SIGSTOP), 0);
  bool stopped = false;  // SIGSTOP takes effect asynchronously: wait until /proc says so
  for (int i = 0; i < 500 && !stopped; ++i) {
    std::ifstream stat("/proc/" + std::to_string(pids[2]) + "/stat");
    std::string all((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    const size_t paren = all.rfind(')');
    stopped = paren != std::string::npos && paren + 2 < all.size() && all[paren + 2] == 'T';
    if (!stopped) absl::SleepFor(absl::Milliseconds(10));
  }
  ASSERT_TRUE(stopped);
  ASSERT_EQ(kill(pids[0], SIGKILL), 0);
  ASSERT_TRUE(launch.Wait(absl::Seconds(10)));
  EXPECT_EQ(launch.exit_code(), 128 + SIGKILL);
  EXPECT_LT(launch.elapsed(), absl::Seconds(4));  // well inside the 5 s grace: no SIGKILL needed
  EXPECT_EQ(launch.err(),
            absl::StrCat("launch: rank 0 (local_rank 0, pid ", pids[0],
                         ") failed: killed by SIGKILL (signal 9); stopping the other ranks\n"
                         "launch: rank 2 (local_rank 2, pid ", pids[2],
                         ") is stopped (SIGSTOP, SIGTSTP or a debugger): the other ranks' "
                         "collectives time out waiting for it\n"));
  EXPECT_TRUE(Exists(dir + "/term.1"));
  EXPECT_TRUE(Exists(dir + "/term.2"));
  for (pid_t pid : pids) EXPECT_FALSE(Alive(pid)) << pid;
}

TEST(LaunchTest, RanksIgnoringSigtermAreKilledAfterTheGracePeriod) {
  std::string dir = TempDir();
  Launch launch(
      {"--nproc_per_node=2", "--grace_period_s=0.5", kHelper, "sleep_ignoring_term", dir});
  std::vector<pid_t> pids = RankPids(dir, {0, 1});
  absl::Time killed = absl::Now();
  ASSERT_EQ(kill(pids[0], SIGKILL), 0);
  ASSERT_TRUE(launch.Wait(absl::Seconds(10)));
  EXPECT_EQ(launch.exit_code(), 128 + SIGKILL);
  // Rank 1 ignores the SIGTERM; only the SIGKILL 0.5 s later ends it.
  EXPECT_GE(absl::Now() - killed, absl::Milliseconds(500));
  EXPECT_LT(absl::Now() - killed, absl::Seconds(5));
  for (pid_t pid : pids) EXPECT_FALSE(Alive(pid)) << pid;
}

TEST(LaunchTest, SigtermAndSigintAreForwardedToAllRanks) {
  for (int sig : {SIGTERM, SIGINT}) {
    std::string dir = TempDir();
    Launch launch({"--nproc_per_node=3", kHelper, "sleep", dir});
    std::vector<pid_t> pids = RankPids(dir, {0, 1, 2});
    ASSERT_EQ(kill(launch.pid(), sig), 0);
    ASSERT_TRUE(launch.Wait(absl::Seconds(10)));
    EXPECT_EQ(launch.exit_code(), 128 + sig);
    EXPECT_LT(launch.elapsed(), absl::Seconds(5));
    if (sig == SIGTERM) {
      // The helper's SIGTERM handler records the signal and exits 0.
      for (int r = 0; r < 3; ++r) EXPECT_TRUE(Exists(absl::StrCat(dir, "/term.", r))) << r;
      EXPECT_EQ(launch.err(), "launch: received SIGTERM; forwarding it to all ranks\n");
    } else {
      EXPECT_EQ(launch.err(), "launch: received SIGINT; forwarding it to all ranks\n");
    }
    for (pid_t pid : pids) EXPECT_FALSE(Alive(pid)) << pid;
  }
}

TEST(LaunchTest, RanksDieWhenLaunchIsKilled) {
  // Orphaned ranks are re-parented to this test, which can then reap them and see how they died.
  ASSERT_EQ(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
  std::string dir = TempDir();
  Launch launch({"--nproc_per_node=2", kHelper, "sleep_ignoring_term", dir});
  std::vector<pid_t> pids = RankPids(dir, {0, 1});
  ASSERT_EQ(kill(launch.pid(), SIGKILL), 0);
  ASSERT_TRUE(launch.Wait(absl::Seconds(10)));
  EXPECT_EQ(launch.exit_code(), -SIGKILL);
  for (pid_t pid : pids) {
    int status = 0;
    absl::Time deadline = absl::Now() + absl::Seconds(10);
    while (waitpid(pid, &status, WNOHANG) != pid && absl::Now() < deadline) {
      absl::SleepFor(absl::Milliseconds(5));
    }
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << pid << " " << status;
    if (Alive(pid)) {  // a failure: leave no process behind anyway
      ADD_FAILURE() << "rank pid " << pid << " outlived launch";
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
  }
  prctl(PR_SET_CHILD_SUBREAPER, 0);
}

TEST(LaunchTest, PrefixedOutputHasWholeLinesOnly) {
  constexpr int kLines = 200;
  Launch launch({"--nproc_per_node=3", "--prefix_output", kHelper, "lines", absl::StrCat(kLines)});
  ASSERT_TRUE(launch.Wait());
  EXPECT_EQ(launch.exit_code(), 0);
  for (const std::string& text : {launch.out(), launch.err()}) {
    std::map<int, int> next;  // rank -> next line number, so order within a rank is kept too
    std::vector<std::string> lines = Lines(text);
    EXPECT_EQ(lines.size(), 3u * kLines);
    for (const std::string& line : lines) {
      int rank = -1, i = -1;
      char end[8] = {};
      ASSERT_EQ(sscanf(line.c_str(), "[rank %d]:r%*d line %d %3s", &rank, &i, end), 3) << line;
      EXPECT_EQ(line, absl::StrCat("[rank ", rank, "]:r", rank, " line ", i, " end"));
      EXPECT_EQ(i, next[rank]++) << line;
    }
  }
}

TEST(LaunchTest, TeeSelectsTheStreamAndPartialLastLinesAreCompleted) {
  Launch launch({"--tee=1", kHelper, "lines", "1"});
  ASSERT_TRUE(launch.Wait());
  EXPECT_EQ(launch.out(), "[rank 0]:r0 line 0 end\n");
  EXPECT_EQ(launch.err(), "r0 line 0 end\n");
  Launch partial({"--prefix_output", kHelper, "partial"});
  ASSERT_TRUE(partial.Wait());
  EXPECT_EQ(partial.out(), "[rank 0]:tail without newline\n");
}

TEST(LaunchTest, BadCommandLinesExitWithTwoAndSayWhy) {
  Launch bad_rank({"--nnodes=2", "--node_rank=2", kHelper, "env"});
  ASSERT_TRUE(bad_rank.Wait());
  EXPECT_EQ(bad_rank.exit_code(), 2);
  EXPECT_EQ(bad_rank.err(),
            "launch: --node_rank 2 must be smaller than --nnodes 2 (node ranks are 0..1)\n");
  EXPECT_EQ(bad_rank.out(), "");

  Launch no_program({"--nproc_per_node", "2"});
  ASSERT_TRUE(no_program.Wait());
  EXPECT_EQ(no_program.exit_code(), 2);
  EXPECT_THAT(no_program.err(), HasSubstr("no PROGRAM given"));

  Launch help({"--help"});
  ASSERT_TRUE(help.Wait());
  EXPECT_EQ(help.exit_code(), 0);
  EXPECT_THAT(help.out(), HasSubstr("usage: launch [options] PROGRAM [ARGS...]"));
}

TEST(LaunchTest, MissingProgramIsReported) {
  Launch launch({"--nproc_per_node=2", "./no/such/program"});
  ASSERT_TRUE(launch.Wait());
  EXPECT_EQ(launch.exit_code(), 1);
  EXPECT_EQ(launch.err(),
            "launch: cannot run PROGRAM './no/such/program' for rank 0: No such file or directory "
            "(give a path to an executable, or a name found on PATH)\n");
}

TEST(LaunchTest, AccelerateConfigFileLaunchesLikeItsFlagsAndTorchrun) {
  // The multi-GPU YAML of transformers' Trainer docs, CPU variant on one machine.
  std::string yaml = TempDir() + "/accelerate.yaml";
  std::ofstream(yaml) << "compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_CPU\n"
                         "downcast_bf16: 'no'\ngpu_ids: all\nmachine_rank: 0\n"
                         "main_process_ip: 127.0.0.1\nmain_process_port: 9898\n"
                         "main_training_function: main\nmixed_precision: bf16\n"
                         "num_machines: 1\nnum_processes: 2\nrdzv_backend: static\n"
                         "same_network: true\ntpu_env: []\ntpu_use_cluster: false\n"
                         "tpu_use_sudo: false\nuse_cpu: true\n";
  Launch from_yaml({"--config_file", yaml, kHelper, "env", "--seed", "3"});
  Launch from_flags({"--num_processes=2", "--main_process_port", "9898", "--mixed_precision=bf16",
                     "--use_cpu", kHelper, "env", "--seed", "3"});
  Launch torchrun({"--nproc_per_node=2", "--master_port=9898", kHelper, "--bf16", "--use_cpu",
                   "env", "--seed", "3"});
  for (Launch* l : {&from_yaml, &from_flags, &torchrun}) {
    ASSERT_TRUE(l->Wait());
    EXPECT_EQ(l->exit_code(), 0) << l->err();
  }
  std::vector<std::string> lines = Lines(torchrun.out());
  std::sort(lines.begin(), lines.end());
  EXPECT_THAT(lines, ::testing::Contains("rank 1: args [--bf16] [--use_cpu] [--seed] [3]"));
  EXPECT_THAT(Lines(from_yaml.out()), UnorderedElementsAreArray(lines));
  EXPECT_THAT(Lines(from_flags.out()), UnorderedElementsAreArray(lines));
  EXPECT_EQ(from_yaml.err(), "");
}

TEST(LaunchTest, DeepSpeedStyleGivesEachRankASlotAndLocalRank) {
  Launch launch({"--num_gpus", "2", "--master_port=4444", kHelper, "env", "x"},
                {{"OMP_NUM_THREADS", "3"}});
  ASSERT_TRUE(launch.Wait());
  EXPECT_EQ(launch.exit_code(), 0) << launch.err();
  std::vector<std::string> expected;
  for (int r = 0; r < 2; ++r) {
    std::string p = absl::StrCat("rank ", r, ": ");
    for (std::string kv :
         {absl::StrCat("RANK=", r), absl::StrCat("LOCAL_RANK=", r), std::string("WORLD_SIZE=2"),
          std::string("LOCAL_WORLD_SIZE=2"), std::string("GROUP_RANK=0"),
          std::string("MASTER_ADDR=127.0.0.1"), std::string("MASTER_PORT=4444"),
          std::string("OMP_NUM_THREADS=3"), std::string("CUDA_VISIBLE_DEVICES=0,1"),
          std::string("TORCHELASTIC_RUN_ID=<unset>"),
          absl::StrCat("args [--local_rank=", r, "] [x]")}) {
      expected.push_back(p + kv);
    }
  }
  EXPECT_THAT(Lines(launch.out()), UnorderedElementsAreArray(expected));
}

TEST(LaunchTest, ForwardedSignalEscalatesToSigkill) {
  // After the grace period...
  std::string dir = TempDir();
  Launch graceful(
      {"--nproc_per_node=2", "--grace_period_s=0.3", kHelper, "sleep_ignoring_term", dir});
  std::vector<pid_t> pids = RankPids(dir, {0, 1});
  absl::Time sent = absl::Now();
  ASSERT_EQ(kill(graceful.pid(), SIGTERM), 0);
  ASSERT_TRUE(graceful.Wait(absl::Seconds(10)));
  EXPECT_EQ(graceful.exit_code(), 128 + SIGTERM);
  EXPECT_GE(absl::Now() - sent, absl::Milliseconds(300));
  for (pid_t pid : pids) EXPECT_FALSE(Alive(pid)) << pid;

  // ...or at once on a second signal, whatever the grace period.
  std::string dir2 = TempDir();
  Launch impatient(
      {"--nproc_per_node=2", "--grace_period_s=60", kHelper, "sleep_ignoring_term", dir2});
  pids = RankPids(dir2, {0, 1});
  ASSERT_EQ(kill(impatient.pid(), SIGTERM), 0);
  absl::SleepFor(absl::Milliseconds(100));
  ASSERT_EQ(kill(impatient.pid(), SIGINT), 0);
  ASSERT_TRUE(impatient.Wait(absl::Seconds(10)));
  EXPECT_EQ(impatient.exit_code(), 128 + SIGTERM);
  EXPECT_LT(impatient.elapsed(), absl::Seconds(10));
  EXPECT_EQ(impatient.err(),
            "launch: received SIGTERM; forwarding it to all ranks\n"
            "launch: received SIGINT again; killing all ranks\n");
  for (pid_t pid : pids) EXPECT_FALSE(Alive(pid)) << pid;
}

TEST(LaunchTest, TwoNodesOnThisMachineCoverEveryGlobalRankOnce) {
  Launch node0(
      {"--nnodes=2", "--node_rank=0", "--nproc_per_node=2", "--master_port=5555", kHelper, "env"});
  Launch node1(
      {"--nnodes=2", "--node_rank=1", "--nproc_per_node=2", "--master_port=5555", kHelper, "env"});
  ASSERT_TRUE(node0.Wait());
  ASSERT_TRUE(node1.Wait());
  EXPECT_EQ(node0.exit_code(), 0);
  EXPECT_EQ(node1.exit_code(), 0);
  for (int rank = 0; rank < 4; ++rank) {
    const std::string& out = rank < 2 ? node0.out() : node1.out();
    std::string p = absl::StrCat("rank ", rank, ": ");
    EXPECT_THAT(out, HasSubstr(absl::StrCat(p, "LOCAL_RANK=", rank % 2, "\n")));
    EXPECT_THAT(out, HasSubstr(absl::StrCat(p, "GROUP_RANK=", rank / 2, "\n")));
    EXPECT_THAT(out, HasSubstr(p + "WORLD_SIZE=4\n"));
    EXPECT_THAT(out, HasSubstr(p + "MASTER_PORT=5555\n"));
  }
}

TEST(LaunchTest, LogDirWithTeeAndRedirects) {
  std::string dir = TempDir();
  Launch launch(
      {"--nproc_per_node=2", "--log_dir", dir, "--tee=1", "--redirects=2", kHelper, "lines", "2"});
  ASSERT_TRUE(launch.Wait());
  EXPECT_EQ(launch.exit_code(), 0);
  EXPECT_THAT(Lines(launch.out()),
              UnorderedElementsAreArray({"[rank 0]:r0 line 0 end", "[rank 0]:r0 line 1 end",
                                         "[rank 1]:r1 line 0 end", "[rank 1]:r1 line 1 end"}));
  EXPECT_EQ(launch.err(), "");
  for (int r = 0; r < 2; ++r) {
    for (const char* stream : {"stdout", "stderr"}) {
      std::ifstream in(absl::StrCat(dir, "/", r, "/", stream, ".log"));
      std::stringstream text;
      text << in.rdbuf();
      EXPECT_EQ(text.str(), absl::StrCat("r", r, " line 0 end\nr", r, " line 1 end\n"))
          << r << " " << stream;
    }
  }
}

TEST(LaunchTest, LocalRanksFilterHidesTheOtherRanksOutputButNotTheirLogs) {
  std::string dir = TempDir();
  Launch launch({"--nproc_per_node=3", "--local_ranks_filter=1", "--log_dir", dir, "--tee=1",
                 kHelper, "lines", "1"});
  ASSERT_TRUE(launch.Wait());
  EXPECT_EQ(launch.exit_code(), 0);
  EXPECT_EQ(launch.out(), "[rank 1]:r1 line 0 end\n");
  EXPECT_EQ(launch.err(), "r1 line 0 end\n");
  std::ifstream in(dir + "/2/stdout.log");
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), "r2 line 0 end\n");
}

}  // namespace
