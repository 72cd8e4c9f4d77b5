// Loading tests: every example config of transformers' "DeepSpeed Integration" docs
// (args/testdata/ds_*.json),
// DeepSpeed defaults, warnings and error messages. Resolution: deepspeed_config_resolve_test.cc.
#include "args/deepspeed_config.h"

#include <string>
#include <vector>

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::args {
namespace {

using ::loom::base::testing::StatusIs;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using json = nlohmann::ordered_json;

std::string TestData(const std::string& name) { return "args/testdata/" + name; }

absl::StatusOr<DeepSpeedConfig> LoadNoWarnings(const std::string& name) {
  std::vector<std::string> warnings;
  auto c = LoadDeepSpeedConfig(TestData(name), &warnings);
  EXPECT_THAT(warnings, IsEmpty()) << name;
  return c;
}

// ---- Every example config of the doc loads ----

TEST(DeepSpeedConfigLoadTest, SingleGpuZero2) {
  ASSERT_OK_AND_ASSIGN(DeepSpeedConfig c, LoadNoWarnings("ds_single_gpu_zero2.json"));
  const ZeroConfig& z = c.zero_optimization;
  EXPECT_EQ(z.stage, 2);
  ASSERT_TRUE(z.offload_optimizer.has_value());
  EXPECT_EQ(z.offload_optimizer->device, OffloadDevice::kCpu);
  EXPECT_TRUE(z.offload_optimizer->pin_memory);
  EXPECT_EQ(z.offload_optimizer->buffer_count, 4);  // default
  EXPECT_FALSE(z.offload_param.has_value());
  EXPECT_TRUE(z.allgather_partitions);
  EXPECT_EQ(z.allgather_bucket_size, 200000000);
  EXPECT_TRUE(z.reduce_scatter);
  EXPECT_EQ(z.reduce_bucket_size, AutoOr<int64_t>(200000000));
  EXPECT_TRUE(z.OverlapComm());
  EXPECT_TRUE(z.contiguous_gradients);
  EXPECT_TRUE(c.IsOffload());
  EXPECT_FALSE(c.IsZero3());
  EXPECT_FALSE(c.optimizer.has_value());
  EXPECT_FALSE(c.fp16.present);
  EXPECT_EQ(c.source, TestData("ds_single_gpu_zero2.json"));
}

TEST(DeepSpeedConfigLoadTest, Zero2With5e8Buckets) {
  ASSERT_OK_AND_ASSIGN(DeepSpeedConfig c, LoadNoWarnings("ds_zero2_5e8.json"));
  EXPECT_EQ(c.zero_optimization.allgather_bucket_size, 500000000);
  EXPECT_EQ(c.zero_optimization.reduce_bucket_size.value(), 500000000);
}

TEST(DeepSpeedConfigLoadTest, Zero2Auto) {
  ASSERT_OK_AND_ASSIGN(DeepSpeedConfig c, LoadNoWarnings("ds_config_zero2.json"));
  EXPECT_TRUE(c.fp16.present);
  EXPECT_TRUE(c.fp16.enabled.is_auto());
  EXPECT_EQ(c.fp16.loss_scale, 0);
  EXPECT_EQ(c.fp16.loss_scale_window, 1000);
  EXPECT_EQ(c.fp16.initial_scale_power, 16);
  EXPECT_EQ(c.fp16.hysteresis, 2);
  EXPECT_EQ(c.fp16.min_loss_scale, 1);
  ASSERT_TRUE(c.optimizer.has_value());
  EXPECT_EQ(c.optimizer->type, "AdamW");
  EXPECT_TRUE(c.optimizer->lr.is_auto());
  EXPECT_TRUE(c.optimizer->betas.is_auto());
  EXPECT_TRUE(c.optimizer->eps.is_auto());
  EXPECT_TRUE(c.optimizer->weight_decay.is_auto());
  ASSERT_TRUE(c.scheduler.has_value());
  EXPECT_EQ(c.scheduler->type, "WarmupLR");
  EXPECT_TRUE(c.scheduler->warmup_min_lr.is_auto());
  EXPECT_TRUE(c.scheduler->warmup_max_lr.is_auto());
  EXPECT_TRUE(c.scheduler->warmup_num_steps.is_auto());
  EXPECT_FALSE(c.scheduler->total_num_steps.has_value());
  EXPECT_EQ(c.zero_optimization.stage, 2);
  EXPECT_EQ(c.zero_optimization.reduce_bucket_size.value(), 200000000);
  ASSERT_TRUE(c.gradient_accumulation_steps.has_value());
  EXPECT_TRUE(c.gradient_accumulation_steps->is_auto());
  EXPECT_TRUE(c.gradient_clipping.is_auto());
  EXPECT_EQ(c.steps_per_print, 2000);
  EXPECT_TRUE(c.train_batch_size->is_auto());
  EXPECT_TRUE(c.train_micro_batch_size_per_gpu->is_auto());
  EXPECT_FALSE(c.wall_clock_breakdown);
}

TEST(DeepSpeedConfigLoadTest, Zero2Manual) {
  ASSERT_OK_AND_ASSIGN(DeepSpeedConfig c, LoadNoWarnings("ds_zero2_manual.json"));
  EXPECT_EQ(c.fp16.enabled, AutoOr<bool>(true));
  EXPECT_EQ(c.optimizer->lr.value(), 3e-5);
  EXPECT_EQ(c.optimizer->betas.value(), (std::array<double, 2>{0.8, 0.999}));
  EXPECT_EQ(c.optimizer->eps.value(), 1e-8);
  EXPECT_EQ(c.optimizer->weight_decay.value(), 3e-7);
  EXPECT_EQ(c.scheduler->warmup_min_lr.value(), 0.0);
  EXPECT_EQ(c.scheduler->warmup_max_lr.value(), 3e-5);
  EXPECT_EQ(c.scheduler->warmup_num_steps.value(), 500);
  EXPECT_FALSE(c.train_batch_size.has_value());
  EXPECT_FALSE(c.gradient_accumulation_steps.has_value());
  EXPECT_EQ(c.gradient_clipping.value(), 0.0);  // DeepSpeed default: no clipping
}

TEST(DeepSpeedConfigLoadTest, Zero3Auto) {
  ASSERT_OK_AND_ASSIGN(DeepSpeedConfig c, LoadNoWarnings("ds_config_zero3.json"));
  const ZeroConfig& z = c.zero_optimization;
  EXPECT_TRUE(c.IsZero3());
  EXPECT_EQ(z.offload_param->device, OffloadDevice::kCpu);
  EXPECT_TRUE(z.offload_param->pin_memory);
  EXPECT_EQ(z.sub_group_size, 1000000000);
  EXPECT_TRUE(z.reduce_bucket_size.is_auto());
  EXPECT_TRUE(z.stage3_prefetch_bucket_size.is_auto());
  EXPECT_TRUE(z.stage3_param_persistence_threshold.is_auto());
  EXPECT_EQ(z.stage3_max_live_parameters, 1000000000);
  EXPECT_EQ(z.stage3_max_reuse_distance, 1000000000);
  EXPECT_TRUE(z.stage3_gather_16bit_weights_on_model_save);
}

TEST(DeepSpeedConfigLoadTest, Zero3Manual) {
  ASSERT_OK_AND_ASSIGN(DeepSpeedConfig c, LoadNoWarnings("ds_zero3_manual.json"));
  const ZeroConfig& z = c.zero_optimization;
  EXPECT_EQ(z.reduce_bucket_size.value(), 1000000);
  EXPECT_EQ(z.stage3_prefetch_bucket_size.value(), 940000);  // 0.94e6
  EXPECT_EQ(z.stage3_param_persistence_threshold.value(), 10000);
  EXPECT_EQ(c.fp16.enabled.value(), true);
}

TEST(DeepSpeedConfigLoadTest, NvmeWithNestedAio) {
  ASSERT_OK_AND_ASSIGN(DeepSpeedConfig c, LoadNoWarnings("ds_nvme_zero3.json"));
  const ZeroConfig& z = c.zero_optimization;
  EXPECT_EQ(z.offload_optimizer->device, OffloadDevice::kNvme);
  EXPECT_EQ(z.offload_optimizer->nvme_path, "/local_nvme");
  EXPECT_EQ(z.offload_optimizer->buffer_count, 4);
  EXPECT_FALSE(z.offload_optimizer->fast_init);
  EXPECT_EQ(z.offload_param->device, OffloadDevice::kNvme);
  EXPECT_EQ(z.offload_param->buffer_count, 5);
  EXPECT_EQ(z.offload_param->buffer_size, 100000000);
  EXPECT_EQ(z.offload_param->max_in_cpu, 1000000000);
  EXPECT_EQ(c.aio.block_size, 262144);
  EXPECT_EQ(c.aio.queue_depth, 32);
  EXPECT_EQ(c.aio.thread_count, 1);
  EXPECT_FALSE(c.aio.single_submit);
  EXPECT_TRUE(c.aio.overlap_events);
}

// The first config of the doc's "Configuration" section: ZeRO-2 auto without steps_per_print /
// wall_clock_breakdown. The doc prints it with a trailing comma, which strict JSON (Python's
// json, so HF and DeepSpeed) rejects; the testdata copy drops it, the _doc.txt copy keeps it.
TEST(DeepSpeedConfigLoadTest, ConfigurationSectionExample) {
  ASSERT_OK_AND_ASSIGN(DeepSpeedConfig c, LoadNoWarnings("ds_configuration_section.json"));
  EXPECT_TRUE(c.fp16.enabled.is_auto());
  EXPECT_EQ(c.optimizer->type, "AdamW");
  EXPECT_EQ(c.scheduler->type, "WarmupLR");
  EXPECT_EQ(c.zero_optimization.stage, 2);
  EXPECT_EQ(c.zero_optimization.offload_optimizer->device, OffloadDevice::kCpu);
  EXPECT_EQ(c.zero_optimization.allgather_bucket_size, 200000000);
  EXPECT_TRUE(c.gradient_accumulation_steps->is_auto());
  EXPECT_TRUE(c.gradient_clipping.is_auto());
  EXPECT_TRUE(c.train_batch_size->is_auto());
  EXPECT_TRUE(c.train_micro_batch_size_per_gpu->is_auto());
  EXPECT_EQ(c.steps_per_print, 10);  // absent: DeepSpeed's default
  EXPECT_FALSE(c.wall_clock_breakdown);

  EXPECT_THAT(LoadDeepSpeedConfig(TestData("ds_configuration_section_doc.txt")).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("ds_configuration_section_doc.txt: not valid JSON"),
                             HasSubstr("no trailing commas"))));
}

TEST(DeepSpeedConfigLoadTest, Fp32AndStage0And1Examples) {
  ASSERT_OK_AND_ASSIGN(DeepSpeedConfig fp32, LoadNoWarnings("ds_fp32.json"));
  EXPECT_TRUE(fp32.fp16.present);
  EXPECT_EQ(fp32.fp16.enabled, AutoOr<bool>(false));
  EXPECT_EQ(DecideDtype(fp32.raw), DeepSpeedDtype::kFloat32);  // full fp32
  ASSERT_OK_AND_ASSIGN(DeepSpeedConfig zero0, LoadNoWarnings("ds_zero0.json"));
  EXPECT_EQ(zero0.zero_optimization.stage, 0);
  ASSERT_OK_AND_ASSIGN(DeepSpeedConfig zero1, LoadNoWarnings("ds_zero1.json"));
  EXPECT_EQ(zero1.zero_optimization.stage, 1);
  EXPECT_FALSE(zero1.zero_optimization.OverlapComm());  // unset: true only for stage 3
}

// Every documented DeepSpeed key (zero_optimization, offload_*, aio) and the optimizer,
// scheduler, precision and batch keys, each set to a value other than its default, lands in its
// typed field. One test on purpose: one config holding every key, then one expectation per
// field, reads as the key table it checks.
TEST(DeepSpeedConfigLoadTest, EveryKeyIsReadWithItsType) {
  std::vector<std::string> warnings;
  ASSERT_OK_AND_ASSIGN(DeepSpeedConfig c, LoadDeepSpeedConfig(R"({
      "zero_optimization": {
        "stage": 1,
        "offload_optimizer": {"device": "cpu", "nvme_path": "/nvme/o", "pin_memory": true,
                              "buffer_count": 6, "fast_init": true},
        "offload_param": {"device": "nvme", "nvme_path": "/nvme/p", "pin_memory": true,
                          "buffer_count": 7, "buffer_size": 3e7, "max_in_cpu": 2e9},
        "allgather_partitions": false, "allgather_bucket_size": 3e8, "reduce_scatter": false,
        "reduce_bucket_size": 4e8, "overlap_comm": false, "contiguous_gradients": false,
        "round_robin_gradients": true, "sub_group_size": 2e9,
        "stage3_prefetch_bucket_size": 0.94e6, "stage3_param_persistence_threshold": 1e4,
        "stage3_max_live_parameters": 3e9, "stage3_max_reuse_distance": 4e9,
        "stage3_gather_16bit_weights_on_model_save": true},
      "aio": {"block_size": 262144, "queue_depth": 32, "thread_count": 2, "single_submit": true,
              "overlap_events": false},
      "fp16": {"enabled": true, "loss_scale": 128, "loss_scale_window": 500,
               "initial_scale_power": 12, "hysteresis": 3, "consecutive_hysteresis": true,
               "min_loss_scale": 0.5},
      "bf16": {"enabled": true},
      "amp": {"enabled": true, "opt_level": "O2"},
      "optimizer": {"type": "Lamb", "params": {"lr": 0.001, "betas": [0.8, 0.99], "eps": 1e-6,
                                               "weight_decay": 0.01}},
      "scheduler": {"type": "WarmupDecayLR",
                    "params": {"warmup_min_lr": 1e-6, "warmup_max_lr": 0.002,
                               "warmup_num_steps": 100, "total_num_steps": 1000,
                               "last_batch_iteration": 5, "warmup_type": "linear",
                               "warmup_min_ratio": 0.1, "cos_min_ratio": 0.01}},
      "gradient_accumulation_steps": 3, "gradient_clipping": 1.0, "train_batch_size": 12,
      "train_micro_batch_size_per_gpu": 4, "steps_per_print": 2000,
      "wall_clock_breakdown": true, "zero_allow_untested_optimizer": true,
      "zero_force_ds_cpu_optimizer": false, "communication_data_type": "fp32",
      "checkpoint": {"use_node_local_storage": true}})",
                                                              &warnings));
  EXPECT_THAT(warnings, IsEmpty());
  const ZeroConfig& z = c.zero_optimization;
  EXPECT_EQ(z.stage, 1);
  EXPECT_EQ(z.offload_optimizer->device, OffloadDevice::kCpu);
  EXPECT_EQ(z.offload_optimizer->nvme_path, "/nvme/o");
  EXPECT_TRUE(z.offload_optimizer->pin_memory);
  EXPECT_EQ(z.offload_optimizer->buffer_count, 6);
  EXPECT_TRUE(z.offload_optimizer->fast_init);
  EXPECT_EQ(z.offload_param->device, OffloadDevice::kNvme);
  EXPECT_EQ(z.offload_param->nvme_path, "/nvme/p");
  EXPECT_TRUE(z.offload_param->pin_memory);
  EXPECT_EQ(z.offload_param->buffer_count, 7);
  EXPECT_EQ(z.offload_param->buffer_size, 30000000);
  EXPECT_EQ(z.offload_param->max_in_cpu, 2000000000);
  EXPECT_FALSE(z.allgather_partitions);
  EXPECT_EQ(z.allgather_bucket_size, 300000000);
  EXPECT_FALSE(z.reduce_scatter);
  EXPECT_EQ(z.reduce_bucket_size.value(), 400000000);
  EXPECT_EQ(z.overlap_comm, std::optional<bool>(false));
  EXPECT_FALSE(z.contiguous_gradients);
  EXPECT_TRUE(z.round_robin_gradients);
  EXPECT_EQ(z.sub_group_size, 2000000000);
  EXPECT_EQ(z.stage3_prefetch_bucket_size.value(), 940000);
  EXPECT_EQ(z.stage3_param_persistence_threshold.value(), 10000);
  EXPECT_EQ(z.stage3_max_live_parameters, 3000000000);
  EXPECT_EQ(z.stage3_max_reuse_distance, 4000000000);
  EXPECT_TRUE(z.stage3_gather_16bit_weights_on_model_save);
  EXPECT_EQ(c.aio.block_size, 262144);
  EXPECT_EQ(c.aio.queue_depth, 32);
  EXPECT_EQ(c.aio.thread_count, 2);
  EXPECT_TRUE(c.aio.single_submit);
  EXPECT_FALSE(c.aio.overlap_events);
  EXPECT_EQ(c.fp16.enabled.value(), true);
  EXPECT_EQ(c.fp16.loss_scale, 128);
  EXPECT_EQ(c.fp16.loss_scale_window, 500);
  EXPECT_EQ(c.fp16.initial_scale_power, 12);
  EXPECT_EQ(c.fp16.hysteresis, 3);
  EXPECT_TRUE(c.fp16.consecutive_hysteresis);
  EXPECT_EQ(c.fp16.min_loss_scale, 0.5);
  EXPECT_TRUE(c.bf16.present);
  EXPECT_EQ(c.bf16.enabled.value(), true);
  EXPECT_EQ(c.amp.enabled.value(), true);
  EXPECT_EQ(c.amp.opt_level->value(), "O2");
  EXPECT_EQ(c.optimizer->type, "Lamb");
  EXPECT_EQ(c.optimizer->lr.value(), 0.001);
  EXPECT_EQ(c.optimizer->betas.value(), (std::array<double, 2>{0.8, 0.99}));
  EXPECT_EQ(c.optimizer->eps.value(), 1e-6);
  EXPECT_EQ(c.optimizer->weight_decay.value(), 0.01);
  EXPECT_EQ(c.scheduler->type, "WarmupDecayLR");
  EXPECT_EQ(c.scheduler->warmup_min_lr.value(), 1e-6);
  EXPECT_EQ(c.scheduler->warmup_max_lr.value(), 0.002);
  EXPECT_EQ(c.scheduler->warmup_num_steps.value(), 100);
  EXPECT_EQ(c.scheduler->total_num_steps->value(), 1000);
  EXPECT_EQ(c.scheduler->last_batch_iteration, 5);
  EXPECT_EQ(c.scheduler->warmup_type, "linear");
  EXPECT_EQ(c.scheduler->warmup_min_ratio, 0.1);
  EXPECT_EQ(c.scheduler->cos_min_ratio, 0.01);
  EXPECT_EQ(c.gradient_accumulation_steps->value(), 3);
  EXPECT_EQ(c.gradient_clipping.value(), 1.0);
  EXPECT_EQ(c.train_batch_size->value(), 12);
  EXPECT_EQ(c.train_micro_batch_size_per_gpu->value(), 4);
  EXPECT_EQ(c.steps_per_print, 2000);
  EXPECT_TRUE(c.wall_clock_breakdown);
  EXPECT_TRUE(c.zero_allow_untested_optimizer);
  EXPECT_FALSE(c.zero_force_ds_cpu_optimizer);
  EXPECT_EQ(c.communication_data_type, CommDataType::kFp32);
  EXPECT_TRUE(c.checkpoint.use_node_local_storage);
}

TEST(DeepSpeedConfigLoadTest, NewerAioSpellingsAndDeprecatedGatherKey) {
  std::vector<std::string> warnings;
  ASSERT_OK_AND_ASSIGN(DeepSpeedConfig c, LoadDeepSpeedConfig(R"({
      "aio": {"intra_op_parallelism": 4, "use_gds": false},
      "bf16": {"enabled": "auto", "immediate_grad_update": true},
      "zero_optimization": {"stage": 3, "stage3_gather_fp16_weights_on_model_save": true}})",
                                                              &warnings));
  EXPECT_EQ(c.aio.thread_count, 4);  // DeepSpeed renamed thread_count to intra_op_parallelism
  EXPECT_TRUE(c.zero_optimization.stage3_gather_16bit_weights_on_model_save);
  // aio is read after the other sections (its placement is known only then).
  EXPECT_THAT(warnings,
              ElementsAre(HasSubstr("\"bf16.immediate_grad_update\" is ignored"),
                          "unknown DeepSpeed config key \"aio.use_gds\" is ignored (DeepSpeed "
                          "ignores misspelled keys and uses the default)"));
}

// ---- Defaults, inline JSON, aio placement ----

TEST(DeepSpeedConfigLoadTest, AbsentKeysKeepDeepSpeedDefaults) {
  ASSERT_OK_AND_ASSIGN(DeepSpeedConfig c, LoadDeepSpeedConfig("{}"));
  EXPECT_EQ(c.source, "<inline JSON>");
  EXPECT_EQ(c.zero_optimization.stage, 0);
  EXPECT_EQ(c.zero_optimization.allgather_bucket_size, 500000000);
  EXPECT_EQ(c.zero_optimization.reduce_bucket_size.value(), 500000000);
  EXPECT_EQ(c.zero_optimization.stage3_prefetch_bucket_size.value(), 50000000);
  EXPECT_EQ(c.zero_optimization.stage3_param_persistence_threshold.value(), 100000);
  EXPECT_FALSE(c.zero_optimization.OverlapComm());
  EXPECT_FALSE(c.zero_optimization.stage3_gather_16bit_weights_on_model_save);
  EXPECT_EQ(c.aio.block_size, 1048576);
  EXPECT_EQ(c.aio.queue_depth, 8);
  EXPECT_TRUE(c.aio.overlap_events);
  EXPECT_EQ(c.steps_per_print, 10);
  EXPECT_FALSE(c.zero_allow_untested_optimizer);
  EXPECT_TRUE(c.zero_force_ds_cpu_optimizer);
  EXPECT_FALSE(c.communication_data_type.has_value());
  EXPECT_FALSE(c.checkpoint.use_node_local_storage);
  EXPECT_FALSE(c.IsOffload());

  ASSERT_OK_AND_ASSIGN(
      DeepSpeedConfig z3,
      LoadDeepSpeedConfig(
          R"( {"zero_optimization": {"stage": 3}, "communication_data_type": "bfp16",
           "checkpoint": {"use_node_local_storage": true}} )"));
  EXPECT_TRUE(z3.zero_optimization.OverlapComm());  // None -> stage == 3
  EXPECT_EQ(z3.communication_data_type, CommDataType::kBf16);
  EXPECT_TRUE(z3.checkpoint.use_node_local_storage);
}

TEST(DeepSpeedConfigLoadTest, TopLevelAioWinsOverNested) {
  std::vector<std::string> warnings;
  ASSERT_OK_AND_ASSIGN(DeepSpeedConfig c, LoadDeepSpeedConfig(R"({
      "aio": {"block_size": 4096},
      "zero_optimization": {"stage": 3, "aio": {"block_size": 262144, "queue_depth": 32}}})",
                                                              &warnings));
  EXPECT_EQ(c.aio.block_size, 4096);
  EXPECT_EQ(c.aio.queue_depth, 8);  // the nested section is ignored as a whole
  EXPECT_THAT(warnings, ElementsAre(HasSubstr("top-level one is used")));
}

TEST(DeepSpeedConfigLoadTest, RawKeepsTheDocument) {
  ASSERT_OK_AND_ASSIGN(DeepSpeedConfig c, LoadNoWarnings("ds_zero3_manual.json"));
  EXPECT_EQ(c.raw["zero_optimization"]["stage3_prefetch_bucket_size"], 940000.0);
  EXPECT_EQ(c.raw.begin().key(), "fp16");  // key order kept
}

// ---- Warnings ----

TEST(DeepSpeedConfigLoadTest, UnknownKeysAreWarningsNamingTheDottedKey) {
  std::vector<std::string> warnings;
  ASSERT_OK_AND_ASSIGN(DeepSpeedConfig c, LoadDeepSpeedConfig(R"({
      "zero_optimisation": {"stage": 3},
      "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu", "pin_mem": true}},
      "optimizer": {"type": "AdamW", "params": {"lr": 1e-3, "torch_adam": true}}})",
                                                              &warnings));
  EXPECT_EQ(c.zero_optimization.stage, 2);
  EXPECT_THAT(
      warnings,
      ElementsAre(
          "unknown DeepSpeed config key \"zero_optimisation\" is ignored (DeepSpeed ignores "
          "misspelled keys and uses the default); did you mean \"zero_optimization\"?",
          HasSubstr("\"zero_optimization.offload_optimizer.pin_mem\""),
          "DeepSpeed config key \"optimizer.params.torch_adam\" is not interpreted by loom; it is "
          "passed through as given"));
  EXPECT_EQ(c.raw["optimizer"]["params"]["torch_adam"], true);
}

// ---- Errors name the dotted key ----

absl::Status LoadInline(const std::string& text) { return LoadDeepSpeedConfig(text).status(); }

TEST(DeepSpeedConfigLoadTest, WrongTypesNameTheKeyPath) {
  EXPECT_THAT(LoadInline(R"({"zero_optimization": {"stage": "x"}})"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "DeepSpeed config <inline JSON>: zero_optimization.stage: expected an "
                       "integer, got \"x\""));
  EXPECT_THAT(LoadInline(R"({"optimizer": {"params": {"lr": "fast"}}})"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("optimizer.params.lr: expected a number or \"auto\", got "
                                 "\"fast\"")));
  EXPECT_THAT(LoadInline(R"({"steps_per_print": "auto"})"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("steps_per_print: expected an integer, got \"auto\" (\"auto\" is "
                                 "accepted only for the keys HF fills")));
  EXPECT_THAT(LoadInline(R"({"zero_optimization": {"allgather_bucket_size": 2.5e-1}})"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("zero_optimization.allgather_bucket_size: expected an integer, "
                                 "got 0.25")));
  EXPECT_THAT(LoadInline(R"({"optimizer": {"params": {"betas": [0.9]}}})"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("optimizer.params.betas: expected a list of 2 numbers or "
                                 "\"auto\", got [0.9]")));
  EXPECT_THAT(LoadInline(R"({"fp16": {"enabled": 1}})"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("fp16.enabled: expected true or false or \"auto\", got 1")));
  EXPECT_THAT(LoadInline(R"({"zero_optimization": 3})"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("zero_optimization: expected an object ({...}), got 3")));
  EXPECT_THAT(LoadInline(R"({"train_batch_size": 0})"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("train_batch_size: must be a positive integer")));
  EXPECT_THAT(LoadInline(R"({"aio": {"queue_depth": true}})"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("aio.queue_depth: expected an integer, got true")));
  EXPECT_THAT(LoadInline(R"({"zero_optimization": {"aio": {"single_submit": "no"}}})"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("zero_optimization.aio.single_submit: expected true or false")));
}

TEST(DeepSpeedConfigLoadTest, BadEnumValuesNameTheKeyPath) {
  EXPECT_THAT(LoadInline(R"({"zero_optimization": {"stage": 4}})"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("zero_optimization.stage: expected a ZeRO stage 0, 1, 2 or 3, "
                                 "got 4")));
  EXPECT_THAT(LoadInline(R"({"zero_optimization": {"offload_param": {"device": "CPU"}}})"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("zero_optimization.offload_param.device: expected one of "
                                 "\"cpu\", \"nvme\", \"none\", got \"CPU\" (device names are "
                                 "lower-case: \"cpu\")")));
  EXPECT_THAT(LoadInline(R"({"zero_optimization": {"offload_optimizer": {"device": "gpu"}}})"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("zero_optimization.offload_optimizer.device")));
  EXPECT_THAT(LoadInline(R"({"communication_data_type": "fp8"})"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("communication_data_type: expected one of \"fp16\", \"bfp16\"")));
}

TEST(DeepSpeedConfigLoadTest, FileAndSyntaxErrors) {
  EXPECT_THAT(LoadDeepSpeedConfig(TestData("no_such_ds.json")).status(),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("no_such_ds.json")));
  EXPECT_THAT(LoadInline(R"({"fp16": {"enabled": false,}})"),  // the doc's trailing comma
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not valid JSON")));
  EXPECT_THAT(LoadDeepSpeedConfig("").status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("empty path")));
}

// Found by //tests/fuzz:deepspeed_config_fuzzer: a number beyond a double's range is not a
// parse_error but nlohmann's out_of_range, which used to escape LoadDeepSpeedConfig.
TEST(DeepSpeedConfigLoadTest, NumberOutOfRangeIsAnError) {
  const std::string huge =
      R"({"zero_optimization": {"reduce_bucket_size": 2e9223372036854775807}})";
  EXPECT_THAT(LoadInline(huge), StatusIs(absl::StatusCode::kInvalidArgument,
                                         AllOf(HasSubstr("<inline JSON>: not valid JSON"),
                                               HasSubstr("number overflow"))));
  EXPECT_THAT(LoadInline(R"({"gradient_clipping": -1e999})"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not valid JSON")));
}

// ---- Helpers ----

TEST(DeepSpeedConfigHelpersTest, PythonStrAndEqual) {
  EXPECT_EQ(PythonStr(json::parse("5e8")), "500000000.0");
  EXPECT_EQ(PythonStr(json::parse("3e-5")), "3e-05");
  EXPECT_EQ(PythonStr(json::parse("[0.8, 0.999]")), "[0.8, 0.999]");
  EXPECT_EQ(PythonStr(json::parse("true")), "True");
  EXPECT_EQ(PythonStr(json::parse("null")), "None");
  EXPECT_EQ(PythonStr(json::parse("\"O1\"")), "O1");
  EXPECT_EQ(PythonStr(json::parse(R"({"a": ["b", 1]})")), "{'a': ['b', 1]}");
  EXPECT_TRUE(PythonEqual(json::parse("1"), json::parse("1.0")));
  EXPECT_TRUE(PythonEqual(json::parse("true"), json::parse("1")));
  EXPECT_TRUE(PythonEqual(json::parse("[0.9, 1]"), json::parse("[0.9, 1.0]")));
  EXPECT_FALSE(PythonEqual(json::parse("\"1\""), json::parse("1")));
  EXPECT_FALSE(PythonEqual(json::parse("[0.8, 0.999]"), json::parse("[0.9, 0.999]")));
}

TEST(DeepSpeedConfigHelpersTest, HiddenSizeOfModelConfig) {
  EXPECT_EQ(HiddenSizeOf(json::parse(R"({"hidden_size": 768})")), 768);
  EXPECT_EQ(HiddenSizeOf(json::parse(R"({"hidden_sizes": [96, 768, 192]})")), 768);
  EXPECT_EQ(HiddenSizeOf(json::parse(R"({"text_config": {"hidden_size": 512}})")), 512);
  EXPECT_EQ(HiddenSizeOf(json::parse(R"({"text_config": {"hidden_sizes": [8, 16]}})")), 16);
  EXPECT_EQ(HiddenSizeOf(json::parse(R"({"model_type": "t5", "d_model": 512})")), 512);
  EXPECT_EQ(HiddenSizeOf(json::parse(R"({"vocab_size": 10})")), std::nullopt);
}

TEST(DeepSpeedConfigHelpersTest, DecideDtype) {
  EXPECT_EQ(DecideDtype(json::parse(R"({"bf16": {"enabled": true}})")), DeepSpeedDtype::kBfloat16);
  EXPECT_EQ(DecideDtype(json::parse(R"({"fp16": {"enabled": false}})")), DeepSpeedDtype::kFloat32);
  EXPECT_EQ(DecideDtype(json::parse(R"({})")), DeepSpeedDtype::kFloat16);
  EXPECT_EQ(DecideDtype(json::parse(R"({"fp16": {"enabled": true}})")), DeepSpeedDtype::kFloat16);
  EXPECT_STREQ(DeepSpeedDtypeName(DeepSpeedDtype::kBfloat16), "bfloat16");
}

}  // namespace
}  // namespace loom::args
