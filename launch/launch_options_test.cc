#include "launch/launch_options.h"

#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::launch {
namespace {

using ::loom::base::testing::IsOkAndHolds;
using ::loom::base::testing::StatusIs;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

absl::StatusOr<LaunchOptions> Parse(std::vector<std::string> args) {
  return ParseLaunchCommandLine(args);
}

TEST(LaunchOptionsTest, DefaultsAreTorchrunsDefaults) {
  ASSERT_OK_AND_ASSIGN(LaunchOptions o, Parse({"prog"}));
  EXPECT_EQ(o.nproc_per_node, 1);
  EXPECT_EQ(o.nnodes, 1);
  EXPECT_EQ(o.node_rank, 0);
  EXPECT_EQ(o.master_addr, "127.0.0.1");
  EXPECT_EQ(o.master_port, 29500);
  EXPECT_FALSE(o.prefix_stdout);
  EXPECT_FALSE(o.prefix_stderr);
  EXPECT_EQ(o.grace_period_s, 5.0);
  EXPECT_EQ(o.program, "prog");
  EXPECT_TRUE(o.program_args.empty());
}

TEST(LaunchOptionsTest, SpaceEqualsDashAndUnderscoreForms) {
  ASSERT_OK_AND_ASSIGN(LaunchOptions o,
                       Parse({"--nproc-per-node=4", "--nnodes", "3", "--node-rank=2",
                              "--master_addr", "10.0.0.1", "--master-port=1234", "--tee", "2",
                              "--grace_period_s=0.5", "./train", "--lr", "1", "--nnodes", "7"}));
  EXPECT_EQ(o.nproc_per_node, 4);
  EXPECT_EQ(o.nnodes, 3);
  EXPECT_EQ(o.node_rank, 2);
  EXPECT_EQ(o.master_addr, "10.0.0.1");
  EXPECT_EQ(o.master_port, 1234);
  EXPECT_FALSE(o.prefix_stdout);
  EXPECT_TRUE(o.prefix_stderr);
  EXPECT_EQ(o.grace_period_s, 0.5);
  EXPECT_EQ(o.program, "./train");
  EXPECT_THAT(o.program_args, ElementsAre("--lr", "1", "--nnodes", "7"));
  EXPECT_EQ(o.world_size(), 12);
  EXPECT_EQ(o.global_rank(3), 11);
}

TEST(LaunchOptionsTest, TeeRedirectsAndLogDir) {
  ASSERT_OK_AND_ASSIGN(LaunchOptions o,
                       Parse({"--tee=1", "--redirects", "2", "--log_dir", "/tmp/l", "p"}));
  EXPECT_TRUE(o.prefix_stdout);
  EXPECT_TRUE(o.tee_stdout);
  EXPECT_FALSE(o.prefix_stderr);
  EXPECT_FALSE(o.tee_stderr);
  EXPECT_FALSE(o.redirect_stdout);
  EXPECT_TRUE(o.redirect_stderr);
  EXPECT_EQ(o.log_dir, "/tmp/l");
  ASSERT_OK_AND_ASSIGN(LaunchOptions prefix_only, Parse({"--prefix_output", "p"}));
  EXPECT_FALSE(prefix_only.tee_stdout);
  EXPECT_THAT(Parse({"--redirects=3", "p"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "--redirects sends output to log files: give --log_dir DIR as well"));
  EXPECT_THAT(Parse({"--redirects=4", "--log_dir=d", "p"}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--redirects '4'")));
  EXPECT_THAT(Parse({"--log_dir=", "p"}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--log_dir is empty")));
}

TEST(LaunchOptionsTest, LocalRanksFilter) {
  ASSERT_OK_AND_ASSIGN(LaunchOptions o,
                       Parse({"--nproc_per_node=3", "--local-ranks-filter", "0,2", "p"}));
  EXPECT_THAT(o.local_ranks_filter, ElementsAre(0, 2));
  EXPECT_TRUE(ShowsOutput(o, 0));
  EXPECT_FALSE(ShowsOutput(o, 1));
  EXPECT_TRUE(ShowsOutput(o, 2));
  ASSERT_OK_AND_ASSIGN(LaunchOptions all, Parse({"--nproc_per_node=3", "p"}));
  EXPECT_TRUE(ShowsOutput(all, 1));
  EXPECT_THAT(Parse({"--nproc_per_node=2", "--local_ranks_filter=2", "p"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "--local_ranks_filter: local rank 2 does not exist with 2 process(es) per "
                       "node (local ranks are 0..1)"));
  EXPECT_THAT(Parse({"--local_ranks_filter=a", "p"}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--local_ranks_filter 'a'")));
}

TEST(LaunchOptionsTest, DoubleDashEndsOptions) {
  ASSERT_OK_AND_ASSIGN(LaunchOptions o, Parse({"--prefix_output", "--", "--weird-name", "x"}));
  EXPECT_TRUE(o.prefix_stdout);
  EXPECT_TRUE(o.prefix_stderr);
  EXPECT_EQ(o.program, "--weird-name");
  EXPECT_THAT(o.program_args, ElementsAre("x"));
}

TEST(LaunchOptionsTest, FixedElasticRangeIsAccepted) {
  ASSERT_OK_AND_ASSIGN(LaunchOptions o, Parse({"--nnodes=2:2", "p"}));
  EXPECT_EQ(o.nnodes, 2);
}

TEST(LaunchOptionsTest, HelpStopsParsing) {
  ASSERT_OK_AND_ASSIGN(LaunchOptions o, Parse({"-h", "--nnodes", "x"}));
  EXPECT_TRUE(o.help);
  EXPECT_THAT(LaunchUsage(), HasSubstr("--nproc_per_node N"));
}

TEST(LaunchOptionsTest, ErrorsNameTheFlagAndTheFix) {
  EXPECT_THAT(Parse({"--nnodes", "2", "--node_rank", "2", "p"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "--node_rank 2 must be smaller than --nnodes 2 (node ranks are 0..1)"));
  EXPECT_THAT(Parse({"--nproc_per_node", "0", "p"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "--nproc_per_node '0': expected a positive number of processes (e.g. "
                       "--nproc_per_node 1)"));
  EXPECT_THAT(Parse({"--nproc_per_node=auto", "p"}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--nproc_per_node 'auto'")));
  EXPECT_THAT(Parse({"--node_rank", "-1", "p"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--node_rank '-1': expected a non-negative integer")));
  EXPECT_THAT(Parse({"--master_port", "70000", "p"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--master_port 70000: expected a port number 1-65535")));
  EXPECT_THAT(Parse({"--master_addr=", "p"}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--master_addr is empty")));
  EXPECT_THAT(Parse({"--nnodes=1:4", "p"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("elastic node ranges are not supported")));
  EXPECT_THAT(Parse({"--tee", "4", "p"}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--tee '4'")));
  EXPECT_THAT(Parse({"--grace_period_s", "-1", "p"}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--grace_period_s '-1'")));
  EXPECT_THAT(Parse({"--nproc_per_node"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "--nproc_per_node needs a value (e.g. --nproc_per_node=VALUE)"));
  EXPECT_THAT(Parse({"--prefix_output=1", "p"}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("takes no value")));
  EXPECT_THAT(
      Parse({"--max_restarts", "3", "p"}),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("unknown option '--max_restarts'")));
  EXPECT_THAT(Parse({"-x", "p"}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("unknown option '-x'")));
  EXPECT_THAT(Parse({"--nproc_per_node", "2"}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no PROGRAM given")));
  EXPECT_THAT(
      Parse({"--standalone", "--nnodes", "2", "p"}),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--standalone runs a single")));
  EXPECT_THAT(Parse({"--standalone", "--master_port", "5", "p"}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("drop --master_port")));
}

TEST(LaunchOptionsTest, RankEnvironment) {
  ASSERT_OK_AND_ASSIGN(LaunchOptions o, Parse({"--nproc_per_node=2", "--nnodes=3", "--node_rank=1",
                                               "--master_port=4000", "p"}));
  EXPECT_THAT(RankEnvironment(o, 1, /*omp_num_threads_set=*/false),
              ElementsAre(Pair("RANK", "3"), Pair("LOCAL_RANK", "1"), Pair("WORLD_SIZE", "6"),
                          Pair("LOCAL_WORLD_SIZE", "2"), Pair("GROUP_RANK", "1"),
                          Pair("MASTER_ADDR", "127.0.0.1"), Pair("MASTER_PORT", "4000"),
                          Pair("OMP_NUM_THREADS", "1"), Pair("LOOM_THREADS_FROM_LAUNCHER", "1")));
  EXPECT_EQ(RankEnvironment(o, 0, /*omp_num_threads_set=*/true).size(), 7u);
  // Each rank gets its share of the node's physical cores (torchrun: always 1).
  EXPECT_THAT(RankEnvironment(o, 0, false, /*physical_cores=*/16),
              Contains(Pair("OMP_NUM_THREADS", "8")));
  EXPECT_THAT(RankEnvironment(o, 0, false, /*physical_cores=*/3),
              Contains(Pair("OMP_NUM_THREADS", "1")));
  EXPECT_THAT(LauncherOmpNote(o, false, 16),
              HasSubstr("Setting OMP_NUM_THREADS environment variable for each process to be 8 "
                        "(16 physical cores / 2 processes)"));
  EXPECT_EQ(LauncherOmpNote(o, true, 16), "");
  ASSERT_OK_AND_ASSIGN(LaunchOptions single, Parse({"p"}));
  EXPECT_EQ(RankEnvironment(single, 0, /*omp_num_threads_set=*/false).size(), 7u);
}

TEST(ResolveProgramLabelTest, LabelsAreTheLaunchersRunfiles) {
  const std::string runfiles = ::testing::TempDir() + "/launch.runfiles";
  std::filesystem::create_directories(runfiles + "/loom/examples/glue");
  const std::string program = runfiles + "/loom/examples/glue/run_glue";
  std::ofstream(program) << "#!/bin/sh\n";
  std::filesystem::permissions(program, std::filesystem::perms::owner_all);
  EXPECT_THAT(ResolveProgramLabel("//examples/glue:run_glue", runfiles), IsOkAndHolds(program));
  EXPECT_THAT(ResolveProgramLabel("//examples/glue:glue", runfiles),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("PROGRAM //examples/glue:glue: the launcher does not carry it")));
  // From a workspace that depends on loom: the same program under loom's repository name.
  EXPECT_THAT(ResolveProgramLabel("@loom//examples/glue:run_glue", runfiles),
              IsOkAndHolds(program));
  EXPECT_THAT(ResolveProgramLabel("@loomx//examples/glue:run_glue", runfiles),
              IsOkAndHolds("@loomx//examples/glue:run_glue"));
  EXPECT_THAT(ResolveProgramLabel("bazel-bin/x/y", runfiles), IsOkAndHolds("bazel-bin/x/y"));
  EXPECT_THAT(ResolveProgramLabel("./run_glue", runfiles), IsOkAndHolds("./run_glue"));
  EXPECT_THAT(ResolveProgramLabel("//../etc:passwd", runfiles),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not a Bazel label")));
  EXPECT_THAT(ResolveProgramLabel("//a b:c", runfiles),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not a Bazel label")));
}

}  // namespace
}  // namespace loom::launch
