// The accelerate YAML configs shown in transformers' Trainer docs, "Accelerate launcher"
// (args/testdata/accelerate_*.yaml), the `accelerate launch` flags of the same section
// (accelerate 0.27), and the TrainingArguments flags they imply.
#include "args/accelerate_config.h"

#include <string>
#include <vector>

#include "args/deepspeed_config.h"
#include "args/training_args.h"
#include "args/training_args_testing.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace loom::args {
namespace {

using ::loom::base::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using json = nlohmann::ordered_json;

std::string TestData(const std::string& name) { return "args/testdata/" + name; }

absl::StatusOr<AccelerateConfig> Load(const std::string& name,
                                      std::vector<std::string>* warnings = nullptr) {
  return LoadAccelerateConfig(TestData(name), warnings);
}

// The launcher fields shared by every docs example.
void ExpectCommon(const AccelerateConfig& c) {
  EXPECT_EQ(c.compute_environment, "LOCAL_MACHINE");
  EXPECT_FALSE(c.downcast_bf16);  // 'no'
  EXPECT_EQ(c.machine_rank, 0);
  EXPECT_EQ(c.main_training_function, "main");
  EXPECT_EQ(c.rdzv_backend, "static");
  EXPECT_TRUE(c.same_network);
  EXPECT_THAT(c.tpu_env, IsEmpty());
  EXPECT_FALSE(c.tpu_use_cluster);
  EXPECT_FALSE(c.tpu_use_sudo);
  EXPECT_FALSE(c.use_cpu);
}

// ---- The four YAML configs of the docs ----

TEST(AccelerateConfigYamlTest, DdpMultiNode) {
  std::vector<std::string> warnings;
  ASSERT_OK_AND_ASSIGN(AccelerateConfig c, Load("accelerate_ddp_multinode.yaml", &warnings));
  EXPECT_THAT(warnings, IsEmpty());
  ExpectCommon(c);
  EXPECT_EQ(c.distributed_type, DistributedType::kMultiGpu);
  EXPECT_EQ(c.gpu_ids, "all");
  EXPECT_EQ(c.main_process_ip, "192.168.20.1");
  EXPECT_EQ(c.main_process_port, 9898);
  EXPECT_EQ(c.mixed_precision, MixedPrecision::kFp16);
  EXPECT_EQ(c.num_machines, 2);
  EXPECT_EQ(c.num_processes, 8);
  EXPECT_FALSE(c.fsdp_config.has_value());
  EXPECT_FALSE(c.deepspeed_config.has_value());
  EXPECT_THAT(ImpliedTrainingArgumentsFlags(c),
              ::loom::base::testing::IsOkAndHolds(ElementsAre("--fp16")));
}

TEST(AccelerateConfigYamlTest, Fsdp) {
  std::vector<std::string> warnings;
  ASSERT_OK_AND_ASSIGN(AccelerateConfig c, Load("accelerate_fsdp.yaml", &warnings));
  EXPECT_THAT(warnings, IsEmpty());
  ExpectCommon(c);
  EXPECT_EQ(c.distributed_type, DistributedType::kFsdp);
  EXPECT_EQ(c.mixed_precision, MixedPrecision::kBf16);
  EXPECT_EQ(c.num_machines, 1);
  EXPECT_EQ(c.num_processes, 2);
  EXPECT_FALSE(c.main_process_ip.has_value());
  ASSERT_TRUE(c.fsdp_config.has_value());
  const AccelerateFsdpConfig& f = *c.fsdp_config;
  EXPECT_EQ(f.auto_wrap_policy, FsdpAutoWrapPolicy::kTransformerBased);
  EXPECT_EQ(f.backward_prefetch, FsdpBackwardPrefetch::kBackwardPre);
  EXPECT_TRUE(f.forward_prefetch);
  EXPECT_FALSE(f.offload_params);
  EXPECT_EQ(f.sharding_strategy, FsdpShardingStrategy::kFullShard);
  EXPECT_EQ(f.state_dict_type, FsdpStateDictType::kFullStateDict);
  EXPECT_TRUE(f.sync_module_states);
  EXPECT_THAT(f.transformer_layer_cls_to_wrap, ElementsAre("BertLayer"));
  EXPECT_TRUE(f.use_orig_params);
  EXPECT_FALSE(f.min_num_params.has_value());
  EXPECT_FALSE(f.cpu_ram_efficient_loading);
}

TEST(AccelerateConfigYamlTest, DeepSpeedConfigFile) {
  std::vector<std::string> warnings;
  ASSERT_OK_AND_ASSIGN(AccelerateConfig c, Load("accelerate_deepspeed_file.yaml", &warnings));
  EXPECT_THAT(warnings, IsEmpty());
  ExpectCommon(c);
  EXPECT_EQ(c.distributed_type, DistributedType::kDeepSpeed);
  EXPECT_EQ(c.mixed_precision, MixedPrecision::kNo);  // absent in example c
  EXPECT_EQ(c.num_processes, 4);
  ASSERT_TRUE(c.deepspeed_config.has_value());
  EXPECT_EQ(c.deepspeed_config->deepspeed_config_file, "/home/user/configs/ds_zero3_config.json");
  EXPECT_EQ(c.deepspeed_config->zero3_init_flag, true);
  EXPECT_FALSE(c.deepspeed_config->zero_stage.has_value());
  EXPECT_THAT(ImpliedTrainingArgumentsFlags(c),
              ::loom::base::testing::IsOkAndHolds(
                  ElementsAre("--deepspeed", "/home/user/configs/ds_zero3_config.json")));
}

TEST(AccelerateConfigYamlTest, DeepSpeedPlugin) {
  std::vector<std::string> warnings;
  ASSERT_OK_AND_ASSIGN(AccelerateConfig c, Load("accelerate_deepspeed_plugin.yaml", &warnings));
  EXPECT_THAT(warnings, ElementsAre(HasSubstr("zero3_init_flag applies only to ZeRO stage 3")));
  ExpectCommon(c);
  EXPECT_EQ(c.distributed_type, DistributedType::kDeepSpeed);
  EXPECT_EQ(c.mixed_precision, MixedPrecision::kBf16);
  EXPECT_EQ(c.num_processes, 4);
  const AccelerateDeepSpeedConfig& d = *c.deepspeed_config;
  EXPECT_FALSE(d.deepspeed_config_file.has_value());
  EXPECT_EQ(d.gradient_accumulation_steps, 1);
  EXPECT_EQ(d.gradient_clipping, 0.7);
  EXPECT_EQ(d.offload_optimizer_device, OffloadDevice::kCpu);
  EXPECT_EQ(d.offload_param_device, OffloadDevice::kCpu);
  EXPECT_EQ(d.zero3_init_flag, true);
  EXPECT_EQ(d.zero_stage, 2);

  ASSERT_OK_AND_ASSIGN(std::vector<std::string> flags, ImpliedTrainingArgumentsFlags(c));
  ASSERT_EQ(flags.size(), 7);
  EXPECT_EQ(flags[0], "--bf16");
  EXPECT_EQ(flags[1], "--deepspeed");
  EXPECT_EQ(json::parse(flags[2]), json::parse(R"({
      "train_batch_size": "auto", "train_micro_batch_size_per_gpu": "auto",
      "gradient_accumulation_steps": "auto", "gradient_clipping": "auto",
      "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"},
                            "offload_param": {"device": "cpu"}},
      "bf16": {"enabled": "auto"}})"));
  EXPECT_THAT(std::vector<std::string>(flags.begin() + 3, flags.end()),
              ElementsAre("--gradient_accumulation_steps", "1", "--max_grad_norm", "0.7"));

  // The implied flags resolve through TrainingArguments and the DeepSpeed "auto" filling.
  ASSERT_OK_AND_ASSIGN(TrainingArguments args, testing::ResolveForTest(flags, nullptr, /*reject_unsupported=*/false));
  ASSERT_OK_AND_ASSIGN(DeepSpeedConfig ds, LoadDeepSpeedConfig(args.deepspeed()));
  TrainerDeepSpeedConfig hf_ds(std::move(ds));
  ASSERT_OK(hf_ds.TrainerConfigProcess(args, *c.num_processes));
  EXPECT_EQ(hf_ds.config().gradient_clipping.value(), 0.7);
  EXPECT_EQ(hf_ds.config().train_batch_size->value(), 32);  // 4 ranks * 8 * 1
  EXPECT_EQ(*hf_ds.dtype(), DeepSpeedDtype::kBfloat16);
  EXPECT_OK(hf_ds.CheckMismatches());
}

// ---- The CLI form of the docs ----

const std::vector<std::string> kCliExample = {
    "--num_processes=2",
    "--use_fsdp",
    "--mixed_precision=bf16",
    "--fsdp_auto_wrap_policy=TRANSFORMER_BASED_WRAP",
    "--fsdp_transformer_layer_cls_to_wrap=BertLayer",  // the shell removes the quotes
    "--fsdp_sharding_strategy=1",
    "--fsdp_state_dict_type=FULL_STATE_DICT",
    "./examples/pytorch/text-classification/run_glue.py",
    "--model_name_or_path",
    "google-bert/bert-base-cased",
    "--do_train"};

TEST(AccelerateLaunchTest, CliExampleMatchesYamlB) {
  ASSERT_OK_AND_ASSIGN(AccelerateLaunch launch, ParseAccelerateLaunch(kCliExample));
  ASSERT_OK_AND_ASSIGN(AccelerateConfig yaml, Load("accelerate_fsdp.yaml"));
  const AccelerateConfig& cli = launch.config;
  EXPECT_EQ(launch.training_script, "./examples/pytorch/text-classification/run_glue.py");
  EXPECT_THAT(launch.training_script_args,
              ElementsAre("--model_name_or_path", "google-bert/bert-base-cased", "--do_train"));
  EXPECT_FALSE(launch.config_file.has_value());

  // Launch-relevant fields: equal.
  EXPECT_EQ(cli.distributed_type, yaml.distributed_type);
  EXPECT_EQ(cli.num_processes, yaml.num_processes);
  EXPECT_EQ(cli.num_machines, yaml.num_machines);
  EXPECT_EQ(cli.machine_rank, yaml.machine_rank);
  EXPECT_EQ(cli.mixed_precision, yaml.mixed_precision);
  EXPECT_EQ(cli.use_cpu, yaml.use_cpu);
  EXPECT_EQ(cli.gpu_ids, yaml.gpu_ids);
  EXPECT_EQ(cli.main_process_ip, yaml.main_process_ip);
  EXPECT_EQ(cli.main_process_port, yaml.main_process_port);
  EXPECT_EQ(cli.rdzv_backend, yaml.rdzv_backend);
  ASSERT_TRUE(cli.fsdp_config.has_value());
  const AccelerateFsdpConfig& c = *cli.fsdp_config;
  const AccelerateFsdpConfig& y = *yaml.fsdp_config;
  EXPECT_EQ(c.auto_wrap_policy, y.auto_wrap_policy);
  EXPECT_EQ(c.transformer_layer_cls_to_wrap, y.transformer_layer_cls_to_wrap);
  EXPECT_EQ(c.sharding_strategy, y.sharding_strategy);
  EXPECT_EQ(c.state_dict_type, y.state_dict_type);
  // Not on the example's command line, and equal through the launcher defaults:
  EXPECT_EQ(c.offload_params, y.offload_params);          // false
  EXPECT_EQ(c.sync_module_states, y.sync_module_states);  // true
  EXPECT_EQ(c.use_orig_params, y.use_orig_params);        // true
  EXPECT_EQ(c.cpu_ram_efficient_loading, y.cpu_ram_efficient_loading);
  EXPECT_EQ(cli.downcast_bf16, yaml.downcast_bf16);
  EXPECT_EQ(cli.main_training_function, yaml.main_training_function);
  EXPECT_EQ(cli.same_network, yaml.same_network);
  // Not on the command line and different from YAML (b): the two prefetch settings.
  EXPECT_FALSE(c.backward_prefetch.has_value());  // YAML (b): BACKWARD_PRE
  EXPECT_FALSE(c.forward_prefetch);               // YAML (b): true

  ASSERT_OK_AND_ASSIGN(std::vector<std::string> cli_flags, ImpliedTrainingArgumentsFlags(cli));
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> yaml_flags, ImpliedTrainingArgumentsFlags(yaml));
  EXPECT_THAT(cli_flags,
              ElementsAre("--bf16", "--fsdp", "full_shard auto_wrap", "--fsdp_config",
                          R"({"transformer_layer_cls_to_wrap":["BertLayer"],)"
                          R"("forward_prefetch":false,"sync_module_states":true,)"
                          R"("use_orig_params":true,"cpu_ram_efficient_loading":false})"));
  EXPECT_THAT(yaml_flags,
              ElementsAre("--bf16", "--fsdp", "full_shard auto_wrap", "--fsdp_config",
                          R"({"transformer_layer_cls_to_wrap":["BertLayer"],)"
                          R"("backward_prefetch":"backward_pre","forward_prefetch":true,)"
                          R"("sync_module_states":true,"use_orig_params":true,)"
                          R"("cpu_ram_efficient_loading":false})"));

  // With the two prefetch flags added (and `--k v` spelling), the CLI maps exactly like YAML (b).
  std::vector<std::string> full = {"--fsdp_backward_prefetch", "BACKWARD_PRE",
                                   "--fsdp-forward-prefetch", "true"};
  full.insert(full.end(), kCliExample.begin(), kCliExample.end());
  ASSERT_OK_AND_ASSIGN(AccelerateLaunch full_launch, ParseAccelerateLaunch(full));
  EXPECT_THAT(ImpliedTrainingArgumentsFlags(full_launch.config),
              ::loom::base::testing::IsOkAndHolds(yaml_flags));
}

TEST(AccelerateLaunchTest, ImpliedFsdpFlagsPassPostInit) {
  ASSERT_OK_AND_ASSIGN(AccelerateConfig yaml, Load("accelerate_fsdp.yaml"));
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> flags, ImpliedTrainingArgumentsFlags(yaml));
  ASSERT_OK_AND_ASSIGN(TrainingArguments args, testing::ResolveForTest(flags, nullptr, /*reject_unsupported=*/false));
  EXPECT_TRUE(args.bf16());
  EXPECT_THAT(args.fsdp(), ElementsAre("full_shard", "auto_wrap"));
  json cfg = json::parse(args.fsdp_config());
  EXPECT_EQ(cfg["transformer_layer_cls_to_wrap"], json::array({"BertLayer"}));
  EXPECT_EQ(cfg["backward_prefetch"], "backward_pre");
}

TEST(AccelerateLaunchTest, CliOverridesConfigFile) {
  std::vector<std::string> warnings;
  ASSERT_OK_AND_ASSIGN(
      AccelerateLaunch launch,
      ParseAccelerateLaunch({"--config_file", TestData("accelerate_ddp_multinode.yaml"),
                             "--machine_rank", "1", "--mixed-precision", "no", "--num_processes=16",
                             "--gpu_ids", "0,1", "--cpu", "train.py"},
                            &warnings));
  EXPECT_EQ(launch.config_file, TestData("accelerate_ddp_multinode.yaml"));
  EXPECT_EQ(launch.config.machine_rank, 1);  // valid: YAML num_machines is 2
  EXPECT_EQ(launch.config.mixed_precision, MixedPrecision::kNo);
  EXPECT_EQ(launch.config.num_processes, 16);
  EXPECT_EQ(launch.config.gpu_ids, "0,1");
  EXPECT_TRUE(launch.config.use_cpu);
  EXPECT_EQ(launch.config.main_process_ip, "192.168.20.1");  // from the YAML
  EXPECT_EQ(launch.training_script, "train.py");
  EXPECT_THAT(launch.training_script_args, IsEmpty());
  EXPECT_THAT(ImpliedTrainingArgumentsFlags(launch.config),
              ::loom::base::testing::IsOkAndHolds(ElementsAre("--use_cpu")));
}

TEST(AccelerateLaunchTest, DeepSpeedFlags) {
  ASSERT_OK_AND_ASSIGN(
      AccelerateLaunch launch,
      ParseAccelerateLaunch({"--use_deepspeed", "--zero_stage", "3", "--offload_param_device=nvme",
                             "--zero3_init_flag", "--gradient_clipping", "1.0", "x.py"}));
  const AccelerateDeepSpeedConfig& d = *launch.config.deepspeed_config;
  EXPECT_EQ(launch.config.distributed_type, DistributedType::kDeepSpeed);
  EXPECT_EQ(d.zero_stage, 3);
  EXPECT_EQ(d.offload_param_device, OffloadDevice::kNvme);
  EXPECT_EQ(d.zero3_init_flag, true);
  EXPECT_EQ(d.gradient_clipping, 1.0);
  ASSERT_OK_AND_ASSIGN(
      AccelerateLaunch file_launch,
      ParseAccelerateLaunch({"--use_deepspeed", "--deepspeed_config_file", "ds.json", "x.py"}));
  EXPECT_THAT(ImpliedTrainingArgumentsFlags(file_launch.config),
              ::loom::base::testing::IsOkAndHolds(ElementsAre("--deepspeed", "ds.json")));
}

// ---- Warnings and errors name the key ----

TEST(AccelerateConfigErrorsTest, YamlValuesNameTheKey) {
  auto parse = [](const std::string& yaml) {
    return ParseAccelerateConfigYaml(yaml, "test.yaml").status();
  };
  EXPECT_THAT(parse("distributed_type: TPU\n"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "accelerate config test.yaml: distributed_type: expected one of NO, "
                       "MULTI_CPU, MULTI_GPU, FSDP, DEEPSPEED, got \"TPU\""));
  EXPECT_THAT(parse("mixed_precision: fp8\n"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("mixed_precision: expected one of no, fp16, bf16, got \"fp8\"")));
  EXPECT_THAT(parse("fsdp_config:\n  fsdp_sharding_strategy: 7\n"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("fsdp_config.fsdp_sharding_strategy: expected 1-5 or one of "
                                 "FULL_SHARD")));
  EXPECT_THAT(parse("num_processes: many\n"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("num_processes: expected an integer, got \"many\"")));
  EXPECT_THAT(parse("use_cpu: maybe\n"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("use_cpu: expected true or false, got \"maybe\"")));
  EXPECT_THAT(parse("deepspeed_config:\n  offload_param_device: gpu\n"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("deepspeed_config.offload_param_device: expected one of none, "
                                 "cpu, nvme")));
  EXPECT_THAT(parse("deepspeed_config:\n  zero_stage: 4\n"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("deepspeed_config.zero_stage: expected an integer in [0, 3]")));
  EXPECT_THAT(parse("num_machines: 2\nmachine_rank: 2\n"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("machine_rank: must be < num_machines (2), got 2")));
  EXPECT_THAT(parse("deepspeed_config:\n  deepspeed_config_file: a.json\n  zero_stage: 2\n"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("deepspeed_config.deepspeed_config_file: when it is given, these "
                                 "keys must be set in that DeepSpeed JSON file instead, not in the "
                                 "accelerate config: deepspeed_config.zero_stage")));
  EXPECT_THAT(parse("num_processes: [1, 2]\n"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("num_processes: expected a single value, got a list")));
  EXPECT_THAT(parse("a: [b\n"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not valid YAML")));
  EXPECT_THAT(LoadAccelerateConfig(TestData("nope.yaml")).status(),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("nope.yaml")));
}

// Found by //tests/fuzz:accelerate_config_fuzzer: a class name that is not UTF-8 was accepted
// and then made ImpliedTrainingArgumentsFlags' JSON dump() throw (type_error 316).
TEST(AccelerateConfigErrorsTest, ClassNamesMustBeUtf8) {
  EXPECT_THAT(
      ParseAccelerateConfigYaml("distributed_type: FSDP\nfsdp_config:\n"
                                "  fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP\n"
                                "  fsdp_transformer_layer_cls_to_wrap: BertLa\x81"
                                "er\n",
                                "test.yaml")
          .status(),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "accelerate config test.yaml: fsdp_config.fsdp_transformer_layer_cls_to_wrap: "
               "expected class names in UTF-8 (save the file as UTF-8), got \"BertLa\\201er\""));
  EXPECT_THAT(
      ParseAccelerateLaunch({"--fsdp_transformer_layer_cls_to_wrap", "A,\xed\xa0\x80", "x.py"})
          .status(),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("--fsdp_transformer_layer_cls_to_wrap: expected class names in "
                         "UTF-8")));
  ASSERT_OK_AND_ASSIGN(
      AccelerateConfig c,
      ParseAccelerateConfigYaml("fsdp_config:\n  fsdp_transformer_layer_cls_to_wrap: "
                                "\"Caf\xc3\xa9Layer,\xf0\x9f\x98\x80\"\n",
                                "ok.yaml"));
  EXPECT_THAT(c.fsdp_config->transformer_layer_cls_to_wrap,
              ElementsAre("Caf\xc3\xa9Layer", "\xf0\x9f\x98\x80"));
}

TEST(AccelerateConfigErrorsTest, UnknownYamlKeysAreWarnings) {
  std::vector<std::string> warnings;
  ASSERT_OK_AND_ASSIGN(AccelerateConfig c,
                       ParseAccelerateConfigYaml("num_proceses: 2\nmain_process_ip: null\n"
                                                 "fsdp_config:\n  fsdp_foo: 1\n",
                                                 "t.yaml", &warnings));
  EXPECT_FALSE(c.num_processes.has_value());
  EXPECT_FALSE(c.main_process_ip.has_value());
  EXPECT_THAT(warnings,
              ElementsAre("unknown accelerate config key \"num_proceses\" is ignored; did you mean "
                          "\"num_processes\"?",
                          HasSubstr("\"fsdp_config.fsdp_foo\"")));
}

TEST(AccelerateConfigErrorsTest, CliErrorsNameTheFlag) {
  EXPECT_THAT(ParseAccelerateLaunch({"--num_procs=2", "x.py"}).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "accelerate launch: unknown flag --num_procs; did you mean "
                       "--num_processes?"));
  EXPECT_THAT(ParseAccelerateLaunch({"--num_processes"}).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "accelerate launch: --num_processes expects a value"));
  EXPECT_THAT(ParseAccelerateLaunch({"--fsdp_sharding_strategy=SIX", "x.py"}).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("accelerate launch: --fsdp_sharding_strategy: expected one of")));
  EXPECT_THAT(ParseAccelerateLaunch({"--use_fsdp", "--use_deepspeed", "x.py"}).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--use_fsdp and --use_deepspeed are mutually exclusive")));
  EXPECT_THAT(ParseAccelerateLaunch({"--machine_rank", "1", "x.py"}).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("accelerate launch: machine_rank: must be < num_machines")));
}

TEST(AccelerateConfigErrorsTest, MappingRejectsWhatHfRejects) {
  AccelerateConfig c;
  c.distributed_type = DistributedType::kFsdp;
  c.fsdp_config.emplace();
  c.fsdp_config->offload_params = true;
  c.fsdp_config->sharding_strategy = FsdpShardingStrategy::kNoShard;
  EXPECT_THAT(ImpliedTrainingArgumentsFlags(c).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("fsdp_config.fsdp_offload_params: offload is only compatible")));
  c.fsdp_config->sharding_strategy = FsdpShardingStrategy::kShardGradOp;
  c.fsdp_config->auto_wrap_policy = FsdpAutoWrapPolicy::kSizeBased;
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> flags, ImpliedTrainingArgumentsFlags(c));
  EXPECT_EQ(flags[1], "shard_grad_op offload auto_wrap");
  EXPECT_EQ(json::parse(flags[3])["min_num_params"], 100000000);
  c.fsdp_config->sync_module_states = false;
  c.fsdp_config->cpu_ram_efficient_loading = true;
  EXPECT_THAT(ImpliedTrainingArgumentsFlags(c).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("fsdp_config.fsdp_cpu_ram_efficient_loading")));
}

// fsdp_state_dict_type: the full state dict is what loom writes; the sharded layouts are
// refused, never accepted and ignored.
TEST(AccelerateConfigErrorsTest, OnlyTheFullStateDictIsAccepted) {
  AccelerateConfig c;
  c.distributed_type = DistributedType::kFsdp;
  c.fsdp_config.emplace();
  c.fsdp_config->state_dict_type = FsdpStateDictType::kFullStateDict;
  EXPECT_OK(ImpliedTrainingArgumentsFlags(c).status());
  c.fsdp_config->state_dict_type = FsdpStateDictType::kShardedStateDict;
  EXPECT_THAT(ImpliedTrainingArgumentsFlags(c).status(),
              StatusIs(absl::StatusCode::kUnimplemented,
                       HasSubstr("fsdp_config.fsdp_state_dict_type: SHARDED_STATE_DICT is not "
                                 "implemented in loom yet; use FULL_STATE_DICT")));
  c.fsdp_config->state_dict_type = FsdpStateDictType::kLocalStateDict;
  EXPECT_THAT(ImpliedTrainingArgumentsFlags(c).status(),
              StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("LOCAL_STATE_DICT")));
}

}  // namespace
}  // namespace loom::args
