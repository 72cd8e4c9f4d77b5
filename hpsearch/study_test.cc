#include "hpsearch/study.h"

#include <cmath>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::hpsearch {
namespace {

using ::loom::base::testing::StatusIs;
using ::testing::HasSubstr;

std::string TempPath(const std::string& name) {
  return std::string(std::getenv("TEST_TMPDIR")) + "/" + name;
}

SearchSpace Space() {
  absl::StatusOr<SearchSpace> space = ParseSearchSpace(
      R"({"x": {"type": "float", "low": -5, "high": 5},
          "lr": {"type": "float", "low": 1e-5, "high": 1e-1, "log": true},
          "n": {"type": "int", "low": 1, "high": 4},
          "c": {"type": "categorical", "choices": ["a", "b", 3]}})");
  EXPECT_TRUE(space.ok()) << space.status();
  return *space;
}

StudyOptions Options(const std::string& journal, const std::string& backend, int64_t n_trials) {
  StudyOptions o;
  o.journal_path = journal;
  o.backend = backend;
  o.sampler.seed = 17;
  o.sampler.space = Space();
  o.sampler.n_startup_trials = 3;  // TPE itself samples from the fourth trial on
  o.n_trials = n_trials;
  return o;
}

double Objective(const TrialRun& run) {
  const double x = run.params["x"].get<double>();
  const double lr = run.params["lr"].get<double>();
  return (x - 1.5) * (x - 1.5) + std::abs(std::log10(lr) + 3) +
         static_cast<double>(run.params["n"].get<int64_t>()) * 0.1 +
         (run.params["c"] == "b" ? 0.0 : 0.5);
}

// Runs the study to its end; with `die_after`, stops after asking for that many trials and
// leaves the last one RUNNING (as a killed process would).
void RunStudy(Study& study, std::optional<int> die_after = std::nullopt) {
  for (int asked = 1;; ++asked) {
    absl::StatusOr<std::optional<TrialRun>> run = study.Ask();
    ASSERT_TRUE(run.ok()) << run.status();
    if (!run->has_value()) return;
    if (die_after && asked == *die_after) return;
    const double value = Objective(**run);
    ASSERT_TRUE(study.Report(**run, 1, value + 1).ok());
    ASSERT_TRUE(study.Report(**run, 2, value).ok());
    ASSERT_TRUE(study.Tell(**run, TrialState::kComplete, value).ok());
  }
}

void ExpectSameTrials(const std::vector<FrozenTrial>& a, const std::vector<FrozenTrial>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].number, b[i].number);
    EXPECT_EQ(a[i].state, b[i].state) << i;
    EXPECT_EQ(a[i].params, b[i].params) << i;
    EXPECT_EQ(a[i].value, b[i].value) << i;
    EXPECT_EQ(a[i].intermediate_values, b[i].intermediate_values) << i;
  }
}

class StudyResume : public ::testing::TestWithParam<std::string> {};

// A search killed while a trial runs and started again ends with the same study as one never
// interrupted: finished trials kept, the unfinished one run again with its parameters and
// number, the sampler's random stream continued from the journal.
TEST_P(StudyResume, KilledAndResumedEqualsUninterrupted) {
  const std::string backend = GetParam();
  std::vector<FrozenTrial> whole;
  {
    ASSERT_OK_AND_ASSIGN(auto study, Study::Open(Options(TempPath(backend + "_whole"), backend, 9)));
    RunStudy(*study);
    ASSERT_OK_AND_ASSIGN(whole, study->Trials());
  }
  ASSERT_EQ(whole.size(), 9u);
  for (int die_after : {1, 4, 6}) {
    const std::string journal = TempPath(backend + "_killed_" + std::to_string(die_after));
    {
      ASSERT_OK_AND_ASSIGN(auto study, Study::Open(Options(journal, backend, 9)));
      RunStudy(*study, die_after);
    }  // the worker is gone: its RUNNING trial is abandoned
    ASSERT_OK_AND_ASSIGN(auto resumed, Study::Open(Options(journal, backend, 9)));
    ASSERT_OK_AND_ASSIGN(std::optional<TrialRun> again, resumed->Ask());
    ASSERT_TRUE(again.has_value());
    EXPECT_EQ(again->number, die_after - 1);
    EXPECT_EQ(again->attempt, 2);
    ASSERT_OK(resumed->Tell(*again, TrialState::kComplete, Objective(*again)));
    // (the re-run reports its steps as the first attempt would have)
    RunStudy(*resumed);
    ASSERT_OK_AND_ASSIGN(std::vector<FrozenTrial> trials, resumed->Trials());
    // The re-run trial above was told without intermediate values; compare the rest exactly.
    trials[static_cast<size_t>(die_after - 1)].intermediate_values =
        whole[static_cast<size_t>(die_after - 1)].intermediate_values;
    ExpectSameTrials(trials, whole);
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, StudyResume, ::testing::Values("tpe", "random"));

TEST(Study, AWorkerStillAliveKeepsItsTrial) {
  const std::string journal = TempPath("two_workers");
  ASSERT_OK_AND_ASSIGN(auto a, Study::Open(Options(journal, "random", 4)));
  ASSERT_OK_AND_ASSIGN(auto b, Study::Open(Options(journal, "random", 4)));
  ASSERT_OK_AND_ASSIGN(std::optional<TrialRun> ra, a->Ask());
  ASSERT_OK_AND_ASSIGN(std::optional<TrialRun> rb, b->Ask());
  ASSERT_TRUE(ra && rb);
  EXPECT_EQ(ra->number, 0);
  EXPECT_EQ(rb->number, 1);  // not trial 0 again: its worker lives
  EXPECT_NE(ra->params, rb->params);
  ASSERT_OK(a->Tell(*ra, TrialState::kComplete, 1.0));
  ASSERT_OK(b->Tell(*rb, TrialState::kComplete, 0.5));
  ASSERT_OK_AND_ASSIGN(std::vector<FrozenTrial> trials, a->Trials());
  std::optional<FrozenTrial> best = Study::BestTrial(trials, Direction::kMinimize);
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(best->number, 1);
}

// Two processes run trials of one study at once: each trial is taken by one of them, the study
// ends with exactly n_trials, all complete, every number once.
TEST(Study, TwoProcessesShareAStudy) {
  const std::string journal = TempPath("two_processes");
  std::vector<pid_t> children;
  for (int w = 0; w < 2; ++w) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      absl::StatusOr<std::unique_ptr<Study>> study = Study::Open(Options(journal, "tpe", 16));
      if (!study.ok()) _exit(2);
      while (true) {
        absl::StatusOr<std::optional<TrialRun>> run = (*study)->Ask();
        if (!run.ok()) _exit(3);
        if (!run->has_value()) break;
        ::usleep(2000);  // a trial takes time: the other process asks meanwhile
        if (!(*study)->Tell(**run, TrialState::kComplete, Objective(**run)).ok()) _exit(4);
      }
      _exit(0);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  }
  ASSERT_OK_AND_ASSIGN(auto study, Study::Open(Options(journal, "tpe", 16)));
  ASSERT_OK_AND_ASSIGN(std::vector<FrozenTrial> trials, study->Trials());
  ASSERT_EQ(trials.size(), 16u);
  std::set<std::string> workers;
  for (size_t i = 0; i < trials.size(); ++i) {
    EXPECT_EQ(trials[i].number, static_cast<int64_t>(i));
    EXPECT_EQ(trials[i].state, TrialState::kComplete);
    workers.insert(trials[i].system_attrs["loom:worker"].get<std::string>());
  }
  EXPECT_EQ(workers.size(), 2u);  // both processes ran trials
}

TEST(Study, StopsAtNTrials) {
  ASSERT_OK_AND_ASSIGN(auto study, Study::Open(Options(TempPath("n_trials"), "random", 3)));
  RunStudy(*study);
  ASSERT_OK_AND_ASSIGN(std::vector<FrozenTrial> trials, study->Trials());
  EXPECT_EQ(trials.size(), 3u);
  ASSERT_OK_AND_ASSIGN(std::optional<TrialRun> more, study->Ask());
  EXPECT_FALSE(more.has_value());
}

TEST(Study, APrunedTrialsValueIsItsLastIntermediateValue) {
  ASSERT_OK_AND_ASSIGN(auto study, Study::Open(Options(TempPath("pruned"), "random", 2)));
  ASSERT_OK_AND_ASSIGN(std::optional<TrialRun> run, study->Ask());
  ASSERT_OK(study->Report(*run, 10, 3.5));
  ASSERT_OK(study->Report(*run, 10, 9.0));  // a step reported again is ignored (optuna)
  ASSERT_OK(study->Report(*run, 20, 2.5));
  ASSERT_OK(study->Tell(*run, TrialState::kPruned, std::nullopt));
  ASSERT_OK_AND_ASSIGN(std::vector<FrozenTrial> trials, study->Trials());
  EXPECT_EQ(trials[0].state, TrialState::kPruned);
  EXPECT_EQ(trials[0].value, 2.5);
  EXPECT_EQ(trials[0].intermediate_values.at(10), 3.5);
  EXPECT_FALSE(Study::BestTrial(trials, Direction::kMinimize).has_value());
}

TEST(Study, RefusesAJournalOfAnotherStudy) {
  const std::string journal = TempPath("other");
  { ASSERT_OK(Study::Open(Options(journal, "random", 5)).status()); }
  StudyOptions other = Options(journal, "tpe", 5);
  other.sampler.seed = 3;
  EXPECT_THAT(Study::Open(other).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("backend (journal: \"random\", now: \"tpe\")")));
  EXPECT_THAT(Study::Open(other).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("seed")));
  StudyOptions renamed = Options(journal, "random", 5);
  renamed.study_name = "mine";
  EXPECT_THAT(Study::Open(renamed).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("holds another study (\"hp_search\")")));
  // A study optuna itself created (no loom settings).
  StudyOptions golden = Options(TempPath("copy_of_golden"), "random", 5);
  golden.study_name = "golden";
  {
    absl::StatusOr<std::string> text = [] {
      std::FILE* f = std::fopen("tests/testdata/hpsearch/optuna_4.6_golden.journal", "rb");
      if (f == nullptr) return absl::StatusOr<std::string>(absl::NotFoundError("golden"));
      std::string s;
      char buf[4096];
      for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) s.append(buf, n);
      std::fclose(f);
      return absl::StatusOr<std::string>(s);
    }();
    ASSERT_OK(text.status());
    std::FILE* out = std::fopen(golden.journal_path.c_str(), "wb");
    std::fwrite(text->data(), 1, text->size(), out);
    std::fclose(out);
  }
  EXPECT_THAT(Study::Open(golden).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("not created by loom's search")));
}

TEST(Study, RefusesBadOptionsBeforeWriting) {
  StudyOptions o = Options(TempPath("bad_backend"), "hyperband", 5);
  EXPECT_THAT(Study::Open(o).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("grid, random, tpe")));
  o = Options(TempPath("bad_trials"), "tpe", 0);
  EXPECT_THAT(Study::Open(o).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("n_trials")));
}

}  // namespace
}  // namespace loom::hpsearch
