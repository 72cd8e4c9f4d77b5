#include "hpsearch/journal.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "base/file_util.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::hpsearch {
namespace {

using ::loom::base::testing::StatusIs;
using ::testing::HasSubstr;
using Json = nlohmann::ordered_json;

std::string TempPath(const std::string& name) {
  return std::string(std::getenv("TEST_TMPDIR")) + "/" + name;
}

// The journal real optuna 4.6.0 wrote (tests/testdata/hpsearch/make_optuna_journal.py); the
// expected values are what optuna's own load_study printed for it.
TEST(Journal, ReplaysWhatOptunaWrote) {
  ASSERT_OK_AND_ASSIGN(
      JournalFile journal,
      JournalFile::OpenReadOnly("tests/testdata/hpsearch/optuna_4.6_golden.journal"));
  ASSERT_OK_AND_ASSIGN(std::vector<Json> ops, journal.Read());
  EXPECT_EQ(ops.size(), 46u);
  ASSERT_OK_AND_ASSIGN(JournalState state, Replay(ops));
  const JournalStudy* study = state.FindStudy("golden");
  ASSERT_NE(study, nullptr);
  ASSERT_EQ(study->directions.size(), 1u);
  EXPECT_EQ(study->directions[0], Direction::kMaximize);
  std::vector<FrozenTrial> trials = state.TrialsOf(*study);
  ASSERT_EQ(trials.size(), 5u);
  const TrialState states[] = {TrialState::kComplete, TrialState::kComplete, TrialState::kPruned,
                               TrialState::kFail, TrialState::kComplete};
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(trials[i].number, i);
    EXPECT_EQ(trials[i].state, states[i]) << i;
    EXPECT_EQ(trials[i].intermediate_values.size(), 3u);
    EXPECT_EQ(trials[i].user_attrs["note"], "u" + std::to_string(i));
  }
  EXPECT_EQ(trials[0].value, 0.011858312966669917);
  EXPECT_EQ(trials[0].params.at("x"), 0.001694044709524274);
  EXPECT_EQ(trials[0].params.at("n"), 7.0);
  EXPECT_EQ(ToExternal(trials[0].distributions.at("c"), trials[0].params.at("c")),
            nlohmann::json(nullptr));
  EXPECT_EQ(trials[2].value, 0.32719845407754566);  // PRUNED: its last intermediate value
  EXPECT_EQ(trials[2].intermediate_values.at(2), 0.32719845407754566);
  EXPECT_EQ(ToExternal(trials[2].distributions.at("c"), trials[2].params.at("c")), "a");
  EXPECT_FALSE(trials[3].value.has_value());  // FAIL (the objective returned NaN)
  EXPECT_EQ(trials[4].value, 0.5700189080158323);
  EXPECT_EQ(std::get<IntDistribution>(trials[4].distributions.at("n")).step, 2);
}

TEST(Journal, AppendCutsATornLastLineAndReadIgnoresIt) {
  const std::string path = TempPath("torn.journal");
  ASSERT_OK(base::WriteFileAtomically(
      path, R"({"op_code":0,"worker_id":"w","study_name":"s","directions":[1]})"
            "\n{\"op_code\":4,\"worker_id\":\"w\",\"stu"));
  ASSERT_OK_AND_ASSIGN(JournalFile journal, JournalFile::Open(path));
  ASSERT_OK_AND_ASSIGN(std::vector<Json> before, journal.Read());
  EXPECT_EQ(before.size(), 1u);
  FrozenTrial t;
  t.datetime_start = NowIsoformat();
  ASSERT_OK(journal.Locked([&] { return journal.Append({CreateTrialOp("w", 0, t)}); }));
  ASSERT_OK_AND_ASSIGN(std::vector<Json> after, journal.Read());
  ASSERT_EQ(after.size(), 2u);
  ASSERT_OK_AND_ASSIGN(JournalState state, Replay(after));
  EXPECT_EQ(state.TrialsOf(*state.FindStudy("s")).size(), 1u);
  ASSERT_OK_AND_ASSIGN(std::string text, base::ReadFile(path));
  EXPECT_EQ(text.back(), '\n');
  EXPECT_EQ(text.find("\"stu\n"), std::string::npos);
}

TEST(Journal, AppendOutsideLockedIsRefused) {
  ASSERT_OK_AND_ASSIGN(JournalFile journal, JournalFile::Open(TempPath("unlocked.journal")));
  EXPECT_THAT(journal.Append({CreateStudyOp("w", "s", Direction::kMinimize)}),
              StatusIs(absl::StatusCode::kInternal, HasSubstr("outside Locked")));
}

TEST(Journal, ABadCompleteLineIsDataLossNamingTheLine) {
  const std::string path = TempPath("bad.journal");
  ASSERT_OK(base::WriteFileAtomically(
      path,
      "{\"op_code\":0,\"worker_id\":\"w\",\"study_name\":\"s\",\"directions\":[1]}\n"
      "{\"op_code\":42,\"worker_id\":\"w\"}\n"));
  ASSERT_OK_AND_ASSIGN(JournalFile journal, JournalFile::Open(path));
  EXPECT_THAT(journal.Read().status(),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("bad.journal line 2")));
}

TEST(Journal, ParseOperationChecksEveryField) {
  for (
      const char* bad : {
          "[]",
          "3",
          "{}",
          R"({"op_code":"0","worker_id":"w"})",
          R"({"op_code":0,"study_name":"s","directions":[1]})",
          R"({"op_code":0,"worker_id":"w","study_name":"s","directions":[]})",
          R"({"op_code":0,"worker_id":"w","study_name":"s","directions":[7]})",
          R"({"op_code":4,"worker_id":"w","study_id":"0","datetime_start":null})",
          R"({"op_code":4,"worker_id":"w","study_id":0})",
          R"({"op_code":5,"worker_id":"w","trial_id":0,"param_name":"x","param_value_internal":"1","distribution":"{}"})",
          R"({"op_code":6,"worker_id":"w","trial_id":0,"state":1,"values":3})",
          R"({"op_code":7,"worker_id":"w","trial_id":0,"step":1.5,"intermediate_value":1})",
          R"({"op_code":9,"worker_id":"w","trial_id":0,"system_attr":{"a":1,"b":2}})",
      }) {
    EXPECT_FALSE(ParseOperation(bad).ok()) << bad;
  }
  EXPECT_OK(ParseOperation(
      R"({"op_code":7,"worker_id":"w","trial_id":0,"step":1,"intermediate_value":NaN})"));
}

TEST(Journal, ReplayRefusesHostileTrialsAndSkipsUnknownIds) {
  // A parameter without its distribution, and a distribution that is not one.
  for (
      const char* bad : {
          R"({"op_code":4,"worker_id":"w","study_id":0,"datetime_start":null,"params":{"x":1},"distributions":{}})",
          R"({"op_code":4,"worker_id":"w","study_id":0,"datetime_start":null,"distributions":{"x":"{\"name\": \"Beta\", \"attributes\": {}}"}})",
          R"({"op_code":4,"worker_id":"w","study_id":0,"datetime_start":null,"state":9})",
      }) {
    ASSERT_OK_AND_ASSIGN(
        Json create,
        ParseOperation(R"({"op_code":0,"worker_id":"w","study_name":"s","directions":[1]})"));
    ASSERT_OK_AND_ASSIGN(Json op, ParseOperation(bad));
    EXPECT_FALSE(Replay({create, op}).ok()) << bad;
  }
  ASSERT_OK_AND_ASSIGN(
      Json orphan,
      ParseOperation(
          R"({"op_code":7,"worker_id":"w","trial_id":5,"step":1,"intermediate_value":1})"));
  EXPECT_OK(Replay({orphan}).status());
}

// What the fuzzer's short inputs cannot reach: a distribution text nested 100,000 deep (read
// and copied recursively), and an int distribution whose step is near INT64_MAX.
TEST(Journal, ReplayRefusesDeepAndHugeDistributions) {
  ASSERT_OK_AND_ASSIGN(
      Json create,
      ParseOperation(R"({"op_code":0,"worker_id":"w","study_name":"s","directions":[1]})"));
  ASSERT_OK_AND_ASSIGN(
      Json trial,
      ParseOperation(R"({"op_code":4,"worker_id":"w","study_id":0,"datetime_start":null})"));
  Json deep{{"op_code", 5},
            {"worker_id", "w"},
            {"trial_id", 0},
            {"param_name", "x"},
            {"param_value_internal", 0},
            {"distribution", std::string(100000, '[') + std::string(100000, ']')}};
  ASSERT_OK_AND_ASSIGN(Json deep_op, ParseOperation(deep.dump()));
  EXPECT_THAT(Replay({create, trial, deep_op}).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not a JSON object")));
  Json huge{
      {"op_code", 5},
      {"worker_id", "w"},
      {"trial_id", 0},
      {"param_name", "n"},
      {"param_value_internal", 1},
      {"distribution",
       R"({"name": "IntDistribution", "attributes": {"log": false, "step": 9223372036854775807, "low": 1, "high": 1}})"}};
  ASSERT_OK_AND_ASSIGN(Json huge_op, ParseOperation(huge.dump()));
  ASSERT_OK_AND_ASSIGN(JournalState state, Replay({create, trial, huge_op}));
  EXPECT_EQ(state.TrialsOf(*state.FindStudy("s"))[0].params.at("n"), 1.0);
}

// Two processes appending at once: every line stays whole.
TEST(Journal, ConcurrentWritersKeepEveryLine) {
  const std::string path = TempPath("concurrent.journal");
  constexpr int kPerWriter = 200;
  std::vector<pid_t> children;
  for (int w = 0; w < 2; ++w) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      absl::StatusOr<JournalFile> journal = JournalFile::Open(path);
      if (!journal.ok()) _exit(2);
      for (int i = 0; i < kPerWriter; ++i) {
        const std::string worker(300, static_cast<char>('a' + w));  // long lines
        if (!journal
                 ->Locked([&] { return journal->Append({SetTrialUserAttrOp(worker, i, "k", i)}); })
                 .ok()) {
          _exit(3);
        }
      }
      _exit(0);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  ASSERT_OK_AND_ASSIGN(JournalFile journal, JournalFile::Open(path));
  ASSERT_OK_AND_ASSIGN(std::vector<Json> ops, journal.Read());
  EXPECT_EQ(ops.size(), 2u * kPerWriter);
}

}  // namespace
}  // namespace loom::hpsearch
