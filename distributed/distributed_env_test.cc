#include "distributed/distributed_env.h"

#include <cstdlib>
#include <string>
#include <vector>

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::distributed {
namespace {

using ::loom::base::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

struct OkCase {
  std::string name;
  EnvMap env;
  DistributedEnv want;
};

DistributedEnv Make(int rank, int local_rank, int world, int local_world, int group,
                    std::string addr, int port, EnvSource source) {
  DistributedEnv e;
  e.rank = rank;
  e.local_rank = local_rank;
  e.world_size = world;
  e.local_world_size = local_world;
  e.group_rank = group;
  e.master_addr = std::move(addr);
  e.master_port = port;
  e.source = source;
  return e;
}

TEST(DistributedEnvTest, ParsesEachSource) {
  const std::vector<OkCase> cases = {
      {"empty", {}, Make(0, 0, 1, 1, 0, "127.0.0.1", 29500, EnvSource::kDefault)},
      {"unrelated",
       {{"HOME", "/root"}, {"LOCAL_RANK", "0"}},
       Make(0, 0, 1, 1, 0, "127.0.0.1", 29500, EnvSource::kDefault)},
      {"torchrun_full",
       {{"RANK", "5"},
        {"LOCAL_RANK", "1"},
        {"WORLD_SIZE", "8"},
        {"LOCAL_WORLD_SIZE", "4"},
        {"GROUP_RANK", "1"},
        {"MASTER_ADDR", "node0"},
        {"MASTER_PORT", "1234"}},
       Make(5, 1, 8, 4, 1, "node0", 1234, EnvSource::kTorchrun)},
      {"torchrun_minimal",
       {{"RANK", "3"}, {"WORLD_SIZE", "4"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "9"}},
       Make(3, 3, 4, 4, 0, "h", 9, EnvSource::kTorchrun)},
      {"torchrun_single",
       {{"RANK", "0"}, {"WORLD_SIZE", "1"}},
       Make(0, 0, 1, 1, 0, "127.0.0.1", 29500, EnvSource::kTorchrun)},
      {"torchrun_wins_over_mpi",
       {{"RANK", "1"},
        {"WORLD_SIZE", "2"},
        {"OMPI_COMM_WORLD_RANK", "0"},
        {"OMPI_COMM_WORLD_SIZE", "7"},
        {"MASTER_ADDR", "a"},
        {"MASTER_PORT", "100"}},
       Make(1, 1, 2, 2, 0, "a", 100, EnvSource::kTorchrun)},
      {"openmpi",
       {{"OMPI_COMM_WORLD_RANK", "3"},
        {"OMPI_COMM_WORLD_SIZE", "4"},
        {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
        {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
        {"SLURM_PROCID", "0"},
        {"MASTER_ADDR", "m"},
        {"MASTER_PORT", "2000"}},
       Make(3, 1, 4, 2, 1, "m", 2000, EnvSource::kOpenMpi)},
      {"slurm",
       {{"SLURM_PROCID", "5"},
        {"SLURM_NTASKS", "6"},
        {"SLURM_LOCALID", "2"},
        {"SLURM_NTASKS_PER_NODE", "3"},
        {"SLURM_NODEID", "1"},
        {"MASTER_ADDR", "s"},
        {"MASTER_PORT", "3000"}},
       Make(5, 2, 6, 3, 1, "s", 3000, EnvSource::kSlurm)},
      {"slurm_per_node_not_a_number",
       {{"SLURM_PROCID", "1"},
        {"SLURM_NTASKS", "6"},
        {"SLURM_LOCALID", "1"},
        {"SLURM_NTASKS_PER_NODE", "2(x3)"},
        {"MASTER_ADDR", "s"},
        {"MASTER_PORT", "3000"}},
       Make(1, 1, 6, 6, 0, "s", 3000, EnvSource::kSlurm)},
  };
  for (const OkCase& c : cases) {
    SCOPED_TRACE(c.name);
    absl::StatusOr<DistributedEnv> got = DistributedEnvFromMap(c.env);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(got->rank, c.want.rank);
    EXPECT_EQ(got->local_rank, c.want.local_rank);
    EXPECT_EQ(got->world_size, c.want.world_size);
    EXPECT_EQ(got->local_world_size, c.want.local_world_size);
    EXPECT_EQ(got->group_rank, c.want.group_rank);
    EXPECT_EQ(got->master_addr, c.want.master_addr);
    EXPECT_EQ(got->master_port, c.want.master_port);
    EXPECT_EQ(got->source, c.want.source);
  }
}

struct ErrorCase {
  std::string name;
  EnvMap env;
  std::vector<std::string> message_parts;
};

TEST(DistributedEnvTest, RejectsInvalidEnvironments) {
  const EnvMap master = {{"MASTER_ADDR", "h"}, {"MASTER_PORT", "1"}};
  auto with_master = [&](EnvMap env) {
    env.insert(master.begin(), master.end());
    return env;
  };
  const std::vector<ErrorCase> cases = {
      {"rank_not_int",
       with_master({{"RANK", "one"}, {"WORLD_SIZE", "2"}}),
       {"RANK=\"one\"", "not an integer"}},
      {"rank_without_world", with_master({{"RANK", "0"}}), {"RANK is set but WORLD_SIZE is not"}},
      {"world_without_rank",
       with_master({{"WORLD_SIZE", "2"}}),
       {"WORLD_SIZE is set but RANK is not"}},
      {"rank_too_big",
       with_master({{"RANK", "4"}, {"WORLD_SIZE", "4"}}),
       {"RANK=4", "WORLD_SIZE=4"}},
      {"rank_negative",
       with_master({{"RANK", "-1"}, {"WORLD_SIZE", "4"}}),
       {"RANK=-1", "WORLD_SIZE=4"}},
      {"world_zero",
       with_master({{"RANK", "0"}, {"WORLD_SIZE", "0"}}),
       {"WORLD_SIZE=0 must be at least 1"}},
      {"local_rank_too_big",
       with_master(
           {{"RANK", "1"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "2"}, {"LOCAL_WORLD_SIZE", "2"}}),
       {"LOCAL_RANK=2", "LOCAL_WORLD_SIZE=2"}},
      {"local_world_too_big",
       with_master({{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"LOCAL_WORLD_SIZE", "3"}}),
       {"LOCAL_WORLD_SIZE=3", "WORLD_SIZE=2"}},
      {"no_master_addr",
       {{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "5"}},
       {"MASTER_ADDR is not set", "export MASTER_ADDR"}},
      {"no_master_port",
       {{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}},
       {"MASTER_PORT is not set"}},
      {"port_range", {{"MASTER_PORT", "70000"}}, {"MASTER_PORT=70000", "1..65535"}},
      {"port_not_int", {{"MASTER_PORT", "http"}}, {"MASTER_PORT=\"http\""}},
      {"empty_addr", {{"MASTER_ADDR", ""}}, {"MASTER_ADDR is empty"}},
      {"mpi_rank_too_big",
       with_master({{"OMPI_COMM_WORLD_RANK", "2"}, {"OMPI_COMM_WORLD_SIZE", "2"}}),
       {"OMPI_COMM_WORLD_RANK=2", "OMPI_COMM_WORLD_SIZE=2"}},
      {"mpi_without_master",
       {{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "2"}},
       {"OMPI_COMM_WORLD_* variables", "MASTER_ADDR is not set"}},
      {"slurm_local_too_big",
       with_master({{"SLURM_PROCID", "0"},
                    {"SLURM_NTASKS", "4"},
                    {"SLURM_LOCALID", "2"},
                    {"SLURM_NTASKS_PER_NODE", "2"}}),
       {"SLURM_LOCALID=2", "SLURM_NTASKS_PER_NODE=2"}},
  };
  for (const ErrorCase& c : cases) {
    SCOPED_TRACE(c.name);
    absl::StatusOr<DistributedEnv> got = DistributedEnvFromMap(c.env);
    ASSERT_FALSE(got.ok()) << "rank " << got->rank;
    EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
    for (const std::string& part : c.message_parts) {
      EXPECT_THAT(std::string(got.status().message()), HasSubstr(part));
    }
  }
}

TEST(DistributedEnvTest, ReadsGlooSocketIfnameWithEverySource) {
  EXPECT_EQ(DistributedEnvFromMap({})->gloo_socket_ifname, "");
  EXPECT_EQ(DistributedEnvFromMap({{"GLOO_SOCKET_IFNAME", "lo"}})->gloo_socket_ifname, "lo");
  EXPECT_EQ(DistributedEnvFromMap({{"RANK", "0"},
                                   {"WORLD_SIZE", "2"},
                                   {"MASTER_ADDR", "h"},
                                   {"MASTER_PORT", "1"},
                                   {"GLOO_SOCKET_IFNAME", "eth1"}})
                ->gloo_socket_ifname,
            "eth1");
}

TEST(DistributedEnvTest, ReadsTheProcessEnvironment) {
  ASSERT_EQ(setenv("LOOM_DISTRIBUTED_ENV_TEST", "a=b", 1), 0);
  EnvMap env = ReadProcessEnvironment();
  ASSERT_TRUE(env.contains("LOOM_DISTRIBUTED_ENV_TEST"));
  EXPECT_EQ(env["LOOM_DISTRIBUTED_ENV_TEST"], "a=b");

  ASSERT_EQ(setenv("RANK", "1", 1), 0);
  ASSERT_EQ(setenv("WORLD_SIZE", "1", 1), 0);
  EXPECT_THAT(DistributedEnvFromProcess(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("RANK=1"), HasSubstr("WORLD_SIZE=1"))));
  unsetenv("RANK");
  unsetenv("WORLD_SIZE");
}

}  // namespace
}  // namespace loom::distributed
