// Log levels against transformers 4.38 `TrainingArguments.get_process_log_level` ("HF rule") and
// the command lines of the Trainer documentation's logging section ("Docs example").
#include "logging/log_level.h"

#include <string>
#include <vector>

#include "base/status_matchers.h"
#include "gflags/gflags.h"
#include "glog/logging.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::logging {
namespace {

using ::loom::base::testing::IsOk;
using ::loom::base::testing::IsOkAndHolds;
using ::loom::base::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

ProcessLogPolicy Policy(std::string main, std::string replica, bool each_node) {
  ProcessLogPolicy p;
  p.log_level = std::move(main);
  p.log_level_replica = std::move(replica);
  p.log_on_each_node = each_node;
  return p;
}

ProcessPlacement Place(int rank, int local_rank, int node, int world_size) {
  ProcessPlacement p;
  p.process_index = rank;
  p.local_process_index = local_rank;
  p.node_rank = node;
  p.world_size = world_size;
  return p;
}

// 2 nodes x 2 processes, in global-rank order.
std::vector<ProcessPlacement> TwoByTwo() {
  return {Place(0, 0, 0, 4), Place(1, 1, 0, 4), Place(2, 0, 1, 4), Place(3, 1, 1, 4)};
}

// The level each process of `placements` resolves to.
std::vector<int> Levels(const ProcessLogPolicy& policy,
                        const std::vector<ProcessPlacement>& placements, int current) {
  std::vector<int> levels;
  for (const ProcessPlacement& p : placements) {
    absl::StatusOr<int> level = ProcessLogLevel(policy, p, current);
    EXPECT_THAT(level, IsOk());
    levels.push_back(level.value_or(-999));
  }
  return levels;
}

using Ints = std::vector<int>;

TEST(ParseLogLevelTest, EveryName) {
  EXPECT_THAT(ParseLogLevel("debug"), IsOkAndHolds(10));
  EXPECT_THAT(ParseLogLevel("info"), IsOkAndHolds(20));
  EXPECT_THAT(ParseLogLevel("warning"), IsOkAndHolds(30));
  EXPECT_THAT(ParseLogLevel("error"), IsOkAndHolds(40));
  EXPECT_THAT(ParseLogLevel("critical"), IsOkAndHolds(50));
  EXPECT_THAT(ParseLogLevel("passive"), IsOkAndHolds(-1));
}

TEST(ParseLogLevelTest, UnknownNameListsChoices) {
  for (const char* bad : {"loud", "WARNING", "warn", "", "30"}) {
    EXPECT_THAT(ParseLogLevel(bad),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         AllOf(HasSubstr(std::string("'") + bad + "'"),
                               HasSubstr("debug, info, warning, error, critical, passive"))));
  }
}

TEST(LogLevelNameTest, NamesAndOthers) {
  EXPECT_EQ(LogLevelName(10), "debug");
  EXPECT_EQ(LogLevelName(50), "critical");
  EXPECT_EQ(LogLevelName(-1), "passive");
  EXPECT_EQ(LogLevelName(25), "level 25");
}

// HF rule, log_on_each_node=True: the local main process of every node is main.
TEST(ShouldLogTest, OnEachNodeEveryLocalMainLogs) {
  ProcessLogPolicy policy = Policy("info", "warning", true);
  std::vector<bool> got;
  for (const ProcessPlacement& p : TwoByTwo()) got.push_back(ShouldLog(policy, p));
  EXPECT_EQ(got, std::vector<bool>({true, false, true, false}));
}

// HF rule, log_on_each_node=False: only global rank 0 is main.
TEST(ShouldLogTest, NotOnEachNodeOnlyGlobalRankZeroLogs) {
  ProcessLogPolicy policy = Policy("info", "warning", false);
  std::vector<bool> got;
  for (const ProcessPlacement& p : TwoByTwo()) got.push_back(ShouldLog(policy, p));
  EXPECT_EQ(got, std::vector<bool>({true, false, false, false}));
}

TEST(ShouldLogTest, SingleProcessIsMainEitherWay) {
  EXPECT_TRUE(ShouldLog(Policy("info", "warning", true), Place(0, 0, 0, 1)));
  EXPECT_TRUE(ShouldLog(Policy("info", "warning", false), Place(0, 0, 0, 1)));
}

// HF rule: every node's local main uses log_level; all others log_level_replica.
TEST(ProcessLogLevelTest, OnEachNodeMainsUseLogLevel) {
  EXPECT_EQ(Levels(Policy("info", "error", true), TwoByTwo(), 30), Ints({20, 40, 20, 40}));
}

// HF rule: only node 0's main uses log_level, even the local main of node 1 is a replica.
TEST(ProcessLogLevelTest, NotOnEachNodeOnlyRankZeroUsesLogLevel) {
  EXPECT_EQ(Levels(Policy("info", "error", false), TwoByTwo(), 30), Ints({20, 40, 40, 40}));
}

// Docs example `--log_level warning --log_level_replica error` (log_on_each_node defaults to true).
TEST(ProcessLogLevelTest, WarningErrorOnEachNode) {
  EXPECT_EQ(Levels(Policy("warning", "error", true), TwoByTwo(), 30), Ints({30, 40, 30, 40}));
}

// Docs example `--log_level warning --log_level_replica error --log_on_each_node 0`.
TEST(ProcessLogLevelTest, WarningErrorOnlyFirstNodeMain) {
  EXPECT_EQ(Levels(Policy("warning", "error", false), TwoByTwo(), 30), Ints({30, 40, 40, 40}));
  // 3 nodes x 4 processes: only global rank 0 logs at warning.
  std::vector<ProcessPlacement> twelve;
  for (int r = 0; r < 12; ++r) twelve.push_back(Place(r, r % 4, r / 4, 12));
  Ints expected(12, 40);
  expected[0] = 30;
  EXPECT_EQ(Levels(Policy("warning", "error", false), twelve, 30), expected);
}

// Docs example `--log_level error --log_level_replica error --log_on_each_node 0`: quietest.
TEST(ProcessLogLevelTest, ErrorEverywhere) {
  EXPECT_EQ(Levels(Policy("error", "error", false), TwoByTwo(), 30), Ints({40, 40, 40, 40}));
}

// Defaults are passive / warning; passive keeps the library's level (warning by default).
TEST(ProcessLogLevelTest, DefaultsGiveWarningEverywhere) {
  ProcessLogPolicy defaults;
  EXPECT_EQ(defaults.log_level, "passive");
  EXPECT_EQ(defaults.log_level_replica, "warning");
  EXPECT_TRUE(defaults.log_on_each_node);
  EXPECT_EQ(Levels(defaults, TwoByTwo(), kDefaultLibraryLogLevel), Ints({30, 30, 30, 30}));
}

// HF default: passive main keeps whatever the library level is now.
TEST(ProcessLogLevelTest, PassiveMainKeepsCurrentLevel) {
  ProcessLogPolicy defaults;
  EXPECT_EQ(Levels(defaults, TwoByTwo(), 20), Ints({20, 30, 20, 30}));
  EXPECT_EQ(Levels(defaults, TwoByTwo(), 10), Ints({10, 30, 10, 30}));
  EXPECT_EQ(Levels(defaults, TwoByTwo(), 50), Ints({50, 30, 50, 30}));
}

// HF default: replicas use warning unless log_level_replica is given, whatever the main level is.
TEST(ProcessLogLevelTest, ReplicasDefaultToWarning) {
  ProcessLogPolicy policy;
  policy.log_level = "debug";
  EXPECT_EQ(Levels(policy, TwoByTwo(), 20), Ints({10, 30, 10, 30}));
  policy.log_on_each_node = false;
  EXPECT_EQ(Levels(policy, TwoByTwo(), 20), Ints({10, 30, 30, 30}));
}

TEST(ProcessLogLevelTest, PassiveReplicaKeepsCurrentLevel) {
  EXPECT_EQ(Levels(Policy("info", "passive", true), TwoByTwo(), 40), Ints({20, 40, 20, 40}));
  EXPECT_EQ(Levels(Policy("passive", "passive", false), TwoByTwo(), 10), Ints({10, 10, 10, 10}));
}

TEST(ProcessLogLevelTest, InvalidLevelNamesTheFlag) {
  EXPECT_THAT(
      ProcessLogLevel(Policy("loud", "warning", true), Place(0, 0, 0, 1), 30),
      StatusIs(absl::StatusCode::kInvalidArgument,
               AllOf(HasSubstr("--log_level: "), HasSubstr("'loud'"), HasSubstr("valid choices"))));
  // Checked even on a main process, which does not use the replica level.
  EXPECT_THAT(ProcessLogLevel(Policy("info", "quiet", true), Place(0, 0, 0, 1), 30),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("--log_level_replica: "), HasSubstr("'quiet'"))));
}

// Restores glog's flags after each test.
class ApplyLogLevelTest : public ::testing::Test {
 protected:
  void TearDown() override {
    FLAGS_minloglevel = saved_minloglevel_;
    FLAGS_v = saved_v_;
    FLAGS_logtostderr = saved_logtostderr_;
  }

  int saved_minloglevel_ = FLAGS_minloglevel;
  int saved_v_ = FLAGS_v;
  bool saved_logtostderr_ = FLAGS_logtostderr;
};

TEST_F(ApplyLogLevelTest, SetsGlogFlagsPerLevel) {
  struct Case {
    int level, minloglevel, v;
  };
  for (Case c : {Case{10, 0, 1}, Case{20, 0, 0}, Case{30, 1, 0}, Case{40, 2, 0}, Case{50, 3, 0}}) {
    ASSERT_THAT(ApplyLogLevel(c.level), IsOk());
    EXPECT_EQ(FLAGS_minloglevel, c.minloglevel) << "level " << c.level;
    EXPECT_EQ(FLAGS_v, c.v) << "level " << c.level;
    EXPECT_EQ(CurrentLogLevel(), c.level);
  }
}

// Python emits records at or above the level; 25 shows warnings but not info.
TEST_F(ApplyLogLevelTest, LevelsBetweenNamesRoundUp) {
  ASSERT_THAT(ApplyLogLevel(25), IsOk());
  EXPECT_EQ(CurrentLogLevel(), 30);
  ASSERT_THAT(ApplyLogLevel(0), IsOk());  // logging.NOTSET: everything
  EXPECT_EQ(CurrentLogLevel(), 10);
  ASSERT_THAT(ApplyLogLevel(45), IsOk());
  EXPECT_EQ(CurrentLogLevel(), 50);
}

TEST_F(ApplyLogLevelTest, PassiveChangesNothing) {
  ASSERT_THAT(ApplyLogLevel(40), IsOk());
  ASSERT_THAT(ApplyLogLevel(kLogLevelPassive), IsOk());
  EXPECT_EQ(FLAGS_minloglevel, 2);
  EXPECT_EQ(CurrentLogLevel(), 40);
}

TEST_F(ApplyLogLevelTest, NegativeLevelIsInvalid) {
  EXPECT_THAT(ApplyLogLevel(-5),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("invalid log level -5")));
}

TEST_F(ApplyLogLevelTest, GlogHonoursTheLevel) {
  FLAGS_logtostderr = true;
  ASSERT_THAT(ApplyLogLevel(kLogLevelWarning), IsOk());
  ::testing::internal::CaptureStderr();
  LOG(INFO) << "info-line";
  LOG(WARNING) << "warning-line";
  std::string out = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(out, AllOf(HasSubstr("warning-line"), Not(HasSubstr("info-line"))));

  ASSERT_THAT(ApplyLogLevel(kLogLevelDebug), IsOk());
  ::testing::internal::CaptureStderr();
  VLOG(1) << "debug-line";
  VLOG(2) << "trace-line";
  out = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(out, AllOf(HasSubstr("debug-line"), Not(HasSubstr("trace-line"))));

  ASSERT_THAT(ApplyLogLevel(kLogLevelInfo), IsOk());
  ::testing::internal::CaptureStderr();
  VLOG(1) << "debug-line";
  LOG(INFO) << "info-line";
  out = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(out, AllOf(HasSubstr("info-line"), Not(HasSubstr("debug-line"))));
}

// The example scripts' rule (HF run_glue.py): the main process at info, replicas at
// log_level_replica, whatever glog's level was before.
TEST_F(ApplyLogLevelTest, ScriptLevelIsInfoOnMainAndWarningOnReplicas) {
  ProcessLogPolicy policy;  // HF's defaults: passive, warning, log_on_each_node
  ASSERT_THAT(ApplyLogLevel(kLogLevelError), IsOk());
  ASSERT_THAT(ApplyScriptLogLevel(policy, {.process_index = 0, .world_size = 2}), IsOk());
  EXPECT_EQ(CurrentLogLevel(), kLogLevelInfo);
  ASSERT_THAT(ApplyScriptLogLevel(policy, {.process_index = 1, .local_process_index = 1,
                                           .world_size = 2}),
              IsOk());
  EXPECT_EQ(CurrentLogLevel(), kLogLevelWarning);
  policy.log_level = "error";
  ASSERT_THAT(ApplyScriptLogLevel(policy, {}), IsOk());
  EXPECT_EQ(CurrentLogLevel(), kLogLevelError);
}

TEST(PlacementFromEnvironmentTest, ReadsTorchrunsVariables) {
  unsetenv("RANK");
  unsetenv("LOCAL_RANK");
  unsetenv("GROUP_RANK");
  unsetenv("WORLD_SIZE");
  ProcessPlacement one = PlacementFromEnvironment();
  EXPECT_EQ(one.process_index, 0);
  EXPECT_EQ(one.world_size, 1);
  setenv("RANK", "3", 1);
  setenv("LOCAL_RANK", "1", 1);
  setenv("GROUP_RANK", "1", 1);
  setenv("WORLD_SIZE", "4", 1);
  ProcessPlacement p = PlacementFromEnvironment();
  EXPECT_EQ(p.process_index, 3);
  EXPECT_EQ(p.local_process_index, 1);
  EXPECT_EQ(p.node_rank, 1);
  EXPECT_EQ(p.world_size, 4);
  for (const char* v : {"RANK", "LOCAL_RANK", "GROUP_RANK", "WORLD_SIZE"}) unsetenv(v);
}

}  // namespace
}  // namespace loom::logging
