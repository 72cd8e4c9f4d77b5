#include "args/field_support.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "args/field_value.h"
#include "args/parser.h"
#include "args/training_args.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::args {
namespace {

using ::google::protobuf::Descriptor;
using ::google::protobuf::FieldDescriptor;
using ::loom::base::testing::StatusIs;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

// Parses `flags` (Seq2SeqTrainingArguments' too) after --output_dir and runs PostInit.
absl::StatusOr<TrainingArguments> Resolve(std::vector<std::string> flags,
                                          std::vector<std::string>* warnings = nullptr) {
  TrainingArguments args;
  ArgParser parser({.program = "test", .seq2seq = true});
  parser.AddGroup("TrainingArguments", &args);
  flags.insert(flags.begin(), {"--output_dir", "out"});
  absl::Status parsed = parser.Parse(flags);
  if (!parsed.ok()) return parsed;
  PostInitOptions options;
  options.hostname = "host";
  options.world_size = 1;
  absl::StatusOr<std::vector<std::string>> w = PostInit(&args, options);
  if (!w.ok()) return w.status();
  if (warnings != nullptr) *warnings = *w;
  return args;
}

// The command line that gives `field` its table example value.
std::vector<std::string> ExampleFlags(const FieldDescriptor* f) {
  std::vector<std::string> flags = {"--" + f->name()};
  const std::string& value = SpecOf(f).example_value();
  if (!value.empty()) flags.push_back(value);
  return flags;
}

std::vector<const FieldDescriptor*> Fields() {
  std::vector<const FieldDescriptor*> out;
  const Descriptor* d = TrainingArguments::descriptor();
  for (int i = 0; i < d->field_count(); ++i) out.push_back(d->field(i));
  return out;
}

TEST(FieldSupportTest, EveryFieldHasOneStatus) {
  int counted[5] = {0, 0, 0, 0, 0};
  for (const FieldDescriptor* f : Fields()) {
    SCOPED_TRACE(f->name());
    const Support s = FieldSupport(f);
    ASSERT_NE(s, SUPPORT_UNSPECIFIED) << "give --" << f->name()
                                      << " a support status in args/training_args.proto";
    ++counted[s];
    if (s != IMPLEMENTED) {
      EXPECT_THAT(SpecOf(f).support_note(), Not(IsEmpty())) << "say why in support_note";
      // The example really is a non-default value, so the tests below exercise the rule.
      TrainingArguments a;
      ArgParser parser({.program = "test", .seq2seq = true});
      parser.AddGroup("TrainingArguments", &a);
      ASSERT_OK(parser.Parse(ExampleFlags(f)));
      EXPECT_TRUE(HasNonDefaultValue(a, f)) << "example_value is the default";
    }
  }
  EXPECT_EQ(counted[IMPLEMENTED] + counted[NOT_APPLICABLE] + counted[UNSUPPORTED] +
                counted[NOT_YET],
            TrainingArguments::descriptor()->field_count());
  // Every group is populated (a table that marks nothing would pass the walk above).
  EXPECT_GT(counted[IMPLEMENTED], 80);
  EXPECT_GT(counted[NOT_APPLICABLE], 0);
  EXPECT_GT(counted[UNSUPPORTED], 0);
  EXPECT_GT(counted[NOT_YET], 0);
}

TEST(FieldSupportTest, NotYetAndUnsupportedFieldsAreRefusedNamingTheFlag) {
  int refused = 0;
  for (const FieldDescriptor* f : Fields()) {
    const Support s = FieldSupport(f);
    if (s != NOT_YET && s != UNSUPPORTED) continue;
    SCOPED_TRACE(f->name());
    std::vector<std::string> flags = ExampleFlags(f);
    const std::string expected =
        absl::StrCat("--", f->name(),
                     s == NOT_YET ? " is not implemented in loom yet: " : " is not supported by loom: ");
    absl::StatusOr<TrainingArguments> got = Resolve(flags);
    EXPECT_THAT(got, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(expected)));
    EXPECT_THAT(got.status().message(), HasSubstr(SpecOf(f).support_note()));
    ++refused;
  }
  EXPECT_GT(refused, 10);
}

TEST(FieldSupportTest, NotApplicableFieldsWarnAndResolve) {
  for (const FieldDescriptor* f : Fields()) {
    if (FieldSupport(f) != NOT_APPLICABLE) continue;
    SCOPED_TRACE(f->name());
    std::vector<std::string> warnings;
    ASSERT_OK(Resolve(ExampleFlags(f), &warnings).status());
    EXPECT_THAT(warnings, Contains(HasSubstr(absl::StrCat("--", f->name(), " is ignored by loom: ",
                                                          SpecOf(f).support_note()))));
  }
}

TEST(FieldSupportTest, DefaultValuesAreAccepted) {
  std::vector<std::string> warnings;
  ASSERT_OK(Resolve({"--push_to_hub", "false", "--use_ipex", "false", "--eval_do_concat_batches",
                     "true", "--past_index", "-1", "--hub_strategy", "every_save",
                     "--ray_scope", "last", "--fp16_opt_level", "O1"},
                    &warnings)
                .status());
  EXPECT_THAT(warnings, Not(Contains(HasSubstr("is ignored by loom"))));
}

TEST(FieldSupportTest, HubTokenValueNeverInTheMessages) {
  // The deprecated spelling is mapped with a warning that names the flag, not the value.
  std::vector<std::string> warnings;
  absl::StatusOr<TrainingArguments> got =
      Resolve({"--push_to_hub_token", "hf_SECRET123", "--push_to_hub"}, &warnings);
  ASSERT_OK(got.status());
  EXPECT_EQ(got->hub_token(), "hf_SECRET123");
  EXPECT_THAT(warnings, Contains(HasSubstr("push_to_hub_token")));
  for (const std::string& w : warnings) EXPECT_THAT(w, Not(HasSubstr("hf_SECRET123")));
  // A refused flag next to the token: the error does not carry it either.
  got = Resolve({"--hub_token", "hf_SECRET123", "--debug", "underflow_overflow"});
  EXPECT_FALSE(got.ok());
  EXPECT_THAT(got.status().message(), Not(HasSubstr("hf_SECRET123")));
}

TEST(FieldSupportTest, DebugOptions) {
  std::vector<std::string> warnings;
  ASSERT_OK(Resolve({"--debug", "tpu_metrics_debug"}, &warnings).status());
  EXPECT_THAT(warnings, Contains(HasSubstr("--debug tpu_metrics_debug is ignored by loom")));
  EXPECT_THAT(Resolve({"--debug", "underflow_overflow"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--debug is not implemented in loom yet: --debug "
                                 "underflow_overflow")));
  EXPECT_THAT(Resolve({"--debug", "tpu_metrics_debug underflow_overflow"}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("underflow_overflow")));
}

TEST(FieldSupportTest, ValuesOfImplementedFieldsThatLoomLacks) {
  EXPECT_THAT(Resolve({"--report_to", "wandb"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--report_to wandb is not supported by loom")));
  EXPECT_OK(Resolve({"--report_to", "tensorboard"}).status());
  EXPECT_OK(Resolve({"--report_to", "none"}).status());
  // Implemented: one process keeps HF's generator-less RandomSampler (the trainer's
  // TrainSampler), as accelerate 0.27 does.
  EXPECT_OK(Resolve({"--accelerator_config", R"({"use_seedable_sampler": false})"}).status());
  EXPECT_OK(Resolve({"--accelerator_config", R"({"use_seedable_sampler": true})"}).status());
  EXPECT_THAT(Resolve({"--fp16", "--half_precision_backend", "apex"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--fp16 with --half_precision_backend apex is not supported")));
}

// --deepspeed is read and checked when the arguments are resolved.
TEST(FieldSupportTest, DeepSpeedConfigIsValidatedFirst) {
  EXPECT_THAT(Resolve({"--deepspeed", "/nonexistent/ds.json"}),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("--deepspeed")));
  EXPECT_THAT(Resolve({"--deepspeed", "{bad"}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--deepspeed")));
  EXPECT_THAT(Resolve({"--deepspeed", R"({"zero_optimization": {"stage": 7}})"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--deepspeed: DeepSpeed config <inline JSON>: zero_optimization.stage")));
  // fp16.enabled contradicts the flags: both sides are named.
  EXPECT_THAT(Resolve({"--deepspeed", R"({"fp16": {"enabled": true}})"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("- ds fp16.enabled=True vs hf "
                                 "fp16|fp16_full_eval+fp16_backend(amp)=False")));
  EXPECT_THAT(Resolve({"--bf16", "--deepspeed", R"({"bf16": {"enabled": false}})"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("- ds bf16.enabled=False vs hf bf16|bf16_full_eval=True")));
  // A good config passes (what loom implements of it is decided by sharding/deepspeed_plan).
  EXPECT_OK(Resolve({"--bf16", "--deepspeed", R"({"bf16": {"enabled": "auto"}})"}).status());
}

}  // namespace
}  // namespace loom::args
