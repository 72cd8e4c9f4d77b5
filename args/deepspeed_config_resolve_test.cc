// "auto" resolution and mismatch tests (HfTrainerDeepSpeedConfig); the expected values were
// checked against HF's HfTrainerDeepSpeedConfig logic run in Python.
#include <string>
#include <vector>

#include "args/deepspeed_config.h"
#include "args/training_args.h"
#include "args/training_args_testing.h"
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

absl::StatusOr<TrainingArguments> Args(std::vector<std::string> flags,
                                       bool reject_unsupported = false) {
  return testing::ResolveForTest(std::move(flags), nullptr, reject_unsupported);
}

absl::StatusOr<TrainerDeepSpeedConfig> Load(const std::string& name_or_json) {
  const bool inline_json = !name_or_json.empty() && name_or_json[0] == '{';
  auto c = LoadDeepSpeedConfig(inline_json ? name_or_json : TestData(name_or_json));
  if (!c.ok()) return c.status();
  return TrainerDeepSpeedConfig(*std::move(c));
}

// ---- Phase A ----

TEST(DeepSpeedResolveTest, PhaseAFillsAutoFromTrainingArguments) {
  ASSERT_OK_AND_ASSIGN(TrainingArguments args,
                       Args({"--learning_rate", "3e-5", "--per_device_train_batch_size", "4",
                             "--gradient_accumulation_steps", "2"}));
  ASSERT_OK_AND_ASSIGN(TrainerDeepSpeedConfig ds, Load("ds_config_zero2.json"));
  ASSERT_OK(ds.TrainerConfigProcess(args, /*world_size=*/3));
  const DeepSpeedConfig& c = ds.config();
  EXPECT_EQ(c.train_batch_size->value(), 24);  // 3 * 4 * 2
  EXPECT_EQ(c.train_micro_batch_size_per_gpu->value(), 4);
  EXPECT_EQ(c.gradient_accumulation_steps->value(), 2);
  EXPECT_EQ(c.gradient_clipping.value(), 1.0);
  EXPECT_EQ(c.optimizer->lr.value(), 3e-5);
  EXPECT_EQ(c.optimizer->betas.value(), (std::array<double, 2>{0.9, 0.999}));
  EXPECT_EQ(c.optimizer->eps.value(), 1e-8);
  EXPECT_EQ(c.optimizer->weight_decay.value(), 0.0);
  EXPECT_EQ(c.scheduler->warmup_min_lr.value(), 0.0);
  EXPECT_EQ(c.scheduler->warmup_max_lr.value(), 3e-5);
  EXPECT_TRUE(c.scheduler->warmup_num_steps.is_auto());  // Phase B
  EXPECT_EQ(c.fp16.enabled.value(), false);
  EXPECT_FALSE(c.raw.contains("bf16"));  // absent sections are not created
  EXPECT_FALSE(c.raw.contains("checkpoint"));
  EXPECT_THAT(ds.mismatches(), IsEmpty());
  EXPECT_THAT(ds.dtype(), ::loom::base::testing::IsOkAndHolds(DeepSpeedDtype::kFloat32));
  EXPECT_EQ(c.raw["optimizer"]["params"]["betas"], json::parse("[0.9, 0.999]"));
  EXPECT_EQ(c.raw["train_batch_size"], 24);
}

TEST(DeepSpeedResolveTest, PrecisionAndDtype) {
  ASSERT_OK_AND_ASSIGN(TrainingArguments fp16, Args({"--fp16"}));
  ASSERT_OK_AND_ASSIGN(TrainerDeepSpeedConfig a, Load("ds_config_zero2.json"));
  ASSERT_OK(a.TrainerConfigProcess(fp16, 1));
  EXPECT_EQ(a.config().fp16.enabled.value(), true);
  EXPECT_EQ(*a.dtype(), DeepSpeedDtype::kFloat16);

  ASSERT_OK_AND_ASSIGN(TrainingArguments bf16, Args({"--bf16_full_eval"}));
  ASSERT_OK_AND_ASSIGN(TrainerDeepSpeedConfig b,
                       Load(R"({"bf16": {"enabled": "auto"}, "fp16": {"enabled": "auto"}})"));
  ASSERT_OK(b.TrainerConfigProcess(bf16, 1));
  EXPECT_EQ(b.config().bf16.enabled.value(), true);
  EXPECT_EQ(b.config().fp16.enabled.value(), false);
  EXPECT_EQ(*b.dtype(), DeepSpeedDtype::kBfloat16);

  // No fp16 section at all: DeepSpeed's default mode, fp16.
  ASSERT_OK_AND_ASSIGN(TrainerDeepSpeedConfig c, Load("ds_single_gpu_zero2.json"));
  EXPECT_THAT(c.dtype(),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("wasn't called yet")));
  ASSERT_OK(c.TrainerConfigProcess(bf16, 1));
  EXPECT_EQ(*c.dtype(), DeepSpeedDtype::kFloat16);
}

TEST(DeepSpeedResolveTest, AmpSectionFollowsTheBackend) {
  ASSERT_OK_AND_ASSIGN(TrainingArguments amp, Args({"--fp16"}));
  ASSERT_OK_AND_ASSIGN(TrainerDeepSpeedConfig a,
                       Load(R"({"amp": {"enabled": "auto", "opt_level": "auto"}})"));
  ASSERT_OK(a.TrainerConfigProcess(amp, 1));
  EXPECT_EQ(a.config().amp.enabled.value(), false);
  EXPECT_EQ(a.config().amp.opt_level->value(), "O1");

  // apex is rejected by loom's PostInit; HF's mapping is still implemented.
  ASSERT_OK_AND_ASSIGN(TrainingArguments apex, Args({"--fp16", "--half_precision_backend", "apex"},
                                                    /*reject_unsupported=*/false));
  ASSERT_OK_AND_ASSIGN(TrainerDeepSpeedConfig b,
                       Load(R"({"amp": {"enabled": "auto"}, "fp16": {"enabled": "auto"}})"));
  ASSERT_OK(b.TrainerConfigProcess(apex, 1));
  EXPECT_EQ(b.config().amp.enabled.value(), true);
  EXPECT_EQ(b.config().fp16.enabled.value(), false);
}

TEST(DeepSpeedResolveTest, SaveOnEachNodeSetsNodeLocalStorage) {
  ASSERT_OK_AND_ASSIGN(TrainingArguments args, Args({"--save_on_each_node"}));
  ASSERT_OK_AND_ASSIGN(TrainerDeepSpeedConfig ds, Load("ds_single_gpu_zero2.json"));
  ASSERT_OK(ds.TrainerConfigProcess(args, 2));
  EXPECT_TRUE(ds.config().checkpoint.use_node_local_storage);
  EXPECT_EQ(ds.config().raw["checkpoint"], json::parse(R"({"use_node_local_storage": true})"));
}

// Each Phase A key from non-default TrainingArguments, checked in the resolved document (what
// DeepSpeed receives) with the exact JSON value HF writes.
TEST(DeepSpeedResolveTest, PhaseAFillsEveryKeyFromNonDefaultArguments) {
  ASSERT_OK_AND_ASSIGN(
      TrainingArguments args,
      Args({"--learning_rate", "2e-4", "--adam_beta1", "0.85", "--adam_beta2", "0.98",
            "--adam_epsilon", "1e-6", "--weight_decay", "0.01", "--max_grad_norm", "0.5",
            "--per_device_train_batch_size", "4", "--gradient_accumulation_steps", "3", "--bf16",
            "--save_on_each_node"}));
  ASSERT_OK_AND_ASSIGN(TrainerDeepSpeedConfig ds, Load(R"({
      "train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": "auto",
      "train_batch_size": "auto", "gradient_clipping": "auto",
      "optimizer": {"type": "AdamW", "params": {"lr": "auto", "betas": "auto", "eps": "auto",
                                                "weight_decay": "auto"}},
      "scheduler": {"type": "WarmupLR", "params": {"warmup_min_lr": "auto",
                                                   "warmup_max_lr": "auto"}},
      "fp16": {"enabled": "auto"}, "amp": {"enabled": "auto", "opt_level": "auto"},
      "bf16": {"enabled": "auto"}})"));
  ASSERT_OK(ds.TrainerConfigProcess(args, /*world_size=*/2));
  EXPECT_EQ(ds.config().raw, json::parse(R"({
      "train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 3,
      "train_batch_size": 24, "gradient_clipping": 0.5,
      "optimizer": {"type": "AdamW", "params": {"lr": 0.0002, "betas": [0.85, 0.98],
                                                "eps": 1e-6, "weight_decay": 0.01}},
      "scheduler": {"type": "WarmupLR", "params": {"warmup_min_lr": 0, "warmup_max_lr": 0.0002}},
      "fp16": {"enabled": false}, "amp": {"enabled": false, "opt_level": "O1"},
      "bf16": {"enabled": true}, "checkpoint": {"use_node_local_storage": true}})"));
  EXPECT_THAT(ds.mismatches(), IsEmpty());
  EXPECT_EQ(*ds.dtype(), DeepSpeedDtype::kBfloat16);
  // The typed view follows the resolved document.
  EXPECT_EQ(ds.config().train_batch_size->value(), 24);
  EXPECT_EQ(ds.config().optimizer->betas.value(), (std::array<double, 2>{0.85, 0.98}));
}

// The numeric examples of transformers' "DeepSpeed Integration" docs (train_batch_size,
// warmup_num_steps, reduce_bucket_size, stage3_* auto values).
TEST(DeepSpeedResolveTest, SpecExampleVectors) {
  ASSERT_OK_AND_ASSIGN(TrainingArguments args,
                       Args({"--per_device_train_batch_size", "4", "--gradient_accumulation_steps",
                             "3", "--warmup_ratio", "0.1"}));
  ASSERT_OK_AND_ASSIGN(TrainerDeepSpeedConfig ds, Load(R"({
      "train_batch_size": "auto",
      "scheduler": {"type": "WarmupDecayLR", "params": {"warmup_num_steps": "auto",
                                                        "total_num_steps": "auto"}},
      "zero_optimization": {"stage": 3, "reduce_bucket_size": "auto",
                            "stage3_prefetch_bucket_size": "auto",
                            "stage3_param_persistence_threshold": "auto"}})"));
  ASSERT_OK(ds.TrainerConfigProcess(args, /*world_size=*/2));
  EXPECT_EQ(ds.config().raw["train_batch_size"], 24);  // 2 * 4 * 3
  ASSERT_OK(ds.TrainerConfigFinalize(args, /*hidden_size=*/1024, /*num_training_steps=*/1005));
  const json& raw = ds.config().raw;
  EXPECT_EQ(raw["scheduler"]["params"]["warmup_num_steps"], 101);  // ceil(0.1 * 1005)
  EXPECT_EQ(raw["scheduler"]["params"]["total_num_steps"], 1005);
  EXPECT_EQ(raw["zero_optimization"]["reduce_bucket_size"], 1048576);          // 1024 * 1024
  EXPECT_EQ(raw["zero_optimization"]["stage3_prefetch_bucket_size"], 943718);  // int(943718.4)
  EXPECT_EQ(raw["zero_optimization"]["stage3_param_persistence_threshold"], 10240);  // 10 * 1024
}

// HiddenSizeOf's max(hidden_sizes) feeds Phase B; ZeRO-2 fills only reduce_bucket_size.
TEST(DeepSpeedResolveTest, HiddenSizesAndZero2ReduceBucket) {
  ASSERT_OK_AND_ASSIGN(TrainingArguments args, Args({}));
  const std::optional<int64_t> hidden =
      HiddenSizeOf(json::parse(R"({"hidden_sizes": [64, 512, 256]})"));
  ASSERT_OK_AND_ASSIGN(TrainerDeepSpeedConfig z3, Load("ds_config_zero3.json"));
  ASSERT_OK(z3.TrainerConfigProcess(args, 1));
  ASSERT_OK(z3.TrainerConfigFinalize(args, hidden, 100));
  EXPECT_EQ(z3.config().zero_optimization.reduce_bucket_size.value(), 262144);           // 512^2
  EXPECT_EQ(z3.config().zero_optimization.stage3_prefetch_bucket_size.value(), 235929);  // 0.9*
  EXPECT_EQ(z3.config().zero_optimization.stage3_param_persistence_threshold.value(), 5120);

  ASSERT_OK_AND_ASSIGN(
      TrainerDeepSpeedConfig z2,
      Load(R"({"zero_optimization": {"stage": 2, "reduce_bucket_size": "auto"}})"));
  ASSERT_OK(z2.TrainerConfigProcess(args, 1));
  ASSERT_OK(z2.TrainerConfigFinalize(args, 768, 100));
  EXPECT_EQ(z2.config().raw["zero_optimization"], json::parse(R"({"stage": 2,
                                                                 "reduce_bucket_size": 589824})"));
}

// HF compares only explicit values: a JSON null is neither filled nor a mismatch.
TEST(DeepSpeedResolveTest, NullValuesAreNeitherFilledNorCompared) {
  ASSERT_OK_AND_ASSIGN(TrainingArguments args, Args({}));
  ASSERT_OK_AND_ASSIGN(TrainerDeepSpeedConfig ds, Load(R"({"gradient_clipping": null,
      "optimizer": {"params": {"lr": null, "eps": "auto"}}})"));
  ASSERT_OK(ds.TrainerConfigProcess(args, 1));
  ASSERT_OK(ds.TrainerConfigFinalize(args, std::nullopt, 10));
  EXPECT_TRUE(ds.config().raw["gradient_clipping"].is_null());
  EXPECT_TRUE(ds.config().raw["optimizer"]["params"]["lr"].is_null());
  EXPECT_EQ(ds.config().raw["optimizer"]["params"]["eps"], 1e-8);
}

// --deepspeed as inline JSON text goes through HF's _convert_str_dict (args/field_value.h)
// before it is read: "3" -> 3, "True" -> true; "auto" stays.
TEST(DeepSpeedResolveTest, InlineJsonStringsAreConvertedLikeHf) {
  ASSERT_OK_AND_ASSIGN(
      TrainingArguments args,
      Args({"--fp16", "--deepspeed", R"({"zero_optimization": {"stage": "3"}, "fp16": {"enabled": "True"},
                              "train_micro_batch_size_per_gpu": "auto",
                              "gradient_clipping": "1.0"})"}));
  ASSERT_OK_AND_ASSIGN(DeepSpeedConfig c, LoadDeepSpeedConfig(args.deepspeed()));
  EXPECT_EQ(c.zero_optimization.stage, 3);
  EXPECT_EQ(c.fp16.enabled, AutoOr<bool>(true));
  EXPECT_TRUE(c.train_micro_batch_size_per_gpu->is_auto());
  EXPECT_EQ(c.gradient_clipping, AutoOr<double>(1.0));
}

// ---- Phase B ----

TEST(DeepSpeedResolveTest, PhaseBFillsHiddenSizeAndStepKeys) {
  ASSERT_OK_AND_ASSIGN(TrainingArguments args, Args({"--warmup_ratio", "0.1"}));
  ASSERT_OK_AND_ASSIGN(TrainerDeepSpeedConfig ds, Load("ds_config_zero3.json"));
  ASSERT_OK(ds.TrainerConfigProcess(args, 1));
  ASSERT_OK(ds.TrainerConfigFinalize(args, /*hidden_size=*/1024, /*num_training_steps=*/1000));
  const DeepSpeedConfig& c = ds.config();
  EXPECT_EQ(c.zero_optimization.reduce_bucket_size.value(), 1048576);
  EXPECT_EQ(c.zero_optimization.stage3_prefetch_bucket_size.value(), 943718);
  EXPECT_EQ(c.zero_optimization.stage3_param_persistence_threshold.value(), 10240);
  EXPECT_EQ(c.scheduler->warmup_num_steps.value(), 100);   // ceil(0.1 * 1000)
  EXPECT_FALSE(c.scheduler->total_num_steps.has_value());  // absent in WarmupLR: not added
  EXPECT_FALSE(c.raw["scheduler"]["params"].contains("total_num_steps"));
  EXPECT_EQ(ds.ToJsonString().find("\"auto\""), std::string::npos);
  // The written config reads back with the same values.
  ASSERT_OK_AND_ASSIGN(DeepSpeedConfig back, LoadDeepSpeedConfig(ds.ToJsonString()));
  EXPECT_EQ(back.zero_optimization.stage3_prefetch_bucket_size.value(), 943718);
  EXPECT_EQ(back.train_batch_size->value(), 8);
}

TEST(DeepSpeedResolveTest, PhaseBTotalStepsAndWarmupSteps) {
  ASSERT_OK_AND_ASSIGN(TrainingArguments args, Args({"--warmup_steps", "30"}));
  ASSERT_OK_AND_ASSIGN(TrainerDeepSpeedConfig ds, Load(R"({"scheduler": {"type": "WarmupDecayLR",
      "params": {"last_batch_iteration": -1, "total_num_steps": "auto", "warmup_min_lr": "auto",
                 "warmup_max_lr": "auto", "warmup_num_steps": "auto"}}})"));
  ASSERT_OK(ds.TrainerConfigProcess(args, 1));
  ASSERT_OK(ds.TrainerConfigFinalize(args, std::nullopt, 1000));
  EXPECT_EQ(ds.config().scheduler->total_num_steps->value(), 1000);
  EXPECT_EQ(ds.config().scheduler->warmup_num_steps.value(), 30);
  EXPECT_EQ(ds.config().scheduler->warmup_max_lr.value(), 5e-5);
}

TEST(DeepSpeedResolveTest, Zero2LeavesStage3KeysAndExplicitBucketsAlone) {
  ASSERT_OK_AND_ASSIGN(TrainingArguments args, Args({}));
  ASSERT_OK_AND_ASSIGN(TrainerDeepSpeedConfig ds,
                       Load(R"({"zero_optimization": {"stage": 2, "reduce_bucket_size": 2e8,
                               "stage3_prefetch_bucket_size": "auto"}})"));
  ASSERT_OK(ds.TrainerConfigProcess(args, 1));
  ASSERT_OK(ds.TrainerConfigFinalize(args, 1024, 10));
  EXPECT_EQ(ds.config().zero_optimization.reduce_bucket_size.value(), 200000000);    // fill only
  EXPECT_TRUE(ds.config().zero_optimization.stage3_prefetch_bucket_size.is_auto());  // not ZeRO-3
}

TEST(DeepSpeedResolveTest, UnknownHiddenSizeListsTheAutoKeys) {
  ASSERT_OK_AND_ASSIGN(TrainingArguments args, Args({}));
  ASSERT_OK_AND_ASSIGN(TrainerDeepSpeedConfig ds, Load("ds_nvme_zero3.json"));
  ASSERT_OK(ds.TrainerConfigProcess(args, 1));
  EXPECT_THAT(
      ds.TrainerConfigFinalize(args, std::nullopt, 100),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "The model's config file has neither `hidden_size` nor `hidden_sizes` entry, "
               "therefore it's not possible to automatically fill out the following `auto` "
               "entries in the DeepSpeed config file: ['zero_optimization.reduce_bucket_size', "
               "'zero_optimization.stage3_prefetch_bucket_size', "
               "'zero_optimization.stage3_param_persistence_threshold']. You can fix that by "
               "replacing `auto` values for these keys with an integer value of your choice."));
}

// Found with //tests/fuzz:deepspeed_config_fuzzer's harness: a config.json hidden size whose
// square does not fit in 64 bits overflowed h * h (undefined behaviour) instead of an error.
TEST(DeepSpeedResolveTest, HiddenSizeOutOfRangeIsAnError) {
  ASSERT_OK_AND_ASSIGN(TrainingArguments args, Args({}));
  for (int64_t hidden : {int64_t{4000000000}, int64_t{0}, int64_t{-8}}) {
    ASSERT_OK_AND_ASSIGN(TrainerDeepSpeedConfig ds, Load("ds_config_zero3.json"));
    ASSERT_OK(ds.TrainerConfigProcess(args, 1));
    EXPECT_THAT(ds.TrainerConfigFinalize(args, hidden, 100),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         AllOf(HasSubstr("hidden size " + std::to_string(hidden) + " "),
                               HasSubstr("between 1 and 3037000499"),
                               HasSubstr("'zero_optimization.reduce_bucket_size'"))))
        << hidden;
  }
  ASSERT_OK_AND_ASSIGN(TrainerDeepSpeedConfig ds, Load("ds_config_zero3.json"));
  ASSERT_OK(ds.TrainerConfigProcess(args, 1));
  ASSERT_OK(ds.TrainerConfigFinalize(args, 3037000499, 100));  // the largest that fits
  EXPECT_EQ(ds.config().zero_optimization.reduce_bucket_size.value(), 9223372030926249001);
}

// ---- Mismatches (trainer_config_finalize's ValueError) ----

TEST(DeepSpeedResolveTest, ManualConfigConflictsListEveryKey) {
  ASSERT_OK_AND_ASSIGN(TrainingArguments args, Args({}));  // TrainingArguments defaults
  ASSERT_OK_AND_ASSIGN(TrainerDeepSpeedConfig ds, Load("ds_zero2_manual.json"));
  ASSERT_OK(ds.TrainerConfigProcess(args, 1));  // Phase A collects, does not fail
  EXPECT_EQ(ds.mismatches().size(), 5);
  EXPECT_THAT(
      ds.TrainerConfigFinalize(args, 1024, 1000),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "Please correct the following DeepSpeed config values that mismatch "
               "TrainingArguments values:\n"
               "- ds optimizer.params.lr=3e-05 vs hf learning_rate=5e-05\n"
               "- ds optimizer.params.betas=[0.8, 0.999] vs hf adam_beta1+adam_beta2=[0.9, 0.999]\n"
               "- ds optimizer.params.weight_decay=3e-07 vs hf weight_decay=0.0\n"
               "- ds scheduler.params.warmup_max_lr=3e-05 vs hf learning_rate=5e-05\n"
               "- ds fp16.enabled=True vs hf fp16|fp16_full_eval+fp16_backend(amp)=False\n"
               "- ds scheduler.params.warmup_num_steps=500 vs hf warmup_steps=0\n"
               "The easiest method is to set these DeepSpeed config values to 'auto'."
               // loom's advice for the documents' fp16 configs, after HF's message.
               "\nfp16 (and --fp16) trains on CUDA only. On a CPU, replace the config's \"fp16\" section "
               "with \"bf16\": {\"enabled\": \"auto\"} and pass --bf16 (ZeRO stages 0-2), or set "
               "\"fp16\": {\"enabled\": false} to train in fp32 (any stage)."));
  EXPECT_THAT(ds.CheckMismatches(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("warmup_num_steps=500")));
}

// Every key HF checks for mismatches, each explicit and different from
// TrainingArguments: one line per key, in HF's order, Python-formatted values. The keys HF only
// fills (warmup_min_lr, the hidden-size keys) are not listed even when they differ.
TEST(DeepSpeedResolveTest, EveryConflictIsListed) {
  ASSERT_OK_AND_ASSIGN(TrainingArguments args, Args({"--per_device_train_batch_size", "8"}));
  ASSERT_OK_AND_ASSIGN(TrainerDeepSpeedConfig ds, Load(R"({
      "train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 4,
      "train_batch_size": 64, "gradient_clipping": 0.5,
      "optimizer": {"type": "AdamW", "params": {"lr": 0.001, "betas": [0.8, 0.99], "eps": 1e-6,
                                                "weight_decay": 0.01}},
      "scheduler": {"type": "WarmupDecayLR",
                    "params": {"warmup_min_lr": 1e-6, "warmup_max_lr": 0.001,
                               "warmup_num_steps": 500, "total_num_steps": 10}},
      "fp16": {"enabled": true}, "amp": {"enabled": true, "opt_level": "O2"},
      "bf16": {"enabled": true},
      "zero_optimization": {"stage": 3, "reduce_bucket_size": 7,
                            "stage3_prefetch_bucket_size": 7,
                            "stage3_param_persistence_threshold": 7}})"));
  ASSERT_OK(ds.TrainerConfigProcess(args, 1));
  EXPECT_EQ(ds.mismatches().size(), 13u);  // Phase A's share
  EXPECT_THAT(
      ds.TrainerConfigFinalize(args, 1024, 1000),
      StatusIs(
          absl::StatusCode::kInvalidArgument,
          "Please correct the following DeepSpeed config values that mismatch "
          "TrainingArguments values:\n"
          "- ds train_micro_batch_size_per_gpu=2 vs hf per_device_train_batch_size=8\n"
          "- ds gradient_accumulation_steps=4 vs hf gradient_accumulation_steps=1\n"
          "- ds train_batch_size=64 vs hf train_batch_size (calculated)=8\n"
          "- ds gradient_clipping=0.5 vs hf max_grad_norm=1.0\n"
          "- ds optimizer.params.lr=0.001 vs hf learning_rate=5e-05\n"
          "- ds optimizer.params.betas=[0.8, 0.99] vs hf adam_beta1+adam_beta2=[0.9, 0.999]\n"
          "- ds optimizer.params.eps=1e-06 vs hf adam_epsilon=1e-08\n"
          "- ds optimizer.params.weight_decay=0.01 vs hf weight_decay=0.0\n"
          "- ds scheduler.params.warmup_max_lr=0.001 vs hf learning_rate=5e-05\n"
          "- ds fp16.enabled=True vs hf fp16|fp16_full_eval+fp16_backend(amp)=False\n"
          "- ds amp.enabled=True vs hf fp16+fp16_backend(apex)=False\n"
          "- ds amp.opt_level=O2 vs hf fp16_opt_level=O1\n"
          "- ds bf16.enabled=True vs hf bf16|bf16_full_eval=False\n"
          "- ds scheduler.params.total_num_steps=10 vs hf num_training_steps (calculated)=1000\n"
          "- ds scheduler.params.warmup_num_steps=500 vs hf warmup_steps=0\n"
          "The easiest method is to set these DeepSpeed config values to 'auto'."
          "\nfp16 (and --fp16) trains on CUDA only. On a CPU, replace the config's \"fp16\" section "
          "with \"bf16\": {\"enabled\": \"auto\"} and pass --bf16 (ZeRO stages 0-2), or set "
          "\"fp16\": {\"enabled\": false} to train in fp32 (any stage)."));
}

TEST(DeepSpeedResolveTest, MatchingManualConfigPasses) {
  ASSERT_OK_AND_ASSIGN(TrainingArguments args,
                       Args({"--learning_rate", "3e-5", "--adam_beta1", "0.8", "--weight_decay",
                             "3e-7", "--fp16", "--warmup_steps", "500"}));
  ASSERT_OK_AND_ASSIGN(TrainerDeepSpeedConfig ds, Load("ds_zero3_manual.json"));
  ASSERT_OK(ds.TrainerConfigProcess(args, 1));
  ASSERT_OK(ds.TrainerConfigFinalize(args, std::nullopt, 1000));  // no "auto" hidden keys
  EXPECT_EQ(ds.config().zero_optimization.stage3_prefetch_bucket_size.value(), 940000);
}

TEST(DeepSpeedResolveTest, BatchSizeMismatchAndAutoFindBatchSize) {
  const std::string cfg = R"({"train_batch_size": 12, "train_micro_batch_size_per_gpu": 4,
                              "gradient_accumulation_steps": 3, "gradient_clipping": 1})";
  ASSERT_OK_AND_ASSIGN(TrainingArguments args, Args({"--per_device_train_batch_size", "4"}));
  ASSERT_OK_AND_ASSIGN(TrainerDeepSpeedConfig ds, Load(cfg));
  ASSERT_OK(ds.TrainerConfigProcess(args, 2));
  EXPECT_THAT(ds.mismatches(),
              ElementsAre("- ds gradient_accumulation_steps=3 vs hf gradient_accumulation_steps=1",
                          "- ds train_batch_size=12 vs hf train_batch_size (calculated)=8"));

  ASSERT_OK_AND_ASSIGN(TrainingArguments afbs,
                       Args({"--per_device_train_batch_size", "2", "--gradient_accumulation_steps",
                             "3", "--auto_find_batch_size"}));
  ASSERT_OK_AND_ASSIGN(TrainerDeepSpeedConfig ds2, Load(cfg));
  ASSERT_OK(ds2.TrainerConfigProcess(afbs, 1));
  EXPECT_THAT(ds2.mismatches(), IsEmpty());  // both batch keys are skipped
  EXPECT_OK(ds2.CheckMismatches());
}

TEST(DeepSpeedResolveTest, AdafactorWithDeepSpeedOptimizerIsAnError) {
  ASSERT_OK_AND_ASSIGN(TrainingArguments args, Args({"--adafactor"}));
  ASSERT_OK_AND_ASSIGN(TrainerDeepSpeedConfig ds, Load("ds_config_zero2.json"));
  ASSERT_OK(ds.TrainerConfigProcess(args, 1));
  EXPECT_THAT(ds.TrainerConfigFinalize(args, 1024, 100),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "--adafactor was passed, but also found `optimizer` configured in the "
                       "DeepSpeed config. Only one optimizer can be configured."));
  ASSERT_OK_AND_ASSIGN(TrainingArguments optim, Args({"--optim", "adafactor"}));
  EXPECT_THAT(ds.CheckAdafactor(optim),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("Only one optimizer")));
  ASSERT_OK_AND_ASSIGN(TrainerDeepSpeedConfig no_opt, Load("ds_single_gpu_zero2.json"));
  EXPECT_OK(no_opt.CheckAdafactor(args));
}

TEST(DeepSpeedResolveTest, RejectsBadWorldSize) {
  ASSERT_OK_AND_ASSIGN(TrainingArguments args, Args({}));
  ASSERT_OK_AND_ASSIGN(TrainerDeepSpeedConfig ds, Load("{}"));
  EXPECT_THAT(ds.TrainerConfigProcess(args, 0),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("world_size")));
}

}  // namespace
}  // namespace loom::args
