#include "hpsearch/random_sampler.h"

#include <vector>

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hpsearch/distribution.h"

// Goldens: optuna 4.6's RandomSampler(seed=7).sample_independent over, twice in a row,
//   FloatDistribution(-5, 5), FloatDistribution(1e-5, 1e-1, log=True),
//   FloatDistribution(0, 1, step=0.1), IntDistribution(1, 8), IntDistribution(0, 18, step=3),
//   IntDistribution(1, 1000, log=True), CategoricalDistribution(["a", "b", "c", None])
// then rng.random_sample() == 0.6005489174641225 (Debian's /usr/bin/python3, numpy 1.24.2).
namespace loom::hpsearch {
namespace {

using ::loom::base::testing::StatusIs;
using ::testing::HasSubstr;

std::vector<Distribution> Distributions() {
  return {FloatDistribution{-5, 5},
          FloatDistribution{1e-5, 1e-1, true},
          FloatDistribution{0, 1, false, 0.1},
          IntDistribution{1, 8},
          IntDistribution{0, 18, false, 3},
          IntDistribution{1, 1000, true},
          CategoricalDistribution{{"a", "b", "c", nullptr}}};
}

std::vector<double> Draw(RandomSampler& sampler) {
  std::vector<double> out;
  for (int round = 0; round < 2; ++round) {
    for (const Distribution& d : Distributions()) {
      absl::StatusOr<double> v = sampler.Sample(d);
      EXPECT_TRUE(v.ok()) << v.status();
      out.push_back(v.value_or(-1));
    }
  }
  return out;
}

TEST(RandomSamplerTest, MatchesOptuna) {
  RandomSampler sampler(7);
  EXPECT_THAT(Draw(sampler),
              ::testing::ElementsAre(-4.236917106260428, 0.013172711156111799, 0.4, 6, 18, 30, 0,
                                     1.7922999612094053, 0.01640424112822734, 0.4, 1, 6, 503, 2));
  NumpyRandomState rng = sampler.rng();
  EXPECT_EQ(rng.RandomSample(), 0.6005489174641225);
}

TEST(RandomSamplerTest, SingleValuedDistributionsDrawNothing) {
  RandomSampler sampler(7);
  EXPECT_THAT(sampler.Sample(FloatDistribution{2.0, 2.0}), base::testing::IsOkAndHolds(2.0));
  EXPECT_THAT(sampler.Sample(CategoricalDistribution{{"x"}}), base::testing::IsOkAndHolds(0.0));
  EXPECT_EQ(sampler.rng().draws(), 0u);
}

TEST(RandomSamplerTest, RestoredStateContinuesTheStream) {
  RandomSampler first(7);
  ASSERT_OK(first.Sample(FloatDistribution{0, 1}).status());
  const nlohmann::json state = first.RngState();
  EXPECT_EQ(state, nlohmann::json({{"random", 2}}));
  RandomSampler second(7);
  ASSERT_OK(second.RestoreRngState(state));
  EXPECT_EQ(*first.Sample(FloatDistribution{0, 1}), *second.Sample(FloatDistribution{0, 1}));
  EXPECT_THAT(second.RestoreRngState({{"tpe", 3}}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("\"random\"")));
  EXPECT_THAT(second.RestoreRngState({{"random", -1}}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("non-negative")));
}

}  // namespace
}  // namespace loom::hpsearch
