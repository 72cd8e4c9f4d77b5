// PlanDeepSpeed: "auto" filled, DeepSpeed's batch derivation, the communication options, and one
// clear error (naming the key and the fix) for each config loom refuses.
#include "sharding/zero/deepspeed_plan.h"

#include <cstdlib>

#include "args/training_args_testing.h"
#include "base/status_macros.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::sharding {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

absl::StatusOr<DeepSpeedPlan> Plan(const std::string& config, std::vector<std::string> flags = {},
                                   int world = 1) {
  flags.push_back("--deepspeed");
  flags.push_back(config);
  // PostInit checks the config at the WORLD_SIZE of the environment (unset here: 1).
  // The flags alone are checked as a program checks them (no rejection of --deepspeed here:
  // that is the Trainer's switch).
  ASSIGN_OR_RETURN(args::TrainingArguments args,
                   args::testing::ResolveForTest(flags, nullptr, /*reject_unsupported=*/false));
  return PlanDeepSpeed(args, world, /*hidden_size=*/16, /*num_training_steps=*/100);
}

TEST(DeepSpeedPlanTest, AutoConfigFromTheArguments) {
  ASSERT_OK_AND_ASSIGN(
      DeepSpeedPlan plan,
      Plan(R"({"train_batch_size": "auto", "train_micro_batch_size_per_gpu": "auto",
               "gradient_accumulation_steps": "auto", "gradient_clipping": "auto",
               "zero_optimization": {"stage": 2, "reduce_bucket_size": "auto",
                                     "allgather_bucket_size": 300, "reduce_scatter": false,
                                     "allgather_partitions": false, "overlap_comm": false,
                                     "stage3_prefetch_bucket_size": "auto"},
               "gradient_predivide_factor": 2.0,
               "optimizer": {"type": "AdamW", "params": {"lr": "auto", "betas": "auto",
                             "eps": "auto", "weight_decay": "auto"}},
               "scheduler": {"type": "WarmupDecayLR", "params": {"warmup_min_lr": "auto",
                             "warmup_max_lr": "auto", "warmup_num_steps": "auto",
                             "total_num_steps": "auto"}}})",
           {"--per_device_train_batch_size", "4", "--gradient_accumulation_steps", "3",
            "--max_grad_norm", "0.5", "--learning_rate", "0.01", "--warmup_steps", "7"}));
  EXPECT_EQ(plan.stage, 2);
  EXPECT_FALSE(plan.comm.overlap_comm);
  EXPECT_EQ(plan.train_batch_size, 12);
  EXPECT_EQ(plan.train_micro_batch_size_per_gpu, 4);
  EXPECT_EQ(plan.gradient_accumulation_steps, 3);
  EXPECT_DOUBLE_EQ(plan.gradient_clipping, 0.5);
  EXPECT_EQ(plan.comm.reduce_bucket_size, 16 * 16);  // hidden_size squared (HF)
  EXPECT_EQ(plan.comm.allgather_bucket_size, 300);
  EXPECT_FALSE(plan.comm.reduce_scatter);
  EXPECT_FALSE(plan.comm.allgather_partitions);
  EXPECT_DOUBLE_EQ(plan.comm.gradient_predivide_factor, 2.0);
  EXPECT_DOUBLE_EQ(plan.config.optimizer->lr.value(), 0.01);
  EXPECT_EQ(plan.config.scheduler->warmup_num_steps.value(), 7);
  EXPECT_EQ(plan.config.scheduler->total_num_steps->value(), 100);
  EXPECT_THAT(plan.Echo(), AllOf(HasSubstr("DeepSpeedEngine configuration:"),
                                 HasSubstr("\"train_batch_size\": 12")));
}

TEST(DeepSpeedPlanTest, Bf16WithZeroAndItsCommunicationDtype) {
  ASSERT_OK_AND_ASSIGN(DeepSpeedPlan plan,
                       Plan(R"({"bf16": {"enabled": "auto"}, "zero_optimization": {"stage": 2},
                                "communication_data_type": "fp32"})",
                            {"--bf16"}));
  EXPECT_EQ(plan.comm.communication_dtype, at::kFloat);
  ASSERT_OK_AND_ASSIGN(plan, Plan(R"({"bf16": {"enabled": true}, "zero_optimization":
                                       {"stage": 1}})",
                                  {"--bf16"}));
  EXPECT_FALSE(plan.comm.communication_dtype.has_value());  // bf16, the training dtype
}

TEST(DeepSpeedPlanTest, DeepSpeedsOptimizerNamesInAnyCase) {
  ASSERT_OK_AND_ASSIGN(DeepSpeedPlan plan,
                       Plan(R"({"optimizer": {"type": "adamw", "params": {"lr": "auto"}}})"));
  EXPECT_EQ(plan.config.optimizer->type, "adamw");
}

TEST(DeepSpeedPlanTest, OverlapComm) {
  ASSERT_OK_AND_ASSIGN(DeepSpeedPlan plan,
                       Plan(R"({"zero_optimization": {"stage": 2, "overlap_comm": true}})"));
  EXPECT_TRUE(plan.comm.overlap_comm);
  ASSERT_OK_AND_ASSIGN(plan, Plan(R"({"zero_optimization": {"stage": 1}})"));
  EXPECT_FALSE(plan.comm.overlap_comm);  // DeepSpeed's default: stage == 3
}

// Stage 3's keys (DeepSpeed 0.13.5's stage3_*): DeepSpeed's defaults, "auto" from the hidden size
// (16 here: 10 * 16 and 0.9 * 16 * 16), explicit values.
TEST(DeepSpeedPlanTest, Stage3Keys) {
  ASSERT_OK_AND_ASSIGN(DeepSpeedPlan plan, Plan(R"({"zero_optimization": {"stage": 3}})"));
  EXPECT_EQ(plan.stage, 3);
  EXPECT_EQ(plan.stage3_param_persistence_threshold, 100000);
  EXPECT_EQ(plan.stage3_prefetch_bucket_size, 50000000);
  EXPECT_FALSE(plan.stage3_gather_16bit_weights_on_model_save);
  ASSERT_OK_AND_ASSIGN(plan, Plan(R"({"zero_optimization": {"stage": 3,
                                       "stage3_param_persistence_threshold": "auto",
                                       "stage3_prefetch_bucket_size": "auto",
                                       "stage3_gather_16bit_weights_on_model_save": true}})"));
  EXPECT_EQ(plan.stage3_param_persistence_threshold, 160);
  EXPECT_EQ(plan.stage3_prefetch_bucket_size, 230);
  EXPECT_TRUE(plan.stage3_gather_16bit_weights_on_model_save);
  ASSERT_OK_AND_ASSIGN(plan, Plan(R"({"zero_optimization": {"stage": 3,
                                       "stage3_param_persistence_threshold": 0,
                                       "stage3_prefetch_bucket_size": 0,
                                       "stage3_gather_fp16_weights_on_model_save": true}})"));
  EXPECT_EQ(plan.stage3_param_persistence_threshold, 0);
  EXPECT_EQ(plan.stage3_prefetch_bucket_size, 0);
  EXPECT_TRUE(plan.stage3_gather_16bit_weights_on_model_save);
}

TEST(DeepSpeedPlanTest, Offload) {
  // The config's optimizer section, or loom's CPU Adam by --optim, or the override.
  ASSERT_OK_AND_ASSIGN(DeepSpeedPlan plan,
                       Plan(R"({"optimizer": {"type": "AdamW", "params": {"lr": "auto"}},
                                "zero_optimization": {"stage": 2,
                                "offload_optimizer": {"device": "cpu", "pin_memory": true}}})"));
  EXPECT_TRUE(plan.offload.optimizer);
  EXPECT_FALSE(plan.offload.params);
  EXPECT_TRUE(plan.offload.pin_memory);
  EXPECT_TRUE(plan.offload.optimizer_nvme_path.empty());
  ASSERT_OK_AND_ASSIGN(plan, Plan(R"({"zero_optimization": {"stage": 3,
                                       "offload_optimizer": {"device": "cpu"},
                                       "offload_param": {"device": "cpu"}}})",
                                  {"--optim", "adamw_torch_fused"}));
  EXPECT_TRUE(plan.offload.optimizer);
  EXPECT_TRUE(plan.offload.params);
  EXPECT_FALSE(plan.offload.pin_memory);
  ASSERT_OK_AND_ASSIGN(plan, Plan(R"({"zero_force_ds_cpu_optimizer": false,
                                       "zero_optimization": {"stage": 1,
                                       "offload_optimizer": {"device": "cpu"}}})"));
  EXPECT_TRUE(plan.offload.optimizer);
  // ZeRO-Infinity: the path, buffers, sub-group size and the aio section (nested, as the doc).
  const std::string tmp = std::getenv("TEST_TMPDIR");
  ASSERT_OK_AND_ASSIGN(plan, Plan(R"({"zero_optimization": {"stage": 3, "sub_group_size": 1000,
                                       "offload_optimizer": {"device": "nvme",
                                         "nvme_path": ")" + tmp + R"(", "buffer_count": 6},
                                       "aio": {"block_size": 8192, "queue_depth": 4}}})",
                                  {"--optim", "adamw_torch_fused"}));
  EXPECT_EQ(plan.offload.optimizer_nvme_path, tmp);
  EXPECT_EQ(plan.offload.buffer_count, 6);
  EXPECT_EQ(plan.offload.sub_group_size, 1000);
  EXPECT_EQ(plan.offload.aio.block_size, 8192);
  EXPECT_EQ(plan.offload.aio.queue_depth, 4);
  ASSERT_OK_AND_ASSIGN(plan, Plan(R"({"zero_optimization": {"stage": 3,
                                       "offload_param": {"device": "nvme", "nvme_path": ")" +
                                      tmp + R"(", "buffer_count": 3, "buffer_size": 5000,
                                         "max_in_cpu": 7}}})"));
  EXPECT_TRUE(plan.offload.params);
  EXPECT_FALSE(plan.offload.optimizer);
  EXPECT_EQ(plan.offload.param_nvme_path, tmp);
  EXPECT_EQ(plan.offload.param_buffer_count, 3);
  EXPECT_EQ(plan.offload.param_buffer_size, 5000);
  EXPECT_EQ(plan.offload.max_in_cpu, 7);
}

TEST(DeepSpeedPlanTest, DeepSpeedDerivesTheMissingBatchKey) {
  // Keys left out take the Trainer's values (accelerate fills them).
  ASSERT_OK_AND_ASSIGN(DeepSpeedPlan plan,
                       Plan(R"({"train_batch_size": 8})", {"--per_device_train_batch_size", "4",
                                                           "--gradient_accumulation_steps", "2"}));
  EXPECT_EQ(plan.gradient_accumulation_steps, 2);
  EXPECT_EQ(plan.train_micro_batch_size_per_gpu, 4);
  EXPECT_EQ(plan.stage, 0);
}

struct BadConfig {
  const char* name;
  std::string config;
  std::vector<std::string> flags;
  absl::StatusCode code;
  std::vector<std::string> message;  // each must appear
};

class DeepSpeedPlanRefusalTest : public ::testing::TestWithParam<BadConfig> {};

TEST_P(DeepSpeedPlanRefusalTest, RefusedNamingTheKey) {
  const BadConfig& c = GetParam();
  absl::StatusOr<DeepSpeedPlan> plan = Plan(c.config, c.flags);
  ASSERT_FALSE(plan.ok()) << c.config;
  EXPECT_EQ(plan.status().code(), c.code) << plan.status();
  for (const std::string& m : c.message) {
    EXPECT_THAT(std::string(plan.status().message()), HasSubstr(m));
  }
  EXPECT_THAT(std::string(plan.status().message()), HasSubstr("--deepspeed"));
}

const absl::StatusCode kInvalid = absl::StatusCode::kInvalidArgument;
const absl::StatusCode kNotYet = absl::StatusCode::kUnimplemented;

INSTANTIATE_TEST_SUITE_P(
    Cases, DeepSpeedPlanRefusalTest,
    ::testing::Values(
        BadConfig{"Stage5",
                  R"({"zero_optimization": {"stage": 5}})",
                  {},
                  kInvalid,
                  {"zero_optimization.stage"}},
        BadConfig{"Stage3Bf16",
                  R"({"bf16": {"enabled": "auto"}, "zero_optimization": {"stage": 3}})",
                  {"--bf16"},
                  kNotYet,
                  {"bf16.enabled", "ZeRO stage 3"}},
        BadConfig{"ParamNvmeWithoutPath",
                  R"({"zero_optimization": {"stage": 3, "offload_param": {"device": "nvme"}}})",
                  {},
                  kInvalid,
                  {"zero_optimization.offload_param.nvme_path", "required"}},
        BadConfig{"ParamNvmePathMissing",
                  R"({"zero_optimization": {"stage": 3,
                      "offload_param": {"device": "nvme", "nvme_path": "/no/such/nvme"}}})",
                  {},
                  absl::StatusCode::kNotFound,
                  {"offload_param", "/no/such/nvme"}},
        BadConfig{"ParamBufferSize",
                  R"({"zero_optimization": {"stage": 3,
                      "offload_param": {"device": "nvme", "nvme_path": "/tmp", "buffer_size": 0}}})",
                  {},
                  kInvalid,
                  {"zero_optimization.offload_param.buffer_size: 0"}},
        BadConfig{"TrainBatchInconsistent",
                  R"({"train_batch_size": 10, "train_micro_batch_size_per_gpu": 2,
                      "gradient_accumulation_steps": 1})",
                  {"--per_device_train_batch_size", "2"},
                  kInvalid,
                  {"ds train_batch_size=10", "'auto'"}},
        BadConfig{"TrainBatchVsFlags",
                  R"({"train_batch_size": 32})",
                  {"--per_device_train_batch_size", "8"},
                  kInvalid,
                  {"train_batch_size", "32", "8"}},
        BadConfig{"AutoFindBatchSizeSkipsHfCheckDeepSpeedAsserts",
                  R"({"train_batch_size": 10, "train_micro_batch_size_per_gpu": 2,
                      "gradient_accumulation_steps": 1})",
                  {"--auto_find_batch_size", "--per_device_train_batch_size", "2"},
                  kInvalid,
                  {"train_batch_size", "10 != 2 * 1 * 1"}},
        BadConfig{"AutoWhereNotAllowed",
                  R"({"steps_per_print": "auto"})",
                  {},
                  kInvalid,
                  {"steps_per_print"}},
        BadConfig{"AutoStage",
                  R"({"zero_optimization": {"stage": "auto"}})",
                  {},
                  kInvalid,
                  {"zero_optimization.stage"}},
        BadConfig{"OptimizerSectionAndOptim",
                  R"({"optimizer": {"type": "AdamW", "params": {"lr": "auto"}}})",
                  {"--optim", "sgd"},
                  kInvalid,
                  {"optimizer", "--optim sgd"}},
        BadConfig{"SchedulerSectionAndType",
                  R"({"scheduler": {"type": "WarmupLR"}})",
                  {"--lr_scheduler_type", "cosine"},
                  kInvalid,
                  {"scheduler", "--lr_scheduler_type cosine"}},
        BadConfig{"OffloadOptimizerWithClientOptimizer",
                  R"({"zero_optimization": {"stage": 2,
                      "offload_optimizer": {"device": "cpu"}}})",
                  {},
                  kInvalid,
                  {"zero_force_ds_cpu_optimizer", "--optim adamw_torch",
                   "\"zero_force_ds_cpu_optimizer\": false"}},
        BadConfig{"OffloadParamBelowStage3",
                  R"({"zero_optimization": {"stage": 2,
                      "offload_param": {"device": "cpu"}}})",
                  {},
                  kInvalid,
                  {"zero_optimization.offload_param", "valid only with ZeRO stage 3"}},
        BadConfig{"OffloadOptimizerAtStage0",
                  R"({"zero_optimization": {"stage": 0,
                      "offload_optimizer": {"device": "cpu"}}})",
                  {"--optim", "adamw_torch_fused"},
                  kInvalid,
                  {"zero_optimization.offload_optimizer", "stage 0"}},
        BadConfig{"NvmeBelowStage3",
                  R"({"zero_optimization": {"stage": 2,
                      "offload_optimizer": {"device": "nvme", "nvme_path": "/tmp"}}})",
                  {"--optim", "adamw_torch_fused"},
                  kInvalid,
                  {"zero_optimization.offload_optimizer.device", "requires ZeRO stage 3"}},
        BadConfig{"NvmePathMissing",
                  R"({"zero_optimization": {"stage": 3,
                      "offload_optimizer": {"device": "nvme", "nvme_path": "/no/such/nvme"}}})",
                  {"--optim", "adamw_torch_fused"},
                  absl::StatusCode::kNotFound,
                  {"zero_optimization.offload_optimizer.nvme_path", "/no/such/nvme"}},
        BadConfig{"NvmePathReadOnly",
                  R"({"zero_optimization": {"stage": 3,
                      "offload_optimizer": {"device": "nvme", "nvme_path": "/sys"}}})",
                  {"--optim", "adamw_torch_fused"},
                  absl::StatusCode::kPermissionDenied,
                  {"zero_optimization.offload_optimizer.nvme_path", "/sys"}},
        BadConfig{"AioBlockSize",
                  R"({"aio": {"block_size": 1000}, "zero_optimization": {"stage": 3,
                      "offload_optimizer": {"device": "nvme", "nvme_path": "/tmp"}}})",
                  {"--optim", "adamw_torch_fused"},
                  kInvalid,
                  {"aio.block_size: 1000"}},
        BadConfig{"NvmeWithoutPath",
                  R"({"zero_optimization": {"stage": 3,
                      "offload_optimizer": {"device": "nvme"}}})",
                  {"--optim", "adamw_torch_fused"},
                  kInvalid,
                  {"zero_optimization.offload_optimizer.nvme_path", "required"}},
        BadConfig{"RoundRobinAtStage3",
                  R"({"zero_optimization": {"stage": 3, "round_robin_gradients": true}})",
                  {},
                  kInvalid,
                  {"zero_optimization.round_robin_gradients", "stage 1 and 2"}},
        BadConfig{"BiasCorrectionFalseWithoutOffload",
                  R"({"optimizer": {"type": "AdamW", "params": {"bias_correction": false}},
                      "zero_optimization": {"stage": 2}})",
                  {},
                  kInvalid,
                  {"optimizer.params.bias_correction", "CPU Adam"}},
        BadConfig{"Fp16AndBf16",
                  R"({"fp16": {"enabled": true}, "bf16": {"enabled": true}})",
                  {},
                  kInvalid,
                  {"ds fp16.enabled=True", "ds bf16.enabled=True"}},
        BadConfig{"Bf16WithStage0",
                  R"({"bf16": {"enabled": "auto"}})",
                  {"--bf16"},
                  kNotYet,
                  {"bf16.enabled", "stage 0"}},
        BadConfig{"Bf16FlagWithoutSection",
                  R"({"zero_optimization": {"stage": 2}})",
                  {"--bf16"},
                  kInvalid,
                  {"--bf16", "\"bf16\": {\"enabled\": \"auto\"}"}},
        BadConfig{"CommBf16InFp32",
                  R"({"zero_optimization": {"stage": 2}, "communication_data_type": "bf16"})",
                  {},
                  kNotYet,
                  {"communication_data_type", "fp32"}},
        BadConfig{"MisspelledKey",
                  R"({"zero_optimisation": {"stage": 2}})",
                  {},
                  kNotYet,
                  {"\"zero_optimisation\"", "remove it"}},
        BadConfig{"UnknownZeroKey",
                  R"({"zero_optimization": {"stage": 2, "mics_shard_size": 2}})",
                  {},
                  kNotYet,
                  {"zero_optimization.mics_shard_size"}},
        BadConfig{"MisspelledSchedulerParams",
                  R"({"scheduler": {"type": "WarmupLR", "parmas": {"warmup_num_steps": 5}}})",
                  {},
                  kNotYet,
                  {"\"scheduler.parmas\"", "remove it"}},
        BadConfig{"MisspelledBf16Enabled",
                  R"({"bf16": {"enabeld": true}, "zero_optimization": {"stage": 2}})",
                  {},
                  kNotYet,
                  {"\"bf16.enabeld\""}},
        BadConfig{"UnknownOffloadKey",
                  R"({"zero_optimization": {"stage": 2, "offload_optimizer":
                      {"device": "none", "ratio": 0.5}}})",
                  {},
                  kNotYet,
                  {"\"zero_optimization.offload_optimizer.ratio\""}},
        BadConfig{"PredivideWithReduceScatter",
                  R"({"zero_optimization": {"stage": 2}, "gradient_predivide_factor": 2.0})",
                  {},
                  kNotYet,
                  {"gradient_predivide_factor", "reduce_scatter"}},
        BadConfig{"PrescaleWithStage0",
                  R"({"prescale_gradients": true})",
                  {},
                  kNotYet,
                  {"prescale_gradients", "stage 0"}},
        BadConfig{"CommDataType16",
                  R"({"communication_data_type": "fp16"})",
                  {},
                  kNotYet,
                  {"communication_data_type"}},
        BadConfig{"MaxGradNormInOptimizer",
                  R"({"optimizer": {"type": "AdamW", "params": {"max_grad_norm": 1.0}}})",
                  {},
                  kInvalid,
                  {"optimizer.params.max_grad_norm", "gradient_clipping"}},
        BadConfig{"UntestedOptimizerWithZero",
                  R"({"zero_optimization": {"stage": 1},
                      "optimizer": {"type": "SGD", "params": {"lr": "auto"}}})",
                  {},
                  kInvalid,
                  {"zero_allow_untested_optimizer"}},
        BadConfig{"OneCycle",
                  R"({"scheduler": {"type": "OneCycle"}})",
                  {},
                  kInvalid,
                  {"scheduler.type \"OneCycle\""}},
        BadConfig{"ExplicitClippingVsFlag",
                  R"({"gradient_clipping": 2.0})",
                  {"--max_grad_norm", "1.0"},
                  kInvalid,
                  {"gradient_clipping", "max_grad_norm"}},
        BadConfig{"NegativeBucket",
                  R"({"zero_optimization": {"stage": 2, "reduce_bucket_size": -1}})",
                  {},
                  kInvalid,
                  {"zero_optimization.reduce_bucket_size"}},
        BadConfig{"AmpWithZero", R"({"amp": {"enabled": true}})", {}, kInvalid, {"amp"}},
        BadConfig{
            "NotJson", "{\"zero_optimization\": {\"stage\": 2,}}", {}, kInvalid, {"--deepspeed"}},
        BadConfig{"MissingFile",
                  "/nonexistent/ds_config.json",
                  {},
                  absl::StatusCode::kNotFound,
                  {"/nonexistent/ds_config.json"}}),
    [](const ::testing::TestParamInfo<BadConfig>& info) { return info.param.name; });

}  // namespace
}  // namespace loom::sharding
