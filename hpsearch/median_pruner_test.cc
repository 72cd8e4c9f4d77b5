#include "hpsearch/median_pruner.h"

#include <cmath>
#include <limits>
#include <map>
#include <vector>

#include "base/status_matchers.h"
#include "gtest/gtest.h"
#include "hpsearch/trial.h"

namespace loom::hpsearch {
namespace {

using ::loom::base::testing::StatusIs;
using ::testing::HasSubstr;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

TEST(NanPercentileTest, MatchesNumpy) {
  // numpy.nanpercentile(values, q) with numpy 1.24.2.
  EXPECT_EQ(NanPercentile({3.0, 1.0, 2.0}, 50), 2.0);
  EXPECT_EQ(NanPercentile({4.0, 1.0, 3.0, 2.0}, 50), 2.5);
  EXPECT_EQ(NanPercentile({1.0, kNaN, 5.0, 2.0}, 50), 2.0);
  EXPECT_EQ(NanPercentile({0.1, 0.7}, 50), 0.39999999999999997);
  EXPECT_EQ(NanPercentile({2.0}, 50), 2.0);
  EXPECT_EQ(NanPercentile({1.0, 2.0, 3.0, 4.0, 5.0}, 25), 2.0);
  EXPECT_EQ(NanPercentile({1.0, 2.0, 3.0, 4.0}, 90), 3.7);
  EXPECT_EQ(NanPercentile({5.0, 1.0}, 100), 5.0);
  EXPECT_EQ(NanPercentile({5.0, 1.0}, 0), 1.0);
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_TRUE(std::isnan(NanPercentile({1.0, inf, inf}, 50)));  // numpy's inf - inf
  EXPECT_TRUE(std::isnan(NanPercentile({kNaN}, 50)));
  EXPECT_TRUE(std::isnan(NanPercentile({}, 50)));
}

FrozenTrial Completed(int64_t number, std::map<int64_t, double> steps) {
  FrozenTrial t;
  t.number = number;
  t.state = TrialState::kComplete;
  t.value = steps.empty() ? 0.0 : steps.rbegin()->second;
  t.intermediate_values = std::move(steps);
  return t;
}

// Five completed trials whose values at every step 0..3 are 1, 2, 3, 4, 5, then the running
// trial with `query`'s intermediate values.
std::vector<FrozenTrial> Study(std::map<int64_t, double> query) {
  std::vector<FrozenTrial> trials;
  for (int k = 0; k < 5; ++k) {
    const double v = k + 1;
    trials.push_back(Completed(k, {{0, v}, {1, v}, {2, v}, {3, v}}));
  }
  FrozenTrial running;
  running.number = 5;
  running.intermediate_values = std::move(query);
  trials.push_back(running);
  return trials;
}

bool Prune(const MedianPrunerOptions& options, Direction direction,
           std::map<int64_t, double> query) {
  const std::vector<FrozenTrial> trials = Study(std::move(query));
  absl::StatusOr<MedianPruner> pruner = MedianPruner::Create(options);
  EXPECT_TRUE(pruner.ok()) << pruner.status();
  return pruner->Prune(StudyView{direction, trials}, trials.back());
}

TEST(MedianPrunerTest, PrunesWorseThanTheMedian) {
  EXPECT_TRUE(Prune({}, Direction::kMinimize, {{0, 3.5}}));
  EXPECT_FALSE(Prune({}, Direction::kMinimize, {{0, 2.5}}));
  EXPECT_FALSE(Prune({}, Direction::kMinimize, {{0, 3.0}}));
  // The best value over the steps counts: 2.0 at step 0.
  EXPECT_FALSE(Prune({}, Direction::kMinimize, {{0, 2.0}, {1, 9.0}}));
  EXPECT_TRUE(Prune({}, Direction::kMaximize, {{0, 2.5}}));
  EXPECT_FALSE(Prune({}, Direction::kMaximize, {{0, 1.0}, {1, 3.5}}));
}

TEST(MedianPrunerTest, StartupWarmupAndIntervals) {
  EXPECT_FALSE(Prune({.n_startup_trials = 6}, Direction::kMinimize, {{0, 9.0}}));
  EXPECT_FALSE(Prune({.n_warmup_steps = 2}, Direction::kMinimize, {{0, 9.0}, {1, 9.0}}));
  EXPECT_TRUE(Prune({.n_warmup_steps = 2}, Direction::kMinimize, {{0, 9.0}, {2, 9.0}}));
  // interval 2: step 2 is the first report at or after pruning step 2; step 3 is not.
  EXPECT_TRUE(Prune({.interval_steps = 2}, Direction::kMinimize, {{0, 9}, {1, 9}, {2, 9}}));
  EXPECT_FALSE(
      Prune({.interval_steps = 2}, Direction::kMinimize, {{0, 9}, {1, 9}, {2, 9}, {3, 9}}));
  EXPECT_TRUE(Prune({.interval_steps = 2}, Direction::kMinimize, {{0, 9}, {1, 9}, {3, 9}}));
  // No completed trial reported step 7; fewer than n_min_trials did at step 0.
  EXPECT_FALSE(Prune({}, Direction::kMinimize, {{7, 9.0}}));
  EXPECT_FALSE(Prune({.n_min_trials = 6}, Direction::kMinimize, {{0, 9.0}}));
  EXPECT_FALSE(Prune({}, Direction::kMinimize, {}));
}

TEST(MedianPrunerTest, NaNs) {
  EXPECT_TRUE(Prune({}, Direction::kMinimize, {{0, kNaN}, {1, kNaN}}));
  EXPECT_FALSE(Prune({}, Direction::kMinimize, {{0, kNaN}, {1, 1.5}}));
}

TEST(MedianPrunerTest, RefusesBadOptions) {
  EXPECT_THAT(MedianPruner::Create({.n_startup_trials = -1}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("n_startup_trials=-1")));
  EXPECT_THAT(MedianPruner::Create({.n_warmup_steps = -1}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("n_warmup_steps")));
  EXPECT_THAT(MedianPruner::Create({.interval_steps = 0}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("interval_steps")));
  EXPECT_THAT(MedianPruner::Create({.n_min_trials = 0}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("n_min_trials")));
  EXPECT_THAT(MedianPruner::Create({.percentile = 101}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("percentile")));
}

}  // namespace
}  // namespace loom::hpsearch
