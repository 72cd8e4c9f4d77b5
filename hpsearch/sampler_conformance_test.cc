// Every registered sampler backend (hpsearch/sampler.h) over every kind of distribution:
// values inside the distribution asked for, a restored random state continuing the same
// stream, and the registry's errors.
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hpsearch/distribution.h"
#include "hpsearch/sampler.h"
#include "hpsearch/trial.h"

namespace loom::hpsearch {
namespace {

using ::loom::base::testing::StatusIs;
using ::testing::HasSubstr;
using ::testing::IsSupersetOf;

SearchSpace AllKinds(bool finite) {
  SearchSpace space;
  if (!finite) {
    space.params.emplace_back("float", *MakeFloat("float", -2.5, 7.0));
    space.params.emplace_back("log_float", *MakeFloat("log_float", 1e-6, 1e-2, true));
  }
  space.params.emplace_back("stepped_float", *MakeFloat("stepped_float", 0.0, 1.0, false, 0.25));
  space.params.emplace_back("int", *MakeInt("int", -3, 4));
  space.params.emplace_back("stepped_int", *MakeInt("stepped_int", 1, 13, false, 4));
  space.params.emplace_back("log_int", *MakeInt("log_int", 2, 50, true));
  space.params.emplace_back("categorical",
                            *MakeCategorical("categorical", {"a", 2, 3.5, nullptr, true}));
  return space;
}

// Runs `n` sequential trials; the objective is the sum of the internal values.
absl::Status RunTrials(Sampler& sampler, const SearchSpace& space, std::vector<FrozenTrial>& trials,
                       int n) {
  for (int k = 0; k < n; ++k) {
    trials.emplace_back();
    trials.back().number = static_cast<int64_t>(trials.size()) - 1;
    const StudyView view{Direction::kMinimize, trials};
    absl::Status s = sampler.BeforeTrial(view, trials.back());
    if (!s.ok()) return s;
    double sum = 0;
    for (const auto& [name, d] : space.params) {
      absl::StatusOr<double> v = sampler.SampleIndependent(view, trials.back(), name, d);
      if (!v.ok()) return v.status();
      EXPECT_TRUE(Contains(d, *v)) << name << " = " << *v << " in trial " << k;
      trials.back().params[name] = *v;
      trials.back().distributions.insert_or_assign(name, d);
      sum += *v;
    }
    trials.back().state = k % 5 == 4 ? TrialState::kPruned : TrialState::kComplete;
    if (trials.back().state == TrialState::kComplete) trials.back().value = sum;
  }
  return absl::OkStatus();
}

TEST(SamplerConformanceTest, BuiltinsAreRegistered) {
  EXPECT_THAT(RegisteredSamplers(), IsSupersetOf({"grid", "random", "tpe"}));
  EXPECT_THAT(CreateSampler("cmaes", {}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("the registered ones are grid, random, tpe")));
}

TEST(SamplerConformanceTest, ValuesStayInsideTheirDistributions) {
  for (const std::string name : {"random", "tpe", "grid"}) {
    SamplerOptions options;
    options.seed = 3;
    options.space = AllKinds(/*finite=*/name == "grid");
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<Sampler> sampler, CreateSampler(name, options));
    std::vector<FrozenTrial> trials;
    EXPECT_OK(RunTrials(*sampler, options.space, trials, 30)) << name;
  }
}

TEST(SamplerConformanceTest, GridRefusesContinuousParameters) {
  SamplerOptions options;
  options.space = AllKinds(/*finite=*/false);
  EXPECT_THAT(CreateSampler("grid", options),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("finite set of values")));
}

TEST(SamplerConformanceTest, RestoredRandomStateContinuesTheStudy) {
  for (const std::string name : {"random", "tpe", "grid"}) {
    SamplerOptions options;
    options.seed = 11;
    options.space = AllKinds(/*finite=*/true);
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<Sampler> first, CreateSampler(name, options));
    std::vector<FrozenTrial> trials;
    ASSERT_OK(RunTrials(*first, options.space, trials, 14));
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<Sampler> second, CreateSampler(name, options));
    ASSERT_OK(second->RestoreRngState(first->RngState()));
    std::vector<FrozenTrial> a = trials, b = trials;
    ASSERT_OK(RunTrials(*first, options.space, a, 12));
    ASSERT_OK(RunTrials(*second, options.space, b, 12));
    for (size_t k = 14; k < a.size(); ++k) {
      EXPECT_EQ(a[k].params, b[k].params) << name << " trial " << k;
    }
    EXPECT_EQ(first->RngState(), second->RngState()) << name;
  }
}

TEST(SamplerConformanceTest, ProgramsMayRegisterTheirOwn) {
  RegisterSampler("fixed_random", [](const SamplerOptions& options) {
    SamplerOptions fixed = options;
    fixed.seed = 99;
    return CreateSampler("random", fixed);
  });
  EXPECT_THAT(RegisteredSamplers(), IsSupersetOf({"fixed_random"}));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Sampler> sampler, CreateSampler("fixed_random", {}));
  EXPECT_EQ(sampler->RngState(), nlohmann::json({{"random", 0}}));
}

}  // namespace
}  // namespace loom::hpsearch
