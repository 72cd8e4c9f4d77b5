#include "launch/deepspeed_launch.h"

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

absl::StatusOr<LaunchOptions> Parse(const std::vector<std::string>& args, int gpus) {
  return ParseDeepSpeedCommandLine(args, LaunchOptions(), gpus);
}

std::string Visible(const LaunchOptions& o) {
  for (const auto& [k, v] : o.extra_env) {
    if (k == "CUDA_VISIBLE_DEVICES") return v;
  }
  return "<unset>";
}

TEST(DeepSpeedLaunchTest, AllGpusByDefaultWithLocalRankArgument) {
  ASSERT_OK_AND_ASSIGN(LaunchOptions o, Parse({"train.sh", "--deepspeed", "ds.json"}, 4));
  EXPECT_EQ(o.nproc_per_node, 4);
  EXPECT_EQ(o.nnodes, 1);
  EXPECT_EQ(Visible(o), "0,1,2,3");
  EXPECT_EQ(o.master_addr, "127.0.0.1");
  EXPECT_EQ(o.master_port, 29500);
  EXPECT_EQ(o.program, "train.sh");
  EXPECT_THAT(RankArgs(o, 2), ElementsAre("--local_rank=2", "--deepspeed", "ds.json"));
}

TEST(DeepSpeedLaunchTest, IncludeExcludeAndNumGpus) {
  ASSERT_OK_AND_ASSIGN(LaunchOptions inc, Parse({"--include", "localhost:3,1", "p"}, 4));
  EXPECT_EQ(inc.nproc_per_node, 2);
  EXPECT_EQ(Visible(inc), "1,3");
  ASSERT_OK_AND_ASSIGN(LaunchOptions inc2, Parse({"-i", "localhost:0@localhost:2", "p"}, 4));
  EXPECT_EQ(Visible(inc2), "0,2");
  ASSERT_OK_AND_ASSIGN(LaunchOptions exc, Parse({"--exclude=localhost:1", "p"}, 3));
  EXPECT_EQ(Visible(exc), "0,2");
  ASSERT_OK_AND_ASSIGN(LaunchOptions n,
                       Parse({"--num_gpus", "2", "--master_port=1234", "--master_addr", "10.0.0.9",
                              "--no_local_rank", "p", "a"},
                             0));
  EXPECT_EQ(n.nproc_per_node, 2);
  EXPECT_EQ(Visible(n), "0,1");
  EXPECT_EQ(n.master_port, 1234);
  EXPECT_EQ(n.master_addr, "10.0.0.9");
  EXPECT_THAT(RankArgs(n, 1), ElementsAre("a"));
  ASSERT_OK_AND_ASSIGN(LaunchOptions acc, Parse({"--num-accelerators=1", "--num_nodes=1", "p"}, 8));
  EXPECT_EQ(acc.nproc_per_node, 1);
}

TEST(DeepSpeedLaunchTest, ErrorsNameTheFlagAndTheFix) {
  EXPECT_THAT(Parse({"p"}, 0), StatusIs(absl::StatusCode::kInvalidArgument,
                                        "no GPUs found on this machine: give --num_gpus N to start "
                                        "N ranks"));
  EXPECT_THAT(Parse({"--include", "localhost:5", "p"}, 2),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "--include: no slot 5 on localhost, which has 2 GPU(s) (slots 0..1)"));
  EXPECT_THAT(Parse({"--include", "worker-1:0", "p"}, 2),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("host 'worker-1' is not this machine")));
  EXPECT_THAT(Parse({"--include", "localhost:x", "p"}, 2),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("slot 'x'")));
  EXPECT_THAT(Parse({"--include", "localhost:0", "--exclude", "localhost:1", "p"}, 2),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("mutually exclusive")));
  EXPECT_THAT(Parse({"--exclude", "localhost", "p"}, 2),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("left no GPU")));
  EXPECT_THAT(Parse({"--num_gpus", "2", "--include", "localhost:0", "p"}, 2),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("cannot be combined with --include/--exclude")));
  EXPECT_THAT(Parse({"--num_nodes", "2", "p"}, 2),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--num_nodes 2: multi-node deepspeed launches")));
  EXPECT_THAT(Parse({"--hostfile", "h", "p"}, 2),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--hostfile")));
  EXPECT_THAT(Parse({"--num_gpus", "0", "p"}, 2),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--num_gpus '0'")));
  EXPECT_THAT(Parse({"--master_port", "0", "p"}, 2),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--master_port '0'")));
  EXPECT_THAT(Parse({"--num_gpus", "2"}, 2),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no training script")));
}

}  // namespace
}  // namespace loom::launch
