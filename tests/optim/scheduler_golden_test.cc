// CreateScheduler for every HF SchedulerType against torch 1.13's LambdaLR /
// ReduceLROnPlateau driven by HF's formulas (testdata/schedulers.json from make_golden.py):
// two param groups with different base lrs, the lr after construction and after every step
// through warmup, decay and past the end; reduce_lr_on_plateau driven by a metric sequence.
#include <torch/optim/sgd.h>

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "args/parser.h"
#include "args/training_args.pb.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "optim/lr_scheduler.h"
#include "tests/optim/golden_util.h"

namespace loom::optim::testing {
namespace {

using json = nlohmann::json;

TEST(SchedulerGoldenTest, EveryTypeMatchesPython) {
  ASSERT_OK_AND_ASSIGN(const json golden, LoadGolden("schedulers.json"));
  const auto group_lrs = golden["group_lrs"].get<std::vector<double>>();
  std::set<std::string> types_seen;
  for (const json& c : golden["cases"]) {
    const std::string type = c["type"];
    const std::string label =
        absl::StrCat(type, " ", c["kwargs"].dump(), " warmup_steps=", c["warmup_steps"].dump(),
                     " warmup_ratio=", c["warmup_ratio"].dump());
    SCOPED_TRACE(label);
    types_seen.insert(type);
    args::TrainingArguments a;
    args::ArgParser parser({});
    parser.AddGroup("TrainingArguments", &a);
    nlohmann::ordered_json fields;
    fields["learning_rate"] = golden["learning_rate"];
    fields["lr_scheduler_type"] = type;
    fields["lr_scheduler_kwargs"] = nlohmann::ordered_json::parse(c["kwargs"].dump());
    fields["warmup_steps"] = c["warmup_steps"];
    fields["warmup_ratio"] = c["warmup_ratio"];
    ASSERT_OK(parser.ParseJson(fields, "schedulers.json"));

    // Two groups, the second with its own lr; the defaults' lr is --learning_rate.
    std::vector<torch::optim::OptimizerParamGroup> groups;
    for (double lr : group_lrs) {
      groups.emplace_back(std::vector<at::Tensor>{at::zeros({1})},
                          std::make_unique<torch::optim::SGDOptions>(lr));
    }
    torch::optim::SGD optimizer(std::move(groups), torch::optim::SGDOptions(a.learning_rate()));
    std::vector<std::string> warnings;
    ASSERT_OK_AND_ASSIGN(
        std::unique_ptr<LrScheduler> scheduler,
        CreateScheduler(a, &optimizer, c["num_training_steps"].get<int64_t>(), &warnings));
    EXPECT_THAT(warnings, ::testing::IsEmpty());
    EXPECT_EQ(scheduler->steps_on_metric(), type == "reduce_lr_on_plateau");

    const json& expected = c["lrs"];
    EXPECT_TRUE(AllClose(GroupLrs(optimizer), expected[0].get<std::vector<double>>(),
                         label + " after construction"));
    EXPECT_TRUE(AllClose(scheduler->LastLr(), expected[0].get<std::vector<double>>(),
                         label + " LastLr at construction"));
    for (size_t k = 1; k < expected.size(); ++k) {
      if (c.contains("metrics")) {
        scheduler->Step();  // a no-op for reduce_lr_on_plateau
        scheduler->StepOnMetric(c["metrics"][k - 1].get<double>());
      } else {
        scheduler->Step();
      }
      const std::string what = absl::StrCat(label, " step ", k);
      EXPECT_TRUE(AllClose(GroupLrs(optimizer), expected[k].get<std::vector<double>>(), what));
      EXPECT_TRUE(
          AllClose(scheduler->LastLr(), expected[k].get<std::vector<double>>(), what + " LastLr"));
      EXPECT_EQ(scheduler->last_epoch(), static_cast<int64_t>(k));
    }
  }
  const std::vector<std::string>& all = SchedulerTypeNames();
  EXPECT_EQ(types_seen, std::set<std::string>(all.begin(), all.end()));
}

}  // namespace
}  // namespace loom::optim::testing
