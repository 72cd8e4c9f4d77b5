#include "hpsearch/tpe_sampler.h"

#include <cmath>
#include <limits>
#include <vector>

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hpsearch/distribution.h"
#include "hpsearch/numpy_svml.h"
#include "hpsearch/trial.h"

// Goldens: optuna 4.6 (Debian's /usr/bin/python3, numpy 1.24.2 on an AVX-512 CPU).
namespace loom::hpsearch {
namespace {

TEST(TpeSamplerTest, DefaultGamma) {
  EXPECT_EQ(DefaultTpeGamma(0), 0);
  EXPECT_EQ(DefaultTpeGamma(10), 1);
  EXPECT_EQ(DefaultTpeGamma(11), 2);
  EXPECT_EQ(DefaultTpeGamma(30), 3);
  EXPECT_EQ(DefaultTpeGamma(100), 10);
  EXPECT_EQ(DefaultTpeGamma(1000), 25);
}

std::vector<FrozenTrial> SplitCase() {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<FrozenTrial> t(9);
  for (int i = 0; i < 9; ++i) t[i].number = i;
  auto complete = [&](int i, double v) {
    t[i].state = TrialState::kComplete;
    t[i].value = v;
  };
  auto pruned = [&](int i, std::map<int64_t, double> steps) {
    t[i].state = TrialState::kPruned;
    t[i].intermediate_values = std::move(steps);
  };
  complete(0, 3.0);
  pruned(1, {{0, 1.0}, {1, 0.5}});
  complete(2, 1.0);
  pruned(3, {{0, 0.1}});
  pruned(4, {});
  complete(5, 1.0);
  pruned(6, {{0, 2.0}, {1, nan}});
  complete(7, 2.0);
  pruned(8, {{0, 3.0}, {1, 0.25}});
  return t;
}

std::vector<int64_t> Numbers(const std::vector<const FrozenTrial*>& trials) {
  std::vector<int64_t> out;
  for (const FrozenTrial* t : trials) out.push_back(t->number);
  return out;
}

TEST(TpeSamplerTest, SplitTrialsMatchesOptuna) {
  // optuna's _split_trials(study, trials, n_below, False) on the trials of SplitCase().
  const std::vector<FrozenTrial> trials = SplitCase();
  std::vector<const FrozenTrial*> ptrs;
  for (const FrozenTrial& t : trials) ptrs.push_back(&t);
  struct Expected {
    Direction direction;
    int64_t n_below;
    std::vector<int64_t> below;
  };
  const Expected cases[] = {
      {Direction::kMinimize, 2, {2, 5}},
      {Direction::kMinimize, 5, {0, 2, 5, 7, 8}},
      {Direction::kMinimize, 7, {0, 1, 2, 5, 6, 7, 8}},
      {Direction::kMaximize, 2, {0, 7}},
      {Direction::kMaximize, 5, {0, 1, 2, 5, 7}},
      {Direction::kMaximize, 7, {0, 1, 2, 5, 6, 7, 8}},
  };
  for (const Expected& c : cases) {
    ASSERT_OK_AND_ASSIGN(TrialSplit split, SplitTrials(c.direction, ptrs, c.n_below));
    EXPECT_EQ(Numbers(split.below), c.below) << DirectionName(c.direction) << " " << c.n_below;
    EXPECT_EQ(split.below.size() + split.above.size(), trials.size());
  }
  std::vector<FrozenTrial> no_value(1);
  no_value[0].state = TrialState::kComplete;
  EXPECT_THAT(SplitTrials(Direction::kMinimize, {&no_value[0]}, 1),
              base::testing::StatusIs(absl::StatusCode::kFailedPrecondition,
                                      ::testing::HasSubstr("has no value")));
}

double Mixed3d(double lr, int64_t layers, int64_t act) {
  const double t = std::log10(lr) + 3;
  const int64_t l = layers - 4;
  const double costs[] = {0.5, 0.0, 0.25};
  return t * t + 0.1 * static_cast<double>(l * l) + costs[act];
}

// optuna.create_study(sampler=TPESampler(seed=0)).optimize(objective, n_trials=15) with
// lr ~ FloatDistribution(1e-5, 1e-1, log=True), layers ~ IntDistribution(1, 8),
// act ~ CategoricalDistribution(["relu", "tanh", "gelu"]) and Mixed3d as the objective.
TEST(TpeSamplerTest, SequentialStudyMatchesOptuna) {
  struct Params {
    double lr;
    int64_t layers, act;
  };
  // In the last trial l(x) / g(x) ties between tanh and gelu: numpy's SVML logarithms break
  // the tie for gelu; with the C library's (numpy on CPUs without AVX-512) they stay equal and
  // tanh, the first candidate, wins.
  const int64_t last_act = numpy::UsesSvml() ? 2 : 1;
  const Params expected[] = {
      {0.0015676677195506068, 6, 0},        {0.0038333321561566623, 4, 1},
      {0.014685885989200861, 5, 1},         {2.2310905607443014e-05, 1, 2},
      {0.0821246192225687, 7, 1},           {0.0036281404040243792, 2, 0},
      {0.00011434638743472202, 7, 1},       {0.002954894558726684, 5, 1},
      {0.00027417736752420927, 4, 0},       {0.004814503186400559, 2, 2},
      {0.053302393770990886, 8, 1},         {0.000432336605739758, 4, 1},
      {0.00034428283073267434, 5, 1},       {0.00032824303542765894, 3, 1},
      {3.649721559993561e-05, 6, last_act},
  };
  SearchSpace space;
  space.params.emplace_back("lr", FloatDistribution{1e-5, 1e-1, true});
  space.params.emplace_back("layers", IntDistribution{1, 8});
  space.params.emplace_back("act", CategoricalDistribution{{"relu", "tanh", "gelu"}});
  TpeSampler sampler(TpeOptions{});
  std::vector<FrozenTrial> trials;
  for (int k = 0; k < 15; ++k) {
    trials.emplace_back();
    trials.back().number = k;
    const StudyView view{Direction::kMinimize, trials};
    for (const auto& [name, d] : space.params) {
      ASSERT_OK_AND_ASSIGN(double v, sampler.SampleIndependent(view, trials.back(), name, d));
      trials.back().params[name] = v;
      trials.back().distributions.insert_or_assign(name, d);
    }
    const FrozenTrial& t = trials.back();
    EXPECT_NEAR(t.params.at("lr"), expected[k].lr, 1e-12 * expected[k].lr) << "trial " << k;
    EXPECT_EQ(t.params.at("layers"), expected[k].layers) << "trial " << k;
    EXPECT_EQ(t.params.at("act"), expected[k].act) << "trial " << k;
    trials.back().state = TrialState::kComplete;
    trials.back().value = Mixed3d(t.params.at("lr"), static_cast<int64_t>(t.params.at("layers")),
                                  static_cast<int64_t>(t.params.at("act")));
  }
  // Five TPE trials of three parameters, 96 32-bit draws each (4 per candidate); ten random
  // trials of 2 + 2 + 3 * 2 draws.
  EXPECT_EQ(sampler.RngState(), nlohmann::json({{"tpe", 1440}, {"random", 100}}));
  TpeSampler restored(TpeOptions{});
  ASSERT_OK(restored.RestoreRngState(sampler.RngState()));
  trials.emplace_back();
  trials.back().number = 15;
  const StudyView view{Direction::kMinimize, trials};
  EXPECT_EQ(*sampler.SampleIndependent(view, trials.back(), "lr", space.params[0].second),
            *restored.SampleIndependent(view, trials.back(), "lr", space.params[0].second));
}

TEST(TpeSamplerTest, ObservationsAreReadInTheDistributionAskedFor) {
  // A trial whose "c" was sampled from other choices: its value is looked up in the new ones.
  std::vector<FrozenTrial> trials(11);
  for (int k = 0; k < 11; ++k) {
    trials[k].number = k;
    trials[k].state = TrialState::kComplete;
    trials[k].value = k;
    trials[k].params["c"] = k % 2;
    trials[k].distributions.insert_or_assign("c", CategoricalDistribution{{"a", "b"}});
  }
  trials[10].state = TrialState::kRunning;
  TpeSampler sampler(TpeOptions{});
  const StudyView view{Direction::kMinimize, trials};
  EXPECT_OK(
      sampler.SampleIndependent(view, trials[10], "c", CategoricalDistribution{{"b", "a", "z"}})
          .status());
  EXPECT_THAT(sampler.SampleIndependent(view, trials[10], "c",
                                        CategoricalDistribution{
                                            {"z"},
                                        }),
              base::testing::IsOkAndHolds(0.0));  // single-valued: no observation is read
  EXPECT_THAT(
      sampler.SampleIndependent(view, trials[10], "c", CategoricalDistribution{{"a", "z"}}),
      base::testing::StatusIs(absl::StatusCode::kInvalidArgument, ::testing::HasSubstr("trial 1")));
}

}  // namespace
}  // namespace loom::hpsearch
