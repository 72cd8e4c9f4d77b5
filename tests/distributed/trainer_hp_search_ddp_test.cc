// Trainer::HyperparameterSearch on 2 forked ranks (a process group given in TrainerOptions):
// every rank runs the same trials and returns the same BestRun as rank 0's study holds, and a
// trial that fails on one rank (its model_init errs) fails on both, is recorded FAIL by rank 0,
// and ends the search with an error on every rank instead of a hang.
#include <torch/torch.h>

#include <memory>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/file_util.h"
#include "base/free_port.h"
#include "base/status_macros.h"
#include "base/status_matchers.h"
#include "distributed/multiprocess_testing.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hpsearch/journal.h"
#include "modeling/testing_models.h"
#include "trainer/trainer.h"

namespace loom {
namespace {

using base::PickFreePort;
using distributed::testing::JoinGroup;
using distributed::testing::RunRanks;
using ::testing::Each;

std::shared_ptr<data::TensorDataset> Data(int64_t n, uint64_t seed) {
  at::Generator g = at::make_generator<at::CPUGeneratorImpl>(seed);
  at::Tensor x = at::randn({n, 4}, g);
  at::Tensor y = at::matmul(x, at::tensor({1.0f, -2.0f, 0.5f, 3.0f}));
  return *data::TensorDataset::Create({{"x", x}, {"labels", y}});
}

// A search of 4 trials; on `failing_rank`, model_init errs at its `fail_at`-th call (the first
// is the Trainer's construction, then one per trial).
absl::StatusOr<trainer::BestRun> Search(distributed::ProcessGroup pg, const std::string& dir,
                                        int failing_rank, int fail_at, int rank) {
  trainer::TrainerOptions o;
  o.args.set_output_dir(dir);
  o.args.set_per_device_train_batch_size(4);
  o.args.set_save_strategy("no");
  o.args.set_disable_tqdm(true);
  o.args.add_report_to("none");
  auto calls = std::make_shared<int>(0);
  o.model_init = [calls, failing_rank, fail_at,
                  rank]() -> absl::StatusOr<std::shared_ptr<trainer::Model>> {
    if (++*calls == fail_at && rank == failing_rank) {
      return absl::InternalError("model_init failed on purpose");
    }
    return std::make_shared<modeling::testing::LinearRegressor>(4);
  };
  o.train_dataset = Data(32, 1);
  o.eval_dataset = Data(16, 2);
  o.process_group = std::move(pg);
  ASSIGN_OR_RETURN(auto t, trainer::Trainer::Create(std::move(o)));
  trainer::HpSearchOptions hp;
  hp.hp_space = *hpsearch::ParseSearchSpace(
      R"({"learning_rate": {"type": "float", "low": 1e-3, "high": 0.1, "log": true},
          "num_train_epochs": {"type": "int", "low": 1, "high": 3}})");
  hp.n_trials = 4;
  hp.backend = "random";
  return t->HyperparameterSearch(hp);
}

absl::StatusOr<std::vector<hpsearch::FrozenTrial>> JournalTrials(const std::string& dir) {
  ASSIGN_OR_RETURN(auto journal, hpsearch::JournalFile::OpenReadOnly(dir + "/hp_search.journal"));
  ASSIGN_OR_RETURN(auto ops, journal.Read());
  ASSIGN_OR_RETURN(hpsearch::JournalState state, hpsearch::Replay(ops));
  return state.TrialsOf(*state.FindStudy("hp_search"));
}

int Child(int rank, int port, const std::string& dir) {
  absl::StatusOr<distributed::ProcessGroup> pg = JoinGroup(rank, 2, port);
  CHILD_CHECK_OK(pg.status());
  // Every rank runs the 4 trials and ends with rank 0's best run.
  absl::StatusOr<trainer::BestRun> best = Search(*pg, dir + "/ok", /*failing_rank=*/-1, 0, rank);
  CHILD_CHECK_OK(best.status());
  CHILD_CHECK_OK(base::WriteFileAtomically(
      absl::StrCat(dir, "/best", rank, ".txt"),
      absl::StrCat(best->run_id, " ", best->objective, " ", best->hyperparameters.dump())));
  if (rank == 0) {
    auto trials = JournalTrials(dir + "/ok");
    CHILD_CHECK_OK(trials.status());
    CHILD_CHECK(trials->size() == 4);
    for (const auto& t : *trials) CHILD_CHECK(t.state == hpsearch::TrialState::kComplete);
  }
  // Trial 1 fails on rank 1 only (model_init's 3rd call): rank 1's search ends with its error at
  // once; rank 0's training of trial 1 then fails as rank 1 goes (this child returns and exits),
  // and rank 0 records the trial FAIL and ends its search too.
  absl::StatusOr<trainer::BestRun> failed = Search(*pg, dir + "/fail", /*failing_rank=*/1, 3, rank);
  CHILD_CHECK(!failed.ok());
  CHILD_CHECK(absl::StrContains(failed.status().message(), "hyperparameter search trial 1"));
  if (rank == 1) {
    CHILD_CHECK(absl::StrContains(failed.status().message(), "model_init failed on purpose"));
  } else {
    auto trials = JournalTrials(dir + "/fail");
    CHILD_CHECK_OK(trials.status());
    CHILD_CHECK(trials->size() == 2);
    CHILD_CHECK((*trials)[0].state == hpsearch::TrialState::kComplete);
    CHILD_CHECK((*trials)[1].state == hpsearch::TrialState::kFail);
  }
  return 0;
}

TEST(TrainerHpSearchDdpTest, RanksRunTheSameTrialsAndFailTogether) {
  const std::string dir = ::testing::TempDir() + "/trainer_hp_search_ddp";
  ASSERT_OK_AND_ASSIGN(const int port, PickFreePort());
  ASSERT_THAT(RunRanks(2, absl::Seconds(180), [&](int rank) { return Child(rank, port, dir); }),
              Each(0));
  ASSERT_OK_AND_ASSIGN(std::string best0, base::ReadFile(dir + "/best0.txt"));
  ASSERT_OK_AND_ASSIGN(std::string best1, base::ReadFile(dir + "/best1.txt"));
  EXPECT_EQ(best0, best1);
  EXPECT_FALSE(best0.empty());
}

}  // namespace
}  // namespace loom
