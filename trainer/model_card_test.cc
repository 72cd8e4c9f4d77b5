#include "trainer/model_card.h"

#include "args/training_args_testing.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::trainer {
namespace {

using ::loom::base::testing::IsOkAndHolds;
using ::loom::base::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::Pair;

TEST(ModelCardTest, HyperparametersOfASingleProcessRun) {
  ASSERT_OK_AND_ASSIGN(auto a, args::testing::ResolveForTest({"--learning_rate", "2e-5"}));
  EXPECT_THAT(
      Hyperparameters(a, 1),
      ElementsAre(Pair("learning_rate", "2e-05"), Pair("train_batch_size", "8"),
                  Pair("eval_batch_size", "8"), Pair("seed", "42"),
                  Pair("optimizer", "Use adamw_torch with betas=(0.9,0.999) and epsilon=1e-08 and "
                                    "optimizer_args=No additional optimizer arguments"),
                  Pair("lr_scheduler_type", "linear"), Pair("num_epochs", "3.0")));
}

TEST(ModelCardTest, HyperparametersOfADistributedRun) {
  ASSERT_OK_AND_ASSIGN(
      auto a, args::testing::ResolveForTest(
                  {"--per_device_train_batch_size", "4", "--gradient_accumulation_steps", "2",
                   "--warmup_ratio", "0.1", "--warmup_steps", "3", "--max_steps", "10",
                   "--label_smoothing_factor", "0.1", "--optim", "sgd", "--optim_args", "x=1",
                   "--lr_scheduler_type", "cosine"}));
  EXPECT_THAT(Hyperparameters(a, 2),
              ElementsAre(Pair("learning_rate", "5e-05"), Pair("train_batch_size", "4"),
                          Pair("eval_batch_size", "8"), Pair("seed", "42"),
                          Pair("distributed_type", "multi-GPU"), Pair("num_devices", "2"),
                          Pair("gradient_accumulation_steps", "2"),
                          Pair("total_train_batch_size", "16"),
                          Pair("total_eval_batch_size", "16"),
                          Pair("optimizer", "Use sgd and the args are:\nx=1"),
                          Pair("lr_scheduler_type", "cosine"),
                          Pair("lr_scheduler_warmup_ratio", "0.1"),
                          Pair("lr_scheduler_warmup_steps", "3"), Pair("training_steps", "10"),
                          Pair("label_smoothing_factor", "0.1")));
}

TEST(ModelCardTest, SummaryDefaultsAndTags) {
  ASSERT_OK_AND_ASSIGN(auto a, args::testing::ResolveForTest({}));
  ModelCardOptions o;
  hub::TrainingSummary s = SummaryFromTrainer(a, {}, 1, o, {"kept-only-with-tags"});
  EXPECT_EQ(s.model_name, "out");  // output_dir's name
  EXPECT_THAT(s.tags, ElementsAre("generated_from_trainer"));
  EXPECT_FALSE(s.eval_lines.has_value());
  EXPECT_THAT(s.framework_versions[0].first, "loom");
  EXPECT_THAT(s.framework_versions[1].first, "LibTorch");
  o.tags = {"mine"};
  o.dataset_tags = {"glue"};
  s = SummaryFromTrainer(a, {}, 1, o, {"old", "mine"});
  EXPECT_THAT(s.tags, ElementsAre("mine", "old", "generated_from_trainer"));
  EXPECT_THAT(s.dataset, ElementsAre("glue"));  // dataset defaults to the tags
}

TEST(ModelCardTest, ExistingCardTags) {
  EXPECT_THAT(ExistingCardTags("---\ntags:\n- a\n- b\nlicense: mit\n---\n# x\n"),
              IsOkAndHolds(ElementsAre("a", "b")));
  EXPECT_THAT(ExistingCardTags("---\ntags: one\n---\n"), IsOkAndHolds(ElementsAre("one")));
  EXPECT_THAT(ExistingCardTags("# no metadata\n"), IsOkAndHolds(ElementsAre()));
  EXPECT_THAT(ExistingCardTags("---\ntags: [a\n---\n"),
              StatusIs(absl::StatusCode::kInvalidArgument, ::testing::HasSubstr("README.md")));
}

}  // namespace
}  // namespace loom::trainer
