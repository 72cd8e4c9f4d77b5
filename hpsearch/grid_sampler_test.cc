#include "hpsearch/grid_sampler.h"

#include <memory>
#include <string>
#include <vector>

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hpsearch/distribution.h"
#include "hpsearch/trial.h"

// Goldens: optuna 4.6's GridSampler({"b": [1, 2, 3], "a": ["x", "y"]}, seed=4) driven with
// study.ask() / study.tell() (Debian's /usr/bin/python3, numpy 1.24.2): trials 0..5 get grids
// 0..5 = (a, b) ('y', 2), ('y', 3), ('y', 1), ('x', 1), ('x', 2), ('x', 3); after telling 0, 2
// and 3, trials 6..9 get grids 4, 1, 5, 5 (6 and 7 told), and the generator has taken 11
// draws.
namespace loom::hpsearch {
namespace {

using ::loom::base::testing::IsOkAndHolds;
using ::loom::base::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

SearchSpace Space() {
  SearchSpace space;
  space.params.emplace_back("b", IntDistribution{1, 3});
  space.params.emplace_back("a", CategoricalDistribution{{"x", "y"}});
  return space;
}

// Starts trial trials.size() (RUNNING), runs BeforeTrial and returns its (a, b) values.
std::pair<std::string, int64_t> Ask(GridSampler& grid, std::vector<FrozenTrial>& trials) {
  FrozenTrial t;
  t.number = static_cast<int64_t>(trials.size());
  trials.push_back(t);
  const StudyView view{Direction::kMinimize, trials};
  EXPECT_OK(grid.BeforeTrial(view, trials.back()));
  const SearchSpace space = Space();
  const double b = grid.SampleIndependent(view, trials.back(), "b", space.params[0].second).value();
  const double a = grid.SampleIndependent(view, trials.back(), "a", space.params[1].second).value();
  return {a == 0 ? "x" : "y", static_cast<int64_t>(b)};
}

TEST(GridSamplerTest, ShuffledGridAndRandomChoicesMatchOptuna) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<GridSampler> grid, GridSampler::Create(Space(), 4));
  EXPECT_EQ(grid->n_grids(), 6);
  std::vector<FrozenTrial> trials;
  std::vector<std::pair<std::string, int64_t>> values;
  for (int k = 0; k < 6; ++k) values.push_back(Ask(*grid, trials));
  EXPECT_THAT(values, ElementsAre(std::pair<std::string, int64_t>{"y", 2}, std::pair{"y", 3},
                                  std::pair{"y", 1}, std::pair{"x", 1}, std::pair{"x", 2},
                                  std::pair{"x", 3}));
  EXPECT_EQ(trials[3].system_attrs["grid_id"], 3);
  EXPECT_EQ(trials[3].system_attrs["search_space"],
            nlohmann::json::parse(R"({"a": ["x", "y"], "b": [1, 2, 3]})"));
  for (int k : {0, 2, 3}) trials[k].state = TrialState::kComplete;
  std::vector<int64_t> grid_ids;
  for (int k = 6; k < 10; ++k) {
    Ask(*grid, trials);
    grid_ids.push_back(trials.back().system_attrs["grid_id"].get<int64_t>());
    if (k == 6 || k == 7) trials.back().state = TrialState::kComplete;
  }
  EXPECT_THAT(grid_ids, ElementsAre(4, 1, 5, 5));
  EXPECT_EQ(grid->RngState(), nlohmann::json({{"grid", 11}}));
}

TEST(GridSamplerTest, SeedZeroIsOptunasDefault) {
  // GridSampler(space, seed=None) shuffles with RandomState(0): ('y', 3) first.
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<GridSampler> grid, GridSampler::Create(Space(), 0));
  EXPECT_EQ(*grid->Value(0, "a"), "y");
  EXPECT_EQ(*grid->Value(0, "b"), 3);
  EXPECT_EQ(*grid->Value(5, "b"), 2);
}

TEST(GridSamplerTest, ExhaustedAfterTheLastGrid) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<GridSampler> grid, GridSampler::Create(Space(), 1));
  std::vector<FrozenTrial> trials;
  for (int k = 0; k < 6; ++k) {
    Ask(*grid, trials);
    const StudyView view{Direction::kMinimize, trials};
    EXPECT_EQ(grid->ExhaustedAfter(view, trials.back()), k == 5) << k;
    trials.back().state = TrialState::kComplete;
    EXPECT_EQ(grid->ExhaustedAfter(view, trials.back()), k == 5) << k;
  }
}

TEST(GridSamplerTest, SteppedFloatsAndErrors) {
  SearchSpace space;
  space.params.emplace_back("d", *MakeFloat("d", 0, 0.3, false, 0.1));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<GridSampler> grid, GridSampler::Create(space, 0));
  // low + k step (3 * 0.1 == 0.30000000000000004), capped at high.
  EXPECT_EQ(grid->search_space()["d"], nlohmann::json::parse("[0.0, 0.1, 0.2, 0.3]"));
  SearchSpace fine;
  fine.params.emplace_back("d", *MakeFloat("d", 0, 0.4, false, 0.1));
  ASSERT_OK_AND_ASSIGN(grid, GridSampler::Create(fine, 0));
  EXPECT_EQ(grid->search_space()["d"],
            nlohmann::json::parse("[0.0, 0.1, 0.2, 0.30000000000000004, 0.4]"));

  SearchSpace continuous;
  continuous.params.emplace_back("lr", *MakeFloat("lr", 1e-5, 1e-3, true));
  EXPECT_THAT(GridSampler::Create(continuous, 0),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("grid search needs a finite set of values")));
  SearchSpace huge;
  huge.params.emplace_back("i", IntDistribution{0, 100000});
  huge.params.emplace_back("j", IntDistribution{0, 100000});
  EXPECT_THAT(GridSampler::Create(huge, 0),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("10000000 points")));
  EXPECT_THAT(GridSampler::Create(SearchSpace{}, 0),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("empty")));
}

TEST(GridSamplerTest, SamplingNeedsAGridIdAndAKnownName) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<GridSampler> grid, GridSampler::Create(Space(), 0));
  std::vector<FrozenTrial> trials(1);
  const StudyView view{Direction::kMinimize, trials};
  EXPECT_THAT(grid->SampleIndependent(view, trials[0], "b", IntDistribution{1, 3}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("enqueue_trial")));
  ASSERT_OK(grid->BeforeTrial(view, trials[0]));
  EXPECT_THAT(
      grid->SampleIndependent(view, trials[0], "c", IntDistribution{1, 3}),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not found in the given grid")));
  EXPECT_THAT(grid->SampleIndependent(view, trials[0], "one", IntDistribution{4, 4}),
              IsOkAndHolds(4.0));
  // A trial with "fixed_params" (enqueued) keeps its own values.
  FrozenTrial fixed;
  fixed.system_attrs["fixed_params"] = {{"b", 1}};
  ASSERT_OK(grid->BeforeTrial(view, fixed));
  EXPECT_FALSE(fixed.system_attrs.contains("grid_id"));
}

}  // namespace
}  // namespace loom::hpsearch
