#include "runtime/run_setup.h"

#include <torch/cuda.h>

#include "args/training_args_testing.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::runtime {
namespace {

using ::loom::args::testing::ResolveForTest;
using ::loom::base::testing::StatusIs;
using ::testing::HasSubstr;

TEST(RunSetupTest, DeviceIsCpuWhenAskedOrWithoutCuda) {
  ASSERT_OK_AND_ASSIGN(args::TrainingArguments cpu, ResolveForTest({"--use_cpu"}));
  ASSERT_OK_AND_ASSIGN(RunSetup s, ResolveRunSetup(cpu, /*local_rank=*/3, 4));
  EXPECT_TRUE(s.device.is_cpu());
  ASSERT_OK_AND_ASSIGN(args::TrainingArguments plain, ResolveForTest({}));
  if (!torch::cuda::is_available()) {
    ASSERT_OK_AND_ASSIGN(RunSetup here, ResolveRunSetup(plain, 0, 1));
    EXPECT_TRUE(here.device.is_cpu());
  } else {
    ASSERT_OK_AND_ASSIGN(RunSetup gpu, ResolveRunSetup(plain, 0, 1));
    EXPECT_EQ(gpu.device, at::Device(at::kCUDA, 0));
    EXPECT_THAT(ResolveRunSetup(plain, 1000, 1),
                StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("has no GPU")));
  }
}

TEST(RunSetupTest, PrecisionForThisMachine) {
  ASSERT_OK_AND_ASSIGN(args::TrainingArguments bf16, ResolveForTest({"--bf16", "--use_cpu"}));
  ASSERT_OK_AND_ASSIGN(RunSetup s, ResolveRunSetup(bf16, 0, 1));
  EXPECT_TRUE(s.precision.policy.SixteenBit());
  EXPECT_EQ(s.precision.policy.backend, "cpu_amp");
  ASSERT_OK_AND_ASSIGN(args::TrainingArguments fp16, ResolveForTest({"--fp16", "--use_cpu"}));
  EXPECT_THAT(ResolveRunSetup(fp16, 0, 1),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--fp16")));
}

TEST(RunSetupTest, GradientCheckpointingKwargs) {
  ASSERT_OK_AND_ASSIGN(args::TrainingArguments off, ResolveForTest({}));
  ASSERT_OK_AND_ASSIGN(RunSetup none, ResolveRunSetup(off, 0, 1));
  EXPECT_FALSE(none.gradient_checkpointing.has_value());
  ASSERT_OK_AND_ASSIGN(
      args::TrainingArguments on,
      ResolveForTest({"--gradient_checkpointing", "--gradient_checkpointing_kwargs",
                      R"({"use_reentrant": false})"}));
  ASSERT_OK_AND_ASSIGN(RunSetup s, ResolveRunSetup(on, 0, 1));
  ASSERT_TRUE(s.gradient_checkpointing.has_value());
  EXPECT_FALSE(s.gradient_checkpointing->use_reentrant);
  ASSERT_OK_AND_ASSIGN(args::TrainingArguments bad,
                       ResolveForTest({"--gradient_checkpointing",
                                       "--gradient_checkpointing_kwargs", R"({"debug": true})"}));
  EXPECT_THAT(ResolveRunSetup(bad, 0, 1),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("unknown key \"debug\"")));
}

// --fsdp_config activation_checkpointing turns checkpointing on (non-reentrant, accelerate's
// wrapper); with --gradient_checkpointing too it is HF's error.
TEST(RunSetupTest, FsdpActivationCheckpointing) {
  ASSERT_OK_AND_ASSIGN(args::TrainingArguments fsdp,
                       ResolveForTest({"--fsdp", "full_shard auto_wrap", "--fsdp_config",
                                       R"({"activation_checkpointing": true})"}));
  ASSERT_OK_AND_ASSIGN(RunSetup s, ResolveRunSetup(fsdp, 0, 2));
  ASSERT_TRUE(s.gradient_checkpointing.has_value());
  EXPECT_FALSE(s.gradient_checkpointing->use_reentrant);
  ASSERT_OK_AND_ASSIGN(
      args::TrainingArguments both,
      ResolveForTest({"--fsdp", "full_shard auto_wrap", "--fsdp_config",
                      R"({"activation_checkpointing": true})", "--gradient_checkpointing"}));
  EXPECT_THAT(ResolveRunSetup(both, 0, 2),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("can't be set to True simultaneously. Please use FSDP's "
                                 "activation_checkpointing logic when using FSDP.")));
}

TEST(RunSetupTest, AutoFindBatchSizeNeedsOneProcess) {
  ASSERT_OK_AND_ASSIGN(args::TrainingArguments a, ResolveForTest({"--auto_find_batch_size"}));
  ASSERT_OK(ResolveRunSetup(a, 0, 1).status());
  EXPECT_THAT(ResolveRunSetup(a, 0, 2),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--auto_find_batch_size is not implemented in loom yet for runs "
                                 "of several processes (2 here)")));
}

}  // namespace
}  // namespace loom::runtime
