#include "hpsearch/distribution.h"

#include <string>
#include <variant>

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::hpsearch {
namespace {

using ::loom::base::testing::IsOkAndHolds;
using ::loom::base::testing::StatusIs;
using ::testing::HasSubstr;
using ::testing::ElementsAre;

TEST(ParseSearchSpace, ReadsTheIssueExampleInKeyOrder) {
  ASSERT_OK_AND_ASSIGN(
      SearchSpace space,
      ParseSearchSpace(R"({"learning_rate": {"type": "float", "low": 1e-5, "high": 1e-3, "log": true},
        "per_device_train_batch_size": {"type": "categorical", "choices": [8, 16]},
        "num_train_epochs": {"type": "int", "low": 1, "high": 3}})"));
  ASSERT_EQ(space.params.size(), 3u);
  EXPECT_EQ(space.params[0].first, "learning_rate");
  EXPECT_EQ(space.params[1].first, "per_device_train_batch_size");
  EXPECT_EQ(space.params[2].first, "num_train_epochs");
  const auto& lr = std::get<FloatDistribution>(space.params[0].second);
  EXPECT_EQ(lr.low, 1e-5);
  EXPECT_EQ(lr.high, 1e-3);
  EXPECT_TRUE(lr.log);
  EXPECT_FALSE(lr.step.has_value());
  const auto& bs = std::get<CategoricalDistribution>(space.params[1].second);
  EXPECT_THAT(bs.choices, ElementsAre(nlohmann::json(8), nlohmann::json(16)));
  const auto& ep = std::get<IntDistribution>(space.params[2].second);
  EXPECT_EQ(ep.low, 1);
  EXPECT_EQ(ep.high, 3);
  EXPECT_EQ(ep.step, 1);
  // The abbreviated form round-trips.
  ASSERT_OK_AND_ASSIGN(SearchSpace again, ParseSearchSpace(SearchSpaceToJson(space).dump()));
  EXPECT_EQ(SearchSpaceToJson(again), SearchSpaceToJson(space));
}

TEST(ParseSearchSpace, RefusesWhatOptunaRefuses) {
  auto error = [](const std::string& text) { return ParseSearchSpace(text).status(); };
  EXPECT_THAT(error("{}"), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("empty")));
  EXPECT_THAT(error("[1]"), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("object")));
  EXPECT_THAT(error("{\"x\": "), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("JSON")));
  EXPECT_THAT(error(R"({"x": {"type": "float", "low": 2, "high": 1}})"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("parameter \"x\": `low <= high` must hold, but got (low=2.0, "
                                 "high=1.0).")));
  EXPECT_THAT(error(R"({"lr": {"type": "float", "low": 0, "high": 1, "log": true}})"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("`low > 0` must hold for `log=True`")));
  EXPECT_THAT(error(R"({"n": {"type": "int", "low": 0, "high": 4, "log": true}})"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("`low >= 1` must hold for `log=True`")));
  EXPECT_THAT(error(R"({"x": {"type": "float", "low": 1, "high": 2, "log": true, "step": 0.1}})"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("`step` is not supported")));
  EXPECT_THAT(error(R"({"x": {"type": "int", "low": 1, "high": 2, "step": 0}})"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("`step > 0`")));
  EXPECT_THAT(error(R"({"x": {"type": "int", "low": 1.5, "high": 2}})"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("must be an integer")));
  EXPECT_THAT(error(R"({"x": {"type": "categorical", "choices": []}})"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("one or more elements")));
  EXPECT_THAT(error(R"({"x": {"type": "categorical", "choices": [[1]]}})"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("None, bool, int")));
  EXPECT_THAT(error(R"({"x": {"type": "uniform", "low": 0, "high": 1}})"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("float, int and categorical")));
  EXPECT_THAT(error(R"({"x": {"type": "float", "low": 0, "high": 1, "lo": 3}})"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("unknown key \"lo\"")));
  EXPECT_THAT(error(R"({"x": {"type": "float", "high": 1}})"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("needs \"low\"")));
}

TEST(MakeFloat, LowersAHighTheStepDoesNotReachInDecimal) {
  // optuna: FloatDistribution(0, 1, step=0.3).high == 0.9 (decimal arithmetic, not 0.8999...).
  ASSERT_OK_AND_ASSIGN(Distribution d, MakeFloat("x", 0, 1, false, 0.3));
  EXPECT_EQ(std::get<FloatDistribution>(d).high, 0.9);
  ASSERT_OK_AND_ASSIGN(Distribution e, MakeFloat("x", 0.1, 0.7, false, 0.2));
  EXPECT_EQ(std::get<FloatDistribution>(e).high, 0.7);  // divisible in decimal
  // float(Decimal(...)) rounds once: 0.7 and 1.9, not 0.7000000000000001 / 1.9000000000000001
  // (optuna 4.6: FloatDistribution(0, 1, step=0.7).high == 0.7).
  ASSERT_OK_AND_ASSIGN(Distribution g, MakeFloat("x", 0, 1, false, 0.7));
  EXPECT_EQ(std::get<FloatDistribution>(g).high, 0.7);
  ASSERT_OK_AND_ASSIGN(Distribution h, MakeFloat("x", 1, 2, false, 0.3));
  EXPECT_EQ(std::get<FloatDistribution>(h).high, 1.9);
  ASSERT_OK_AND_ASSIGN(Distribution k, MakeFloat("x", -1.5, 2.05, false, 0.25));
  EXPECT_EQ(std::get<FloatDistribution>(k).high, 2.0);
  ASSERT_OK_AND_ASSIGN(Distribution i, MakeInt("n", 1, 10, false, 4));
  EXPECT_EQ(std::get<IntDistribution>(i).high, 9);
}

TEST(Distribution, OptunaJsonRoundTripsAndMatchesItsText) {
  ASSERT_OK_AND_ASSIGN(Distribution f, MakeFloat("x", 1e-05, 0.001, true));
  EXPECT_EQ(DistributionToJson(f),
            R"({"name":"FloatDistribution","attributes":{"step":null,"low":1e-05,"high":0.001,"log":true}})");
  ASSERT_OK_AND_ASSIGN(Distribution back, DistributionFromJson(DistributionToJson(f)));
  EXPECT_TRUE(SameDistribution(f, back));
  // What optuna 4.6's distribution_to_json writes (json.dumps' default separators).
  ASSERT_OK_AND_ASSIGN(
      Distribution i,
      DistributionFromJson(
          R"({"name": "IntDistribution", "attributes": {"log": false, "step": 1, "low": 1, "high": 3}})"));
  EXPECT_EQ(std::get<IntDistribution>(i).high, 3);
  ASSERT_OK_AND_ASSIGN(
      Distribution c,
      DistributionFromJson(
          R"({"name": "CategoricalDistribution", "attributes": {"choices": [8, 16, "a", null, true]}})"));
  EXPECT_EQ(std::get<CategoricalDistribution>(c).choices.size(), 5u);
  EXPECT_THAT(DistributionFromJson(R"({"name": "Uniform", "attributes": {}})").status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("Unknown distribution")));
}

TEST(Distribution, InternalRepresentationIsOptunas) {
  ASSERT_OK_AND_ASSIGN(Distribution c, MakeCategorical("b", {8, 16, "x", nullptr}));
  EXPECT_THAT(ToInternal(c, 16), IsOkAndHolds(1.0));
  EXPECT_THAT(ToInternal(c, 16.0), IsOkAndHolds(1.0));  // Python: 16 == 16.0
  EXPECT_THAT(ToInternal(c, nullptr), IsOkAndHolds(3.0));
  EXPECT_THAT(ToInternal(c, 9).status(), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not in")));
  EXPECT_EQ(ToExternal(c, 2.0), nlohmann::json("x"));
  ASSERT_OK_AND_ASSIGN(Distribution n, MakeInt("n", 1, 5));
  EXPECT_EQ(ToExternal(n, 3.0), nlohmann::json(3));
  EXPECT_TRUE(ToExternal(n, 3.0).is_number_integer());
  EXPECT_TRUE(Contains(n, 5.0));
  EXPECT_FALSE(Contains(n, 5.5));
  ASSERT_OK_AND_ASSIGN(Distribution f, MakeFloat("x", 0, 1, false, 0.25));
  EXPECT_TRUE(Contains(f, 0.75));
  EXPECT_FALSE(Contains(f, 0.7));
  ASSERT_OK_AND_ASSIGN(Distribution lf, MakeFloat("x", 1, 2, true));
  EXPECT_THAT(ToInternal(lf, 0).status(), StatusIs(absl::StatusCode::kInvalidArgument,
                                                   HasSubstr("log=True")));
}

}  // namespace
}  // namespace loom::hpsearch
