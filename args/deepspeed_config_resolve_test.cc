// "auto" resolution and mismatch tests (spec/deepspeed.md §2.2-§2.3); the expected values were
// checked against HF's HfTrainerDeepSpeedConfig logic run in Python.
#include <string>
#include <vector>

#include "args/deepspeed_config.h"
#include "args/parser.h"
#include "args/training_args.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::args {
namespace {

using ::loom::base::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using json = nlohmann::ordered_json;

std::string TestData(const std::string& name) { return "args/testdata/" + name; }

absl::StatusOr<TrainingArguments> Args(std::vector<std::string> flags,
                                       bool reject_unsupported = true) {
  TrainingArguments a;
  ArgParser p({.program = "test"});
  p.AddGroup("TrainingArguments", &a);
  flags.insert(flags.begin(), {"--output_dir", "out"});
  absl::Status s = p.Parse(flags);
  if (!s.ok()) return s;
  PostInitOptions options;
  options.now = [] { return absl::FromUnixSeconds(1700000000); };
  options.hostname = "host";
  options.reject_unsupported = reject_unsupported;
  auto w = PostInit(&a, options);
  if (!w.ok()) return w.status();
  return a;
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

// ---- Mismatches (spec §2.3) ----

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
               "The easiest method is to set these DeepSpeed config values to 'auto'."));
  EXPECT_THAT(ds.CheckMismatches(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("warmup_num_steps=500")));
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
