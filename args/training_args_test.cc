#include "args/training_args.h"

#include <string>
#include <vector>

#include "args/parser.h"
#include "base/file_util.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace loom::args {
namespace {

using ::loom::base::testing::StatusIs;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using json = nlohmann::ordered_json;

PostInitOptions Fixed() {
  PostInitOptions o;
  o.now = [] { return absl::FromUnixSeconds(1700000000); };
  o.hostname = "host";
  return o;
}

// HF's own derivations of fields loom refuses (hub, FSDP): args/field_support_test checks the
// refusals.
PostInitOptions HfOnly() {
  PostInitOptions o = Fixed();
  o.reject_unsupported = false;
  return o;
}

absl::StatusOr<TrainingArguments> Resolve(std::vector<std::string> args,
                                          PostInitOptions options = Fixed(),
                                          std::vector<std::string>* warnings = nullptr) {
  TrainingArguments a;
  ArgParser p({.program = "test"});
  p.AddGroup("TrainingArguments", &a);
  args.insert(args.begin(), {"--output_dir", "out"});
  absl::Status s = p.Parse(args);
  if (!s.ok()) return s;
  auto w = PostInit(&a, options);
  if (!w.ok()) return w.status();
  if (warnings) *warnings = *w;
  return a;
}

#define EXPECT_INVALID(args, flag_text)                                      \
  EXPECT_THAT(Resolve args, StatusIs(absl::StatusCode::kInvalidArgument, \
                                     HasSubstr(flag_text)))

// ---- Derived defaults (transformers 4.41 TrainingArguments.__post_init__) ----

TEST(DerivedDefaultsTest, DoEvalFollowsEvalStrategy) {
  ASSERT_OK_AND_ASSIGN(auto a, Resolve({"--eval_strategy", "epoch"}));
  EXPECT_TRUE(a.do_eval());
  ASSERT_OK_AND_ASSIGN(auto b, Resolve({}));
  EXPECT_FALSE(b.do_eval());
}

TEST(DerivedDefaultsTest, EvalStepsDefaultsToLoggingSteps) {
  ASSERT_OK_AND_ASSIGN(auto a, Resolve({"--eval_strategy", "steps", "--logging_steps", "25"}));
  EXPECT_EQ(a.eval_steps(), 25);
  ASSERT_OK_AND_ASSIGN(auto b, Resolve({"--eval_strategy", "steps", "--eval_steps", "10"}));
  EXPECT_EQ(b.eval_steps(), 10);
  ASSERT_OK_AND_ASSIGN(auto c, Resolve({}));
  EXPECT_FALSE(c.has_eval_steps());
}

TEST(DerivedDefaultsTest, LoggingDirAndRunName) {
  ASSERT_OK_AND_ASSIGN(auto a, Resolve({}));
  // 1700000000 = 2023-11-14 22:13:20 UTC, shown in local time like datetime.now().
  std::string stamp = absl::FormatTime("%b%d_%H-%M-%S", absl::FromUnixSeconds(1700000000),
                                       absl::LocalTimeZone());
  EXPECT_EQ(a.logging_dir(), "out/runs/" + stamp + "_host");
  EXPECT_EQ(a.run_name(), "out");
  ASSERT_OK_AND_ASSIGN(auto b, Resolve({"--logging_dir", "tb", "--run_name", "r"}));
  EXPECT_EQ(b.logging_dir(), "tb");
  EXPECT_EQ(b.run_name(), "r");
}

TEST(DerivedDefaultsTest, GreaterIsBetterRule) {
  ASSERT_OK_AND_ASSIGN(auto a, Resolve({"--metric_for_best_model", "accuracy"}));
  EXPECT_TRUE(a.greater_is_better());
  for (const char* m : {"loss", "eval_loss"}) {
    ASSERT_OK_AND_ASSIGN(auto b, Resolve({"--metric_for_best_model", m}));
    EXPECT_FALSE(b.greater_is_better()) << m;
  }
  ASSERT_OK_AND_ASSIGN(auto c, Resolve({}));
  EXPECT_FALSE(c.has_greater_is_better());
  EXPECT_FALSE(c.has_metric_for_best_model());
  ASSERT_OK_AND_ASSIGN(auto d, Resolve({"--metric_for_best_model", "accuracy",
                                        "--greater_is_better", "false"}));
  EXPECT_FALSE(d.greater_is_better());
}

TEST(DerivedDefaultsTest, MetricForBestModelDefaultsToLoss) {
  ASSERT_OK_AND_ASSIGN(auto a, Resolve({"--load_best_model_at_end", "--eval_strategy", "epoch",
                                        "--save_strategy", "epoch"}));
  EXPECT_EQ(a.metric_for_best_model(), "loss");
  EXPECT_FALSE(a.greater_is_better());
  ASSERT_OK_AND_ASSIGN(auto b, Resolve({"--lr_scheduler_type", "reduce_lr_on_plateau",
                                        "--eval_strategy", "epoch"}));
  EXPECT_EQ(b.metric_for_best_model(), "loss");
}

TEST(DerivedDefaultsTest, StepsAboveOneBecomeIntegersRatiosStay) {
  ASSERT_OK_AND_ASSIGN(auto a, Resolve({"--logging_steps", "0.1", "--save_steps", "0.25",
                                        "--eval_strategy", "steps", "--eval_steps", "0.05"}));
  EXPECT_DOUBLE_EQ(a.logging_steps(), 0.1);
  EXPECT_DOUBLE_EQ(a.save_steps(), 0.25);
  EXPECT_DOUBLE_EQ(a.eval_steps(), 0.05);
}

TEST(DerivedDefaultsTest, TorchCompileImplications) {
  PostInitOptions o = Fixed();
  o.reject_unsupported = false;
  ASSERT_OK_AND_ASSIGN(auto a, Resolve({"--torch_compile_backend", "eager"}, o));
  EXPECT_TRUE(a.torch_compile());
  ASSERT_OK_AND_ASSIGN(auto b, Resolve({"--torch_compile_mode", "max-autotune"}, o));
  EXPECT_TRUE(b.torch_compile());
  EXPECT_EQ(b.torch_compile_backend(), "inductor");
  // loom rejects it, naming the flag the user gave.
  EXPECT_INVALID(({"--torch_compile_backend", "eager"}),
                 "--torch_compile_backend is not supported by loom: torch.compile compiles Python");
}

TEST(DerivedDefaultsTest, ReportTo) {
  ASSERT_OK_AND_ASSIGN(auto a, Resolve({}));
  EXPECT_THAT(a.report_to(), ElementsAre("tensorboard"));
  ASSERT_OK_AND_ASSIGN(auto b, Resolve({"--report_to", "all"}));
  EXPECT_THAT(b.report_to(), ElementsAre("tensorboard"));
  ASSERT_OK_AND_ASSIGN(auto c, Resolve({"--report_to", "none"}));
  EXPECT_THAT(c.report_to(), ElementsAre("none"));
  EXPECT_INVALID(({"--report_to", "tensorbored"}), "--report_to: unknown integration");
}

TEST(TrainingArgumentsTest, HubPrivateRepoNeedsAHubRepoId) {
  EXPECT_THAT(Resolve({"--push_to_hub", "--hub_private_repo", "--hub_model_id",
                       "file:///srv/m.git"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--hub_private_repo: --hub_model_id file:///srv/m.git")));
  EXPECT_THAT(Resolve({"--push_to_hub", "--hub_private_repo", "--hub_model_id", "/srv/m.git"}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--hub_private_repo")));
  EXPECT_OK(Resolve({"--push_to_hub", "--hub_private_repo", "--hub_model_id", "me/m"}).status());
  EXPECT_OK(Resolve({"--push_to_hub", "--hub_private_repo"}).status());  // output_dir's name
}

TEST(DerivedDefaultsTest, DeprecatedAliasesMapWithAWarning) {
  std::vector<std::string> w;
  ASSERT_OK_AND_ASSIGN(auto a, Resolve({"--evaluation_strategy", "epoch", "--no_cuda",
                                        "--adafactor", "--push_to_hub_token", "tok",
                                        "--push_to_hub_model_id", "m",
                                        "--push_to_hub_organization", "org",
                                        "--fp16_backend", "cpu_amp"},
                                       HfOnly(), &w));
  EXPECT_EQ(a.eval_strategy(), "epoch");
  EXPECT_TRUE(a.do_eval());
  EXPECT_TRUE(a.use_cpu());
  EXPECT_FALSE(a.dataloader_pin_memory());
  EXPECT_EQ(a.optim(), "adafactor");
  EXPECT_EQ(a.hub_token(), "tok");
  EXPECT_EQ(a.hub_model_id(), "org/m");
  EXPECT_EQ(a.half_precision_backend(), "cpu_amp");
  ASSERT_EQ(w.size(), 6u);
  EXPECT_THAT(w[0], HasSubstr("`evaluation_strategy` is deprecated"));
  EXPECT_THAT(w[1], HasSubstr("`--no_cuda` is deprecated"));
  ASSERT_OK_AND_ASSIGN(auto b, Resolve({"--push_to_hub_organization", "org"}, HfOnly()));
  EXPECT_EQ(b.hub_model_id(), "org/out");
  std::string warn;
  ASSERT_OK_AND_ASSIGN(auto c, Resolve({"--per_gpu_train_batch_size", "3"}));
  EXPECT_EQ(TrainBatchSizePerDevice(c, &warn), 3);
  EXPECT_THAT(warn, HasSubstr("--per_gpu_train_batch_size"));
  EXPECT_EQ(EvalBatchSizePerDevice(c), 8);
}

TEST(DerivedDefaultsTest, FsdpConfigLoadedWithPrefixesStrippedAndDefaults) {
  std::string path = std::string(std::getenv("TEST_TMPDIR")) + "/fsdp.json";
  ASSERT_OK(base::WriteFileAtomically(
      path, R"({"fsdp_transformer_layer_cls_to_wrap": "BertLayer", "backward_prefetch": "backward_pre",
               "fsdp_forward_prefetch": true})"));
  std::vector<std::string> w;
  ASSERT_OK_AND_ASSIGN(auto a, Resolve({"--fsdp", "full_shard auto_wrap", "--fsdp_config", path},
                                       HfOnly(), &w));
  EXPECT_EQ(json::parse(a.fsdp_config()).dump(),
            R"({"backward_prefetch":"backward_pre","transformer_layer_cls_to_wrap":["BertLayer"],)"
            R"("forward_prefetch":true,"min_num_params":0,"xla":false,"xla_fsdp_v2":false,)"
            R"("xla_fsdp_grad_ckpt":false})");
  ASSERT_OK_AND_ASSIGN(auto b, Resolve({"--fsdp_min_num_params", "100", "--fsdp", "shard_grad_op"},
                                       HfOnly(), &w));
  EXPECT_EQ(json::parse(b.fsdp_config())["min_num_params"], 100);
  EXPECT_THAT(w, ElementsAre(HasSubstr("--fsdp_min_num_params` is deprecated")));
}

TEST(DerivedDefaultsTest, WarmupSteps) {
  ASSERT_OK_AND_ASSIGN(auto a, Resolve({"--warmup_ratio", "0.1"}));
  EXPECT_EQ(GetWarmupSteps(a, 1000), 100);
  EXPECT_EQ(GetWarmupSteps(a, 1001), 101);  // rounded up
  ASSERT_OK_AND_ASSIGN(auto b, Resolve({"--warmup_ratio", "0.1", "--warmup_steps", "7"}));
  EXPECT_EQ(GetWarmupSteps(b, 1000), 7);
}

TEST(DerivedDefaultsTest, PostInitIsIdempotent) {
  ASSERT_OK_AND_ASSIGN(auto a, Resolve({"--report_to", "none", "--eval_strategy", "steps",
                                        "--fsdp", "full_shard", "--adafactor"}, HfOnly()));
  TrainingArguments b = a;
  ASSERT_OK(PostInit(&b, HfOnly()).status());
  EXPECT_EQ(a.DebugString(), b.DebugString());
}

// ---- Validation rules: exact code and flag name ----

TEST(ValidationTest, OutputDirRequired) {
  TrainingArguments a;
  EXPECT_THAT(PostInit(&a, Fixed()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--output_dir is required")));
}

TEST(ValidationTest, LoadBestModelNeedsMatchingStrategies) {
  EXPECT_INVALID(({"--load_best_model_at_end", "--eval_strategy", "epoch"}),
                 "--load_best_model_at_end requires the save and eval strategy to match, but "
                 "found\n- Evaluation strategy: epoch\n- Save strategy: steps");
}

TEST(ValidationTest, SaveStepsMustBeARoundMultipleOfEvalSteps) {
  EXPECT_INVALID(({"--load_best_model_at_end", "--eval_strategy", "steps", "--eval_steps", "30",
                   "--save_steps", "100"}),
                 "but found --save_steps 100, which is not a round multiple of --eval_steps 30.");
  EXPECT_OK(Resolve({"--load_best_model_at_end", "--eval_strategy", "steps", "--eval_steps",
                     "50", "--save_steps", "100"})
                .status());
  EXPECT_INVALID(({"--load_best_model_at_end", "--eval_strategy", "steps", "--eval_steps", "0.1",
                   "--save_steps", "100"}),
                 "cannot get guaranteed when mixing ratio and absolute steps for save_steps 100 "
                 "and eval_steps 0.1");
  EXPECT_OK(Resolve({"--load_best_model_at_end", "--eval_strategy", "steps", "--eval_steps",
                     "0.1", "--save_steps", "0.2"})
                .status());
  EXPECT_INVALID(({"--load_best_model_at_end", "--eval_strategy", "steps", "--eval_steps", "0.2",
                   "--save_steps", "0.3"}),
                 "--save_steps 0.3, which is not a round multiple of --eval_steps 0.2");
}

TEST(ValidationTest, StepsAboveOneMustBeIntegers) {
  EXPECT_INVALID(({"--logging_steps", "2.5"}), "--logging_steps must be an integer if bigger than 1: 2.5");
  EXPECT_INVALID(({"--save_steps", "10.5"}), "--save_steps must be an integer if bigger than 1");
  EXPECT_INVALID(({"--eval_strategy", "steps", "--eval_steps", "3.5"}), "--eval_steps must be an integer");
  EXPECT_INVALID(({"--logging_steps", "0"}), "requires non-zero --logging_steps");
  EXPECT_INVALID(({"--eval_strategy", "steps", "--logging_steps", "0", "--logging_strategy", "no"}),
                 "requires either non-zero --eval_steps or --logging_steps");
  EXPECT_INVALID(({"--save_steps", "-1"}), "--save_steps must be >= 0");
}

TEST(ValidationTest, PrecisionFlags) {
  EXPECT_INVALID(({"--fp16", "--bf16"}), "At most one of --fp16 and --bf16");
  EXPECT_INVALID(({"--fp16_full_eval", "--bf16_full_eval"}), "--fp16_full_eval and --bf16_full_eval");
  EXPECT_INVALID(({"--bf16", "--half_precision_backend", "apex"}), "--half_precision_backend apex");
}

TEST(ValidationTest, EnumValues) {
  TrainingArguments a;
  a.set_output_dir("o");
  a.set_save_strategy("often");  // set directly, bypassing the parser's choice check
  EXPECT_THAT(PostInit(&a, Fixed()),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--save_strategy: 'often' is not a valid value, please select "
                                 "one of ['no', 'steps', 'epoch']")));
}

TEST(ValidationTest, SaveForTransformersVersionIsOneOfTheWrittenLayouts) {
  EXPECT_EQ(Resolve({}).value().save_for_transformers_version(), "4.38");
  EXPECT_EQ(Resolve({"--save_for_transformers_version", "4.41"}).value()
                .save_for_transformers_version(),
            "4.41");
  TrainingArguments a;
  a.set_output_dir("o");
  a.set_save_for_transformers_version("4.40");  // bypassing the parser's choice check
  EXPECT_THAT(PostInit(&a, Fixed()),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--save_for_transformers_version: '4.40' is not a valid value, "
                                 "please select one of ['4.38', '4.41']")));
}

TEST(ValidationTest, SchedulerWarmupAndBatches) {
  EXPECT_INVALID(({"--lr_scheduler_type", "reduce_lr_on_plateau"}),
                 "--lr_scheduler_type reduce_lr_on_plateau requires an eval strategy");
  EXPECT_INVALID(({"--warmup_ratio", "1.5"}), "--warmup_ratio must lie in range [0,1]");
  EXPECT_INVALID(({"--warmup_steps", "-2"}), "--warmup_steps must be 0 or a positive integer");
  EXPECT_INVALID(({"--per_device_train_batch_size", "0"}), "--per_device_train_batch_size must be >= 1");
  EXPECT_INVALID(({"--gradient_accumulation_steps", "0"}), "--gradient_accumulation_steps must be >= 1");
  EXPECT_INVALID(({"--dataloader_prefetch_factor", "2"}),
                 "--dataloader_prefetch_factor can only be set when data is loaded in a "
                 "different process");
  EXPECT_OK(Resolve({"--dataloader_prefetch_factor", "2", "--dataloader_num_workers", "2"}).status());
  EXPECT_INVALID(({"--dataloader_persistent_workers"}),
                 "--dataloader_persistent_workers needs --dataloader_num_workers > 0");
  EXPECT_OK(Resolve({"--dataloader_persistent_workers", "--dataloader_num_workers", "1"}).status());
}

TEST(ValidationTest, FsdpRules) {
  EXPECT_INVALID(({"--fsdp", "offload"}), "`--fsdp offload` can't work on its own");
  EXPECT_INVALID(({"--fsdp", "full_shard shard_grad_op"}),
                 "`--fsdp full_shard` is not compatible with `--fsdp shard_grad_op`.");
  EXPECT_INVALID(({"--fsdp", "hybrid_shard offload"}),
                 "--fsdp offload is only compatible with full_shard and shard_grad_op");
  EXPECT_INVALID(({"--fsdp", "full_shard", "--fsdp_config",
                   R"({"min_num_params": 10, "transformer_layer_cls_to_wrap": ["BertLayer"]})"}),
                 "`min_num_params` and `transformer_layer_cls_to_wrap` are mutually exclusive.");
  EXPECT_INVALID(({"--fsdp", "full_shard", "--fsdp_config",
                   R"({"cpu_ram_efficient_loading": true, "sync_module_states": false})"}),
                 "--fsdp_config: `sync_module_states` must be");
  EXPECT_INVALID(({"--fsdp", "full_shard", "--fsdp_config", R"({"backward_prefetch": "sideways"})"}),
                 "--fsdp_config: backward_prefetch must be");
  EXPECT_THAT(Resolve({"--fsdp", "full_shard", "--fsdp_config", "/nonexistent/fsdp.json"}),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("--fsdp_config: cannot open '/nonexistent/fsdp.json'")));
  EXPECT_INVALID(({"--fsdp", "full_shard", "--fsdp_config", R"({"xla": true})"}),
                 "--fsdp_config: xla is not supported by loom");
}

TEST(ValidationTest, AcceleratorConfig) {
  ASSERT_OK_AND_ASSIGN(auto a, Resolve({"--accelerator_config", R"({"even_batches": false})",
                                        "--split_batches", "true"}));
  EXPECT_EQ(a.accelerator_config(),
            R"({"split_batches":true,"dispatch_batches":null,"even_batches":false,"use_seedable_sampler":true})");
  EXPECT_INVALID(({"--accelerator_config", R"({"even_batch": false})"}),
                 "--accelerator_config: unknown key \"even_batch\"");
}

TEST(ValidationTest, UnsupportedOptionsRejectedOnlyWhenNonDefault) {
  EXPECT_OK(Resolve({"--use_ipex", "false", "--ray_scope", "last", "--fp16_opt_level", "O1"}).status());
  EXPECT_INVALID(({"--use_ipex"}), "--use_ipex is not supported by loom: Intel Extension");
  EXPECT_INVALID(({"--torchdynamo", "eager"}), "--torchdynamo is not supported by loom");
  EXPECT_INVALID(({"--jit_mode_eval"}), "--jit_mode_eval is not supported by loom");
  EXPECT_INVALID(({"--use_mps_device"}), "--use_mps_device is not supported by loom");
  EXPECT_INVALID(({"--optim_target_modules", "attn"}), "--optim_target_modules is not supported");
  EXPECT_INVALID(({"--optim", "adamw_apex_fused"}), "--optim adamw_apex_fused is not supported by loom");
  EXPECT_INVALID(({"--ddp_backend", "ccl"}), "--ddp_backend ccl is not supported by loom");
  EXPECT_INVALID(({"--debug", "underflow_overflow"}), "--debug is not implemented in loom yet");
  EXPECT_OK(Resolve({"--ddp_backend", "gloo", "--optim", "sgd"}).status());
  // TPU-only options change nothing here: a warning, as HF gives on machines without TPUs.
  std::vector<std::string> warnings;
  EXPECT_OK(Resolve({"--tpu_num_cores", "8"}, Fixed(), &warnings).status());
  EXPECT_THAT(warnings, ::testing::Contains(HasSubstr("--tpu_num_cores is ignored by loom")));
  EXPECT_OK(Resolve({"--tpu_metrics_debug"}, Fixed(), &warnings).status());
  EXPECT_THAT(warnings, ::testing::Contains(HasSubstr("--tpu_metrics_debug is ignored by loom")));
}

// A remote with credentials in it is refused by PostInit, before anything logs the arguments,
// and the refusal does not repeat the secret.
TEST(PostInitTest, PushToACredentialUrlIsRefusedWithoutEchoingIt) {
  absl::StatusOr<TrainingArguments> a =
      Resolve({"--push_to_hub", "--hub_model_id", "https://me:s3cret@git.example/r.git"});
  EXPECT_THAT(a.status(), StatusIs(absl::StatusCode::kInvalidArgument,
                                   AllOf(HasSubstr("carries credentials"),
                                         ::testing::Not(HasSubstr("s3cret")))));
  a = Resolve({"--push_to_hub", "--hub_private_repo", "--hub_model_id", "/srv/git/r.git"});
  EXPECT_THAT(a.status(), StatusIs(absl::StatusCode::kInvalidArgument,
                                   HasSubstr("--hub_private_repo: --hub_model_id /srv/git/r.git")));
}

}  // namespace
}  // namespace loom::args
