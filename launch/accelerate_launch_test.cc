#include "launch/accelerate_launch.h"

#include <stdlib.h>

#include <fstream>
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
using ::testing::IsEmpty;
using ::testing::Pair;

// The multi-GPU YAML of transformers' Trainer docs ("Accelerate launcher"), CPU variant.
constexpr char kCpuMultiNode[] = R"(compute_environment: LOCAL_MACHINE
distributed_type: MULTI_CPU
downcast_bf16: 'no'
gpu_ids: all
machine_rank: 1
main_process_ip: 192.168.20.1
main_process_port: 9898
main_training_function: main
mixed_precision: bf16
num_machines: 2
num_processes: 8
rdzv_backend: static
same_network: true
tpu_env: []
tpu_use_cluster: false
tpu_use_sudo: false
use_cpu: true
)";

std::string WriteYaml(const std::string& name, const std::string& text) {
  std::string path = std::string(getenv("TEST_TMPDIR")) + "/" + name;
  std::ofstream(path) << text;
  return path;
}

absl::StatusOr<LaunchOptions> Parse(const std::vector<std::string>& args,
                                    std::vector<std::string>* warnings = nullptr,
                                    int local_gpus = 0) {
  return ParseAccelerateCommandLine(args, LaunchOptions(), local_gpus, warnings);
}

TEST(AccelerateLaunchTest, ConfigFileMapsOntoTheSpawn) {
  std::vector<std::string> warnings;
  ASSERT_OK_AND_ASSIGN(LaunchOptions o,
                       Parse({"--config_file", WriteYaml("cpu.yaml", kCpuMultiNode), "./train",
                              "--output_dir", "/tmp/x"},
                             &warnings));
  EXPECT_THAT(warnings, IsEmpty());
  EXPECT_EQ(o.nnodes, 2);
  EXPECT_EQ(o.node_rank, 1);
  EXPECT_EQ(o.nproc_per_node, 4);
  EXPECT_EQ(o.master_addr, "192.168.20.1");
  EXPECT_EQ(o.master_port, 9898);
  EXPECT_EQ(o.program, "./train");
  EXPECT_THAT(o.program_args, ElementsAre("--bf16", "--use_cpu", "--output_dir", "/tmp/x"));
  // What accelerate exports for Accelerator scripts, and the implied flags for loom's.
  EXPECT_THAT(o.extra_env,
              ElementsAre(Pair("ACCELERATE_MIXED_PRECISION", "bf16"),
                          Pair("ACCELERATE_USE_CPU", "true"),
                          Pair("LOOM_ACCELERATE_TRAINING_ARGS", R"(["--bf16","--use_cpu"])")));
  EXPECT_THAT(RankEnvironment(o, 3, /*omp_num_threads_set=*/true),
              ElementsAre(Pair("RANK", "7"), Pair("LOCAL_RANK", "3"), Pair("WORLD_SIZE", "8"),
                          Pair("LOCAL_WORLD_SIZE", "4"), Pair("GROUP_RANK", "1"),
                          Pair("MASTER_ADDR", "192.168.20.1"), Pair("MASTER_PORT", "9898"),
                          Pair("ACCELERATE_MIXED_PRECISION", "bf16"),
                          Pair("ACCELERATE_USE_CPU", "true"),
                          Pair("LOOM_ACCELERATE_TRAINING_ARGS", R"(["--bf16","--use_cpu"])")));
}

TEST(AccelerateLaunchTest, FlagsEqualTheConfigFile) {
  ASSERT_OK_AND_ASSIGN(
      LaunchOptions yaml,
      Parse({"--config_file", WriteYaml("c.yaml", kCpuMultiNode), "./train", "--seed", "1"}));
  ASSERT_OK_AND_ASSIGN(LaunchOptions flags,
                       Parse({"--num_processes=8", "--num_machines", "2", "--machine_rank=1",
                              "--main_process_ip", "192.168.20.1", "--main_process_port=9898",
                              "--mixed_precision", "bf16", "--use_cpu", "./train", "--seed", "1"}));
  EXPECT_EQ(flags.nnodes, yaml.nnodes);
  EXPECT_EQ(flags.node_rank, yaml.node_rank);
  EXPECT_EQ(flags.nproc_per_node, yaml.nproc_per_node);
  EXPECT_EQ(flags.master_addr, yaml.master_addr);
  EXPECT_EQ(flags.master_port, yaml.master_port);
  EXPECT_EQ(flags.program, yaml.program);
  EXPECT_EQ(flags.program_args, yaml.program_args);
}

TEST(AccelerateLaunchTest, FlagsOverrideTheConfigFileAndDefaultsAreLocal) {
  ASSERT_OK_AND_ASSIGN(LaunchOptions o, Parse({"--config_file", WriteYaml("o.yaml", kCpuMultiNode),
                                               "--num_machines=1", "--machine_rank=0",
                                               "--num_processes=3", "--mixed_precision=no", "p"}));
  EXPECT_EQ(o.nnodes, 1);
  EXPECT_EQ(o.nproc_per_node, 3);
  EXPECT_THAT(o.program_args, ElementsAre("--use_cpu"));

  std::vector<std::string> warnings;
  ASSERT_OK_AND_ASSIGN(LaunchOptions d, Parse({"--gpu_ids", "1,3", "p"}, &warnings));
  EXPECT_EQ(d.nproc_per_node, 1);
  EXPECT_THAT(warnings, ElementsAre("`--num_processes` was set to a value of 1 (one per GPU of "
                                    "each machine, 1 without GPUs)"));
  EXPECT_EQ(d.master_addr, "127.0.0.1");
  EXPECT_EQ(d.master_port, 29500);
  EXPECT_THAT(d.program_args, IsEmpty());
  EXPECT_THAT(d.extra_env, ElementsAre(Pair("CUDA_VISIBLE_DEVICES", "1,3"),
                                       Pair("ACCELERATE_MIXED_PRECISION", "no"),
                                       Pair("LOOM_ACCELERATE_TRAINING_ARGS", "[]")));
}

TEST(AccelerateLaunchTest, NumProcessesDefaultsToTheGpusOfEachMachine) {
  ASSERT_OK_AND_ASSIGN(LaunchOptions gpus, Parse({"--multi_gpu", "p"}, nullptr, 4));
  EXPECT_EQ(gpus.nproc_per_node, 4);
  ASSERT_OK_AND_ASSIGN(LaunchOptions two,
                       Parse({"--num_machines=2", "--main_process_ip=h", "p"}, nullptr, 3));
  EXPECT_EQ(two.nproc_per_node, 3);
  EXPECT_EQ(two.world_size(), 6);
  ASSERT_OK_AND_ASSIGN(LaunchOptions cpu, Parse({"--use_cpu", "p"}, nullptr, 4));
  EXPECT_EQ(cpu.nproc_per_node, 1);
}

TEST(AccelerateLaunchTest, FsdpFlagsBecomeTrainingArguments) {
  ASSERT_OK_AND_ASSIGN(
      LaunchOptions o,
      Parse({"--num_processes=2", "--use_fsdp", "--mixed_precision=bf16",
             "--fsdp_auto_wrap_policy=TRANSFORMER_BASED_WRAP",
             "--fsdp_transformer_layer_cls_to_wrap=BertLayer", "--fsdp_sharding_strategy=1",
             "--fsdp_state_dict_type=FULL_STATE_DICT", "./run_glue", "--do_train"}));
  EXPECT_EQ(o.nproc_per_node, 2);
  ASSERT_EQ(o.program_args.size(), 6u);
  EXPECT_THAT(std::vector<std::string>(o.program_args.begin(), o.program_args.begin() + 3),
              ElementsAre("--bf16", "--fsdp", "full_shard auto_wrap"));
  EXPECT_EQ(o.program_args[3], "--fsdp_config");
  EXPECT_EQ(o.program_args[5], "--do_train");
  EXPECT_THAT(o.extra_env, ::testing::Contains(Pair("ACCELERATE_USE_FSDP", "true")));
}

TEST(AccelerateLaunchTest, ErrorsNameTheKeyAndTheFix) {
  EXPECT_THAT(Parse({"--num_processes=3", "--num_machines=2", "--machine_rank=0",
                     "--main_process_ip=h", "p"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("num_processes 3 is not a multiple of num_machines 2")));
  EXPECT_THAT(Parse({"--num_processes=4", "--num_machines=2", "p"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--main_process_ip is required with num_machines 2")));
  EXPECT_THAT(Parse({"--num_processes=2"}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no training script")));
  EXPECT_THAT(
      Parse({"--num_processes=2", "--nproc_per_node=2", "p"}),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("unknown flag --nproc_per_node")));
  EXPECT_THAT(Parse({"--main_process_port=0", "p"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--main_process_port: expected an integer in [1, 65535]")));
}

}  // namespace
}  // namespace loom::launch
