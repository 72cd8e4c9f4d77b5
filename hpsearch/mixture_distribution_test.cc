#include "hpsearch/mixture_distribution.h"

#include <cmath>
#include <vector>

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hpsearch/numpy_random.h"

// Goldens: optuna 4.6's _MixtureOfProductDistribution (probability_distributions.py) with
// numpy 1.24.2 (Debian's /usr/bin/python3):
//   mix = _MixtureOfProductDistribution(weights=[0.2, 0.3, 0.5], distributions=[
//       _BatchedCategoricalDistributions([[0.1, 0.6, 0.3], [0.2, 0.2, 0.6], [1/3] * 3]),
//       _BatchedTruncNormDistributions([0.1, 0.5, 0.9], [0.2, 0.3, 1.0], 0.0, 1.0),
//       _BatchedDiscreteTruncNormDistributions([2, 6, 5], [1, 2, 10], 0.0, 10.0, 2.0)])
//   s = mix.sample(numpy.random.RandomState(11), 6); mix.log_pdf(s)
namespace loom::hpsearch {
namespace {

using ::testing::ElementsAre;

MixtureOfProductDistribution Mixture() {
  MixtureOfProductDistribution mix;
  mix.weights = {0.2, 0.3, 0.5};
  mix.distributions.push_back(
      CategoricalKernels{3, {0.1, 0.6, 0.3, 0.2, 0.2, 0.6, 1.0 / 3, 1.0 / 3, 1.0 / 3}});
  mix.distributions.push_back(TruncNormKernels{{0.1, 0.5, 0.9}, {0.2, 0.3, 1.0}, 0.0, 1.0, 0.0});
  mix.distributions.push_back(TruncNormKernels{{2.0, 6.0, 5.0}, {1.0, 2.0, 10.0}, 0.0, 10.0, 2.0});
  return mix;
}

void ExpectNear(const std::vector<double>& actual, const std::vector<double>& expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    EXPECT_NEAR(actual[i], expected[i], 1e-14 * std::abs(expected[i])) << "element " << i;
  }
}

TEST(MixtureOfProductDistributionTest, SampleAndLogPdfMatchOptuna) {
  NumpyRandomState rng(11);
  ASSERT_OK_AND_ASSIGN(std::vector<std::vector<double>> s, Mixture().Sample(rng, 6));
  ASSERT_EQ(s.size(), 3u);
  EXPECT_THAT(s[0], ElementsAre(0, 1, 2, 2, 2, 0));
  ExpectNear(s[1], {0.3902367924511355, 0.35771218433191243, 0.24439008528940137,
                    0.6699440597726443, 0.04885928092128172, 0.19337380863016213});
  EXPECT_THAT(s[2], ElementsAre(2, 2, 8, 8, 6, 6));
  // choice: 2 draws per sample; rand: 2; uniform for 2 numerical parameters: 4.
  EXPECT_EQ(rng.draws(), 6u * 8);
  ExpectNear(Mixture().LogPdf(s), {-3.0687572077375744, -2.0010402015502358, -2.6561115646253066,
                                   -2.458658276161516, -2.8825362976956965, -3.0835266504410517});
}

TEST(MixtureOfProductDistributionTest, BadWeightsAreRefusedWithoutDrawing) {
  MixtureOfProductDistribution mix = Mixture();
  mix.weights = {0.5, 0.5, 0.5};
  NumpyRandomState rng(1);
  EXPECT_THAT(mix.Sample(rng, 4), base::testing::StatusIs(absl::StatusCode::kInvalidArgument,
                                                          ::testing::HasSubstr("kernels")));
  EXPECT_EQ(rng.draws(), 0u);
}

}  // namespace
}  // namespace loom::hpsearch
