// trainer/hp_search.h: HF's defaults, the backend and direction names, the search report.
#include "trainer/hp_search.h"

#include <string>

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::trainer {
namespace {

using ::loom::base::testing::IsOkAndHolds;
using ::loom::base::testing::StatusIs;
using ::testing::HasSubstr;

TEST(HpSearch, DefaultsAreHfs) {
  hpsearch::SearchSpace space = DefaultHpSpaceOptuna();
  ASSERT_EQ(space.params.size(), 4u);
  EXPECT_EQ(space.params[0].first, "learning_rate");
  EXPECT_EQ(space.params[3].first, "per_device_train_batch_size");
  EXPECT_THAT(DefaultComputeObjective(Metrics{{"eval_loss", 0.5},
                                              {"epoch", 3.0},
                                              {"eval_runtime", 1.0},
                                              {"eval_samples_per_second", 9.0}}),
              IsOkAndHolds(0.5));
  EXPECT_THAT(DefaultComputeObjective(Metrics{
                  {"eval_loss", 0.5}, {"eval_accuracy", 0.75}, {"eval_f1", 0.5}, {"epoch", 3.0}}),
              IsOkAndHolds(1.25));
}

TEST(HpSearch, BackendsAndDirections) {
  EXPECT_THAT(ResolveBackend("optuna"), IsOkAndHolds("tpe"));
  EXPECT_THAT(ResolveBackend("grid"), IsOkAndHolds("grid"));
  EXPECT_THAT(ResolveBackend("sigopt"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("grid, random, tpe")));
  EXPECT_THAT(ResolveDirection({"maximize"}), IsOkAndHolds(hpsearch::Direction::kMaximize));
  EXPECT_THAT(ResolveDirection({"up"}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("\"maximize\"")));
  EXPECT_THAT(DefaultComputeObjective(Metrics{{"epoch", 1.0}}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no eval_loss")));
}

TEST(HpSearch, ReportHasEveryTrialAndTheBestRun) {
  hpsearch::SearchSpace space = *hpsearch::ParseSearchSpace(
      R"({"learning_rate": {"type": "float", "low": 0.001, "high": 0.1, "log": true}})");
  hpsearch::FrozenTrial done, pruned;
  done.number = 0;
  done.state = hpsearch::TrialState::kComplete;
  done.value = 0.5;
  done.params["learning_rate"] = 0.01;
  done.distributions.insert_or_assign("learning_rate", space.params[0].second);
  pruned = done;
  pruned.number = 1;
  pruned.state = hpsearch::TrialState::kPruned;
  pruned.value = 0.9;
  pruned.intermediate_values[4] = 0.9;
  const BestRun best{"0", 0.5, {{"learning_rate", 0.01}}, nullptr};
  const nlohmann::ordered_json report = SearchReport(
      {done, pruned}, space, best, [](int64_t n) { return "run-" + std::to_string(n); });
  ASSERT_EQ(report["trials"].size(), 2u);
  EXPECT_EQ(report["trials"][1]["state"], "pruned");
  EXPECT_EQ(report["trials"][1]["run_name"], "run-1");
  EXPECT_EQ(report["trials"][1]["intermediate_values"]["4"], 0.9);
  EXPECT_EQ(report["trials"][0]["params"]["learning_rate"], 0.01);
  EXPECT_EQ(report["best_run"]["run_id"], "0");
  EXPECT_TRUE(report["best_run"]["run_summary"].is_null());
  const std::string table = SearchTable(report);
  EXPECT_THAT(table, HasSubstr("run-1    pruned     0.9"));
  EXPECT_THAT(table, HasSubstr("best run: 0 objective 0.5"));
}

}  // namespace
}  // namespace loom::trainer
