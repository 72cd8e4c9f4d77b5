#include "launch/command_line.h"

#include <string>
#include <vector>

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::launch {
namespace {

using ::loom::base::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

TEST(CommandLineTest, StyleIsChosenByTheFirstOptionAfterTheLaunchersOwn) {
  using S = CommandLineStyle;
  EXPECT_EQ(DetectStyle({}), S::kTorchrun);
  EXPECT_EQ(DetectStyle({"prog"}), S::kTorchrun);
  EXPECT_EQ(DetectStyle({"--nproc_per_node=2", "prog"}), S::kTorchrun);
  EXPECT_EQ(DetectStyle({"--prefix_output", "--nnodes", "1", "prog"}), S::kTorchrun);
  EXPECT_EQ(DetectStyle({"--tee", "3", "--", "prog"}), S::kTorchrun);
  EXPECT_EQ(DetectStyle({"--help"}), S::kTorchrun);
  EXPECT_EQ(DetectStyle({"--master-port=5", "--num_gpus", "2", "prog"}), S::kTorchrun);
  EXPECT_EQ(DetectStyle({"--config_file", "a.yaml", "prog"}), S::kAccelerate);
  EXPECT_EQ(DetectStyle({"--grace_period_s", "1", "--num-processes=2", "prog"}), S::kAccelerate);
  EXPECT_EQ(DetectStyle({"--tee=1", "--use_cpu", "prog"}), S::kAccelerate);
  EXPECT_EQ(DetectStyle({"--num_gpus=2", "prog"}), S::kDeepSpeed);
  EXPECT_EQ(DetectStyle({"--prefix_output", "-i", "localhost:0", "prog"}), S::kDeepSpeed);
  EXPECT_EQ(DetectStyle({"--no-local-rank", "prog"}), S::kDeepSpeed);
}

TEST(CommandLineTest, LaunchersOwnOptionsApplyToEveryStyle) {
  ASSERT_OK_AND_ASSIGN(LaunchOptions a, ParseCommandLine({"--prefix_output", "--grace_period_s=2",
                                                          "--num_processes", "3", "p", "x"},
                                                         /*local_gpus=*/0, nullptr));
  EXPECT_TRUE(a.prefix_stdout);
  EXPECT_EQ(a.grace_period_s, 2.0);
  EXPECT_EQ(a.nproc_per_node, 3);
  EXPECT_THAT(a.program_args, ElementsAre("x"));

  ASSERT_OK_AND_ASSIGN(LaunchOptions d, ParseCommandLine({"--tee", "2", "--num_gpus", "2", "p"},
                                                         /*local_gpus=*/0, nullptr));
  EXPECT_FALSE(d.prefix_stdout);
  EXPECT_TRUE(d.prefix_stderr);
  EXPECT_EQ(d.nproc_per_node, 2);
  EXPECT_THAT(d.extra_env, ElementsAre(Pair("CUDA_VISIBLE_DEVICES", "0,1")));

  ASSERT_OK_AND_ASSIGN(LaunchOptions t,
                       ParseCommandLine({"--nproc_per_node=2", "p"}, /*local_gpus=*/8, nullptr));
  EXPECT_EQ(t.nproc_per_node, 2);
  EXPECT_FALSE(t.local_rank_arg);
}

TEST(CommandLineTest, LocalRanksFilterIsCheckedAgainstTheStylesProcessCount) {
  ASSERT_OK_AND_ASSIGN(
      LaunchOptions a,
      ParseCommandLine({"--local_ranks_filter=3", "--num_processes=4", "p"}, 0, nullptr));
  EXPECT_THAT(a.local_ranks_filter, ElementsAre(3));
  EXPECT_THAT(ParseCommandLine({"--local_ranks_filter=2", "--num_gpus=2", "p"}, 0, nullptr),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("local rank 2 does not exist with 2 process(es) per node")));
}

TEST(CommandLineTest, ErrorsOfTheLaunchersOwnOptionsAndOfMixedStyles) {
  EXPECT_THAT(ParseCommandLine({"--tee=7", "--num_processes=2", "p"}, 0, nullptr),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--tee '7'")));
  EXPECT_THAT(ParseCommandLine({"--nproc_per_node=2", "--num_processes=2", "p"}, 0, nullptr),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("cannot be mixed with torchrun-style ones")));
  EXPECT_THAT(
      ParseCommandLine({"--num_processes=2", "--nproc_per_node=2", "p"}, 0, nullptr),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("unknown flag --nproc_per_node")));
  EXPECT_THAT(ParseCommandLine({"--num_gpus=2", "--prefix_output", "p"}, 0, nullptr),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("go before the deepspeed-style options)")));
  EXPECT_THAT(ParseCommandLine({"--use_cpu", "--tee", "3", "p"}, 0, nullptr),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("go before the accelerate-style options)")));
  EXPECT_THAT(ParseCommandLine({"--num_gpus=2", "--num_processes=2", "p"}, 0, nullptr),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("unknown option '--num_processes=2' in a deepspeed-style")));
}

}  // namespace
}  // namespace loom::launch
