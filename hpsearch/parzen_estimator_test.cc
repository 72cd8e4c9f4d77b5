#include "hpsearch/parzen_estimator.h"

#include <cmath>
#include <string>
#include <variant>
#include <vector>

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hpsearch/distribution.h"
#include "hpsearch/numpy_random.h"

// Goldens: optuna 4.6's _ParzenEstimator with TPESampler's default parameters and numpy
// 1.24.2 (Debian's /usr/bin/python3):
//   pe = _ParzenEstimator({name: numpy.array(obs)}, {name: dist}, parameters)
//   pe._mixture_distribution (weights, mu, sigma), pe.sample(RandomState(5), 5), pe.log_pdf(s)
namespace loom::hpsearch {
namespace {

using ::loom::base::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

void ExpectNear(const std::vector<double>& actual, const std::vector<double>& expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    EXPECT_NEAR(actual[i], expected[i], 1e-14 * std::abs(expected[i])) << "element " << i;
  }
}

SearchSpace Space(const std::string& name, absl::StatusOr<Distribution> d) {
  SearchSpace space;
  space.params.emplace_back(name, *d);
  return space;
}

TEST(ParzenEstimatorTest, ContinuousKernelsAndDraws) {
  ASSERT_OK_AND_ASSIGN(
      ParzenEstimator pe,
      ParzenEstimator::Create({{1.0, -2.0, 1.0, 4.5}}, Space("x", MakeFloat("x", -5, 5)), {}));
  ExpectNear(pe.mixture().weights, {0.2, 0.2, 0.2, 0.2, 0.2});
  const auto& k = std::get<TruncNormKernels>(pe.mixture().distributions[0]);
  EXPECT_THAT(k.mu, ElementsAre(1.0, -2.0, 1.0, 4.5, 0.0));
  // Equal observations get different bandwidths, in numpy's argsort order.
  ExpectNear(k.sigma, {1.6666666666666667, 2.0, 3.5, 3.5, 10.0});
  NumpyRandomState rng(5);
  ASSERT_OK_AND_ASSIGN(std::vector<std::vector<double>> s, pe.Sample(rng, 5));
  ExpectNear(s[0], {-1.2962187258673077, 2.5806789409095736, -1.7462995162657826,
                    -1.9629446219087159, -1.9571075829925175});
  ExpectNear(pe.LogPdf(s), {-2.188017814316588, -2.169070035983804, -2.2641187855662626,
                            -2.3044744221574707, -2.3033525133149633});
}

TEST(ParzenEstimatorTest, LogFloatKernelsLiveInLogSpace) {
  ASSERT_OK_AND_ASSIGN(
      ParzenEstimator pe,
      ParzenEstimator::Create({{1e-3, 0.5, 0.02}},
                              Space("lr", MakeFloat("lr", 1e-4, 1.0, /*log=*/true)), {}));
  const auto& k = std::get<TruncNormKernels>(pe.mixture().distributions[0]);
  ExpectNear(k.mu,
             {-6.907755278982137, -0.6931471805599453, -3.912023005428146, -4.605170185988091});
  ExpectNear(k.sigma,
             {2.302585092994046, 3.2188758248682006, 3.2188758248682006, 9.210340371976182});
  NumpyRandomState rng(5);
  ASSERT_OK_AND_ASSIGN(std::vector<std::vector<double>> s, pe.Sample(rng, 5));
  ExpectNear(s[0], {0.0027981687719563684, 0.10771385676434828, 0.0017304762962051105,
                    0.0016399180696900291, 0.010178766170840901});
  ExpectNear(pe.LogPdf(s), {-2.120956450211276, -2.1740070172948895, -2.1463472075248076,
                            -2.1501893198968025, -2.110905864325579});
}

TEST(ParzenEstimatorTest, SteppedIntsAreDiscreteKernels) {
  ASSERT_OK_AND_ASSIGN(
      ParzenEstimator pe,
      ParzenEstimator::Create({{4.0, 4.0, 10.0}}, Space("n", MakeInt("n", 0, 20, false, 2)), {}));
  const auto& k = std::get<TruncNormKernels>(pe.mixture().distributions[0]);
  EXPECT_EQ(k.step, 2.0);
  ExpectNear(k.sigma, {4.4, 6.0, 6.0, 22.0});
  NumpyRandomState rng(5);
  ASSERT_OK_AND_ASSIGN(std::vector<std::vector<double>> s, pe.Sample(rng, 5));
  EXPECT_THAT(s[0], ElementsAre(6, 16, 4, 6, 2));
  ExpectNear(pe.LogPdf(s), {-1.9828466541859182, -2.9665801762102655, -1.983690623911549,
                            -1.9828466541859182, -2.0972218610448703});
}

TEST(ParzenEstimatorTest, LogIntsAreContinuousOverTheWidenedLogRange) {
  ASSERT_OK_AND_ASSIGN(
      ParzenEstimator pe,
      ParzenEstimator::Create({{2.0, 8.0, 33.0}}, Space("u", MakeInt("u", 1, 64, true)), {}));
  const auto& k = std::get<TruncNormKernels>(pe.mixture().distributions[0]);
  EXPECT_EQ(k.step, 0.0);
  ExpectNear({k.low, k.high}, {-0.6931471805599453, 4.1666652238017265});
  NumpyRandomState rng(5);
  ASSERT_OK_AND_ASSIGN(std::vector<std::vector<double>> s, pe.Sample(rng, 5));
  EXPECT_THAT(s[0], ElementsAre(3, 20, 2, 2, 2));
  ExpectNear(pe.LogPdf(s), {-1.440779097477387, -1.5078211561635797, -1.5117593902936477,
                            -1.5117593902936477, -1.5117593902936477});
}

TEST(ParzenEstimatorTest, CategoricalKernels) {
  ASSERT_OK_AND_ASSIGN(
      ParzenEstimator pe,
      ParzenEstimator::Create({{0.0, 2.0, 2.0}}, Space("c", MakeCategorical("c", {"a", "b", "c"})),
                              {}));
  const auto& k = std::get<CategoricalKernels>(pe.mixture().distributions[0]);
  ExpectNear(k.weights,
             {0.7142857142857143, 0.14285714285714285, 0.14285714285714285, 0.14285714285714285,
              0.14285714285714285, 0.7142857142857143, 0.14285714285714285, 0.14285714285714285,
              0.7142857142857143, 0.3333333333333333, 0.3333333333333333, 0.3333333333333333});
  NumpyRandomState rng(5);
  ASSERT_OK_AND_ASSIGN(std::vector<std::vector<double>> s, pe.Sample(rng, 5));
  EXPECT_THAT(s[0], ElementsAre(0, 2, 0, 0, 1));
  ExpectNear(pe.LogPdf(s), {-1.0986122886681098, -0.7419373447293772, -1.0986122886681098,
                            -1.0986122886681098, -1.6582280766035324});
}

TEST(ParzenEstimatorTest, NoObservationsIsThePriorAlone) {
  ASSERT_OK_AND_ASSIGN(ParzenEstimator pe,
                       ParzenEstimator::Create({{}}, Space("x", MakeFloat("x", 0, 1)), {}));
  EXPECT_THAT(pe.mixture().weights, ElementsAre(1.0));
  NumpyRandomState rng(5);
  ASSERT_OK_AND_ASSIGN(std::vector<std::vector<double>> s, pe.Sample(rng, 5));
  ExpectNear(s[0], {0.607463878765532, 0.7580678940909573, 0.5176794346700526, 0.3037055378091284,
                    0.19562387029704564});
}

TEST(ParzenEstimatorTest, TiedObservationsFollowNumpysArgsort) {
  std::vector<double> obs;
  for (int k = 0; k < 30; ++k) obs.push_back(k % 4);
  ASSERT_OK_AND_ASSIGN(ParzenEstimator pe,
                       ParzenEstimator::Create({obs}, Space("i", MakeInt("i", 0, 3)), {}));
  const auto& k = std::get<TruncNormKernels>(pe.mixture().distributions[0]);
  EXPECT_THAT(k.sigma,
              ElementsAre(0.125, 1.0, 0.125, 0.125, 0.125, 0.125, 0.125, 0.125, 0.125, 0.125, 0.125,
                          1.0, 0.125, 0.125, 1.0, 0.125, 1.0, 0.125, 0.5, 0.125, 0.125, 0.125,
                          0.125, 0.125, 0.125, 0.125, 0.125, 0.125, 0.125, 0.5, 4.0));
}

TEST(ParzenEstimatorTest, DefaultWeightsRampTheOldest) {
  const std::vector<double> w = DefaultTpeWeights(30);
  ASSERT_EQ(w.size(), 30u);
  EXPECT_THAT(
      std::vector<double>(w.begin(), w.begin() + 6),
      ElementsAre(0.03333333333333333, 0.275, 0.5166666666666667, 0.7583333333333333, 1.0, 1.0));
  EXPECT_THAT(DefaultTpeWeights(3), ElementsAre(1.0, 1.0, 1.0));
  EXPECT_TRUE(DefaultTpeWeights(0).empty());
}

TEST(ParzenEstimatorTest, RefusesBadParameters) {
  ParzenEstimatorParameters negative;
  negative.prior_weight = -1;
  EXPECT_THAT(ParzenEstimator::Create({{0.5}}, Space("x", MakeFloat("x", 0, 1)), negative),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("prior_weight")));
  ParzenEstimatorParameters zeros;
  zeros.weights = [](int64_t n) { return std::vector<double>(n, 0.0); };
  EXPECT_THAT(ParzenEstimator::Create({{0.5}}, Space("x", MakeFloat("x", 0, 1)), zeros),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("all zero")));
  EXPECT_THAT(ParzenEstimator::Create({}, Space("x", MakeFloat("x", 0, 1)), {}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("one column per")));
}

}  // namespace
}  // namespace loom::hpsearch
