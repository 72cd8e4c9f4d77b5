// TPE finds the optimum region in fewer trials than random search, averaged over 20 seeds,
// on the 1-D quadratic and the 3-D mixed objective of sequential_study.h (both 0 at the
// optimum). The region: objective <= 0.05 (1-D; |x - 1.7| <= 0.22) and <= 0.3 (3-D: tanh
// with layers 3..5 and lr near 1e-3, or gelu with layers 4 and lr very near 1e-3). A study
// that never gets there counts as kTrials + 1.
#include <cstdint>
#include <iostream>
#include <string>
#include <vector>

#include "base/status_matchers.h"
#include "gtest/gtest.h"
#include "hpsearch/distribution.h"
#include "hpsearch/trial.h"
#include "tests/hpsearch/sequential_study.h"

namespace loom::hpsearch::testing {
namespace {

constexpr int64_t kTrials = 150;
constexpr int kSeeds = 20;

// The number of trials until the first one inside the region (1-based).
int64_t TrialsToRegion(const std::string& backend, const std::string& objective, uint32_t seed,
                       double threshold) {
  StudyConfig config;
  config.sampler = backend;
  config.seed = seed;
  config.objective = objective;
  config.n_trials = kTrials;
  absl::StatusOr<SearchSpace> space = ObjectiveSpace(objective);
  EXPECT_TRUE(space.ok()) << space.status();
  config.space = *space;
  absl::StatusOr<std::vector<FrozenTrial>> trials = RunSequentialStudy(config);
  EXPECT_TRUE(trials.ok()) << trials.status();
  if (!trials.ok()) return kTrials + 1;
  for (const FrozenTrial& t : *trials) {
    if (t.value && *t.value <= threshold) return t.number + 1;
  }
  return kTrials + 1;
}

double AverageTrialsToRegion(const std::string& backend, const std::string& objective,
                             double threshold) {
  double total = 0;
  for (uint32_t seed = 0; seed < kSeeds; ++seed) {
    total += static_cast<double>(TrialsToRegion(backend, objective, seed, threshold));
  }
  return total / kSeeds;
}

TEST(TpeVsRandomTest, TpeReachesTheOptimumRegionSoonerOnOneDimension) {
  const double tpe = AverageTrialsToRegion("tpe", "quadratic_1d", 0.05);
  const double random = AverageTrialsToRegion("random", "quadratic_1d", 0.05);
  std::cout << "quadratic_1d, (x - 1.7)^2 <= 0.05: TPE " << tpe << " trials, random " << random
            << " trials (mean over " << kSeeds << " seeds)\n";
  EXPECT_LT(tpe, random);
}

TEST(TpeVsRandomTest, TpeReachesTheOptimumRegionSoonerOnThreeDimensions) {
  const double tpe = AverageTrialsToRegion("tpe", "mixed_3d", 0.3);
  const double random = AverageTrialsToRegion("random", "mixed_3d", 0.3);
  std::cout << "mixed_3d, objective <= 0.3: TPE " << tpe << " trials, random " << random
            << " trials (mean over " << kSeeds << " seeds)\n";
  EXPECT_LT(tpe, random);
}

}  // namespace
}  // namespace loom::hpsearch::testing
