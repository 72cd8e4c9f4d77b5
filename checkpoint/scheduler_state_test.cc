#include "checkpoint/scheduler_state.h"

#include <torch/optim/sgd.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "base/status_matchers.h"
#include "base/torch_compat.h"
#include "checkpoint/torch_pickle.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "optim/lr_lambdas.h"
#include "optim/lr_scheduler.h"

namespace loom::checkpoint {
namespace {

using ::loom::base::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string TempPath(const std::string& name) {
  const char* root = std::getenv("TEST_TMPDIR");
  return std::string(root ? root : "/tmp") + "/" + name;
}

std::unique_ptr<torch::optim::SGD> Sgd() {
  return std::make_unique<torch::optim::SGD>(std::vector<at::Tensor>{at::zeros({1})},
                                             torch::optim::SGDOptions(0.1));
}

optim::LambdaLrScheduler::Lambda Linear() {
  return [](int64_t step) { return optim::LinearLambda(step, 2, 10); };
}

TEST(SchedulerStateTest, LambdaLrRoundTrip) {
  auto opt = Sgd();
  optim::LambdaLrScheduler scheduler(opt.get(), Linear());
  for (int i = 0; i < 4; ++i) scheduler.Step();
  const std::string path = TempPath("scheduler.pt");
  ASSERT_OK(SaveSchedulerState(path, scheduler));

  // The file holds torch's keys.
  ASSERT_OK_AND_ASSIGN(c10::IValue raw, LoadPickle(path));
  std::vector<std::string> keys;
  for (const auto& e : raw.toGenericDict()) keys.push_back(e.key().toStringRef());
  if (LOOM_TORCH_AT_LEAST(2, 11)) {  // torch 2.11's layout
    EXPECT_THAT(keys, ElementsAre("base_lrs", "last_epoch", "_step_count", "_is_initial",
                                  "_get_lr_called_within_step", "_last_lr", "lr_lambdas"));
  } else {
    EXPECT_THAT(keys, ElementsAre("base_lrs", "last_epoch", "verbose", "_step_count",
                                  "_get_lr_called_within_step", "_last_lr", "lr_lambdas"));
  }
  EXPECT_EQ(raw.toGenericDict().at("last_epoch").toInt(), 4);

  auto opt2 = Sgd();
  optim::LambdaLrScheduler restored(opt2.get(), Linear());
  ASSERT_OK(LoadSchedulerState(path, restored));
  EXPECT_EQ(restored.last_epoch(), 4);
  EXPECT_EQ(restored.step_count(), 5);
  EXPECT_EQ(restored.LastLr(), scheduler.LastLr());
  scheduler.Step();
  restored.Step();
  EXPECT_EQ(restored.LastLr(), scheduler.LastLr());
}

TEST(SchedulerStateTest, PlateauRoundTripAndErrors) {
  auto opt = Sgd();
  ASSERT_OK_AND_ASSIGN(auto plateau, optim::ReduceLrOnPlateau::Create(opt.get(), {}));
  plateau->StepOnMetric(1.0);
  plateau->StepOnMetric(2.0);
  const std::string path = TempPath("plateau.pt");
  ASSERT_OK(SaveSchedulerState(path, *plateau));
  auto opt2 = Sgd();
  ASSERT_OK_AND_ASSIGN(auto restored, optim::ReduceLrOnPlateau::Create(opt2.get(), {}));
  ASSERT_OK(LoadSchedulerState(path, *restored));
  EXPECT_EQ(restored->best(), 1.0);
  EXPECT_EQ(restored->num_bad_epochs(), 1);
  EXPECT_EQ(restored->last_epoch(), 2);

  // A LambdaLR file into a plateau scheduler: the scheduler's error, prefixed with the path.
  optim::LambdaLrScheduler lambda(opt.get(), Linear());
  const std::string lambda_path = TempPath("lambda.pt");
  ASSERT_OK(SaveSchedulerState(lambda_path, lambda));
  EXPECT_THAT(LoadSchedulerState(lambda_path, *restored),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(lambda_path + ": ")));
}

}  // namespace
}  // namespace loom::checkpoint
