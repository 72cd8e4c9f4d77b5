#include "args/serialize.h"

#include <cstdlib>
#include <string>
#include <vector>

#include "args/parser.h"
#include "args/training_args.h"
#include "args/training_args_testing.h"
#include "base/file_util.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::args {
namespace {

using ::loom::base::testing::StatusIs;
using ::testing::HasSubstr;

// Golden files were written by hand from transformers 4.41's TrainingArguments and its
// to_json_string() rules
// (field order, Python float repr, post-init values, token placeholders) with the clock and
// host fixed to 2024-01-02 03:04:05 UTC / "goldenhost".
PostInitOptions Fixed() {
  PostInitOptions o;
  o.now = [] { return absl::FromCivil(absl::CivilSecond(2024, 1, 2, 3, 4, 5), absl::UTCTimeZone()); };
  o.hostname = "goldenhost";
  o.reject_unsupported = false;  // serialization of every field, refused ones included
  return o;
}

TrainingArguments MustResolve(const std::vector<std::string>& args) {
  TrainingArguments a;
  ArgParser p({.program = "test"});
  p.AddGroup("TrainingArguments", &a);
  absl::Status s = p.Parse(args);
  EXPECT_TRUE(s.ok()) << s;
  setenv("TZ", "UTC", 1);
  auto w = PostInit(&a, Fixed());
  EXPECT_TRUE(w.ok()) << w.status();
  return a;
}

std::string Golden(const std::string& name) {
  auto text = base::ReadFile("args/testdata/golden/" + name);
  EXPECT_TRUE(text.ok()) << text.status();
  return text.ok() ? *text : "";
}

const std::vector<std::pair<std::string, std::vector<std::string>>>& Cases() {
  static const auto* cases = new std::vector<std::pair<std::string, std::vector<std::string>>>{
      // A command line with an FSDP option list and a 0/1 boolean flag.
      {"acceptance.json",
       {"--output_dir", "out", "--learning_rate", "2e-5", "--fsdp", "full_shard auto_wrap",
        "--log_on_each_node", "0"}},
      // Derived values: do_eval, eval_steps <- logging_steps, greater_is_better, report_to
      // "none" -> [], use_cpu -> pin_memory false, token obfuscation, ratio steps.
      {"derived.json",
       {"--output_dir", "/tmp/glue", "--do_train", "--eval_strategy", "steps", "--logging_steps",
        "50", "--load_best_model_at_end", "--save_steps", "100", "--metric_for_best_model",
        "accuracy", "--report_to", "none", "--use_cpu", "--hub_token", "SECRET",
        "--warmup_ratio", "0.1", "--lr_scheduler_type", "cosine", "--label_names", "labels",
        "--debug", "underflow_overflow", "--per_gpu_train_batch_size", "4",
        "--lr_scheduler_kwargs", "{\"num_cycles\": 0.5}", "--seed", "7"}},
  };
  return *cases;
}

TEST(ToJsonStringTest, MatchesHandWrittenGoldenFiles) {
  for (const auto& [golden, args] : Cases()) {
    EXPECT_EQ(ToJsonString(MustResolve(args)) + "\n", Golden(golden)) << golden;
  }
}

TEST(ToJsonStringTest, TokensNeverAppear) {
  TrainingArguments a = MustResolve({"--output_dir", "o", "--hub_token", "hf_SECRET",
                                     "--push_to_hub_token", "hf_OTHER"});
  const std::string json = ToJsonString(a);
  EXPECT_THAT(json, HasSubstr("\"hub_token\": \"<HUB_TOKEN>\""));
  EXPECT_THAT(json, HasSubstr("\"push_to_hub_token\": \"<PUSH_TO_HUB_TOKEN>\""));
  EXPECT_THAT(json, ::testing::Not(HasSubstr("SECRET")));
  // training_args.bin: checkpoint/training_args_file_test.cc.
}

// A password or token inside a URL argument never reaches a dump or an args file.
TEST(ToJsonStringTest, UrlCredentialsNeverAppear) {
  TrainingArguments a =
      MustResolve({"--output_dir", "o", "--hub_model_id", "https://me:s3cret@git.example/r.git"});
  const std::string json = ToJsonString(a);
  EXPECT_THAT(json, HasSubstr("\"hub_model_id\": \"https://<credentials>@git.example/r.git\""));
  EXPECT_THAT(json, ::testing::Not(HasSubstr("s3cret")));
}


// training_args.bin's round trip: checkpoint/training_args_file_test.cc.
TEST(RoundTripTest, JsonIsExact) {
  for (const auto& [golden, args] : Cases()) {
    TrainingArguments a = MustResolve(args);
    a.clear_hub_token();  // tokens are never serialized
    TrainingArguments from_json;
    ASSERT_OK(FromJsonString(ToJsonString(a), golden, &from_json));
    EXPECT_TRUE(testing::EquivalentArgs(a, from_json)) << golden;
    EXPECT_EQ(ToJsonString(from_json), ToJsonString(a));
    // A resolved, reloaded object resolves to itself.
    TrainingArguments again = from_json;
    ASSERT_OK(PostInit(&again, Fixed()).status());
    EXPECT_EQ(ToJsonString(again), ToJsonString(a));
  }
}

TEST(RoundTripTest, BadInputIsAnErrorNotACrash) {
  TrainingArguments a;
  EXPECT_THAT(FromJsonString(R"({"learning_rate": "fast"})", "a.json", &a),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("learning_rate")));
  EXPECT_THAT(FromJsonString(R"({"nope": 1})", "a.json", &a),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("unknown key \"nope\"")));
  EXPECT_THAT(FromJsonString("[1", "a.json", &a),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("a.json")));
}

TEST(LoomOnlyTest, LoomFieldsStayOutOfHfDictsUnlessAskedFor) {
  TrainingArguments a =
      MustResolve({"--output_dir", "o", "--save_for_transformers_version", "4.41"});
  EXPECT_FALSE(ToDict(a).contains("save_for_transformers_version"));
  EXPECT_FALSE(ToDict(a, {.seq2seq = true}).contains("save_for_transformers_version"));
  const auto d = ToDict(a, {.loom_fields = true});
  EXPECT_EQ(d.size(), 126u);
  EXPECT_EQ(d["save_for_transformers_version"], "4.41");
  TrainingArguments back;
  ASSERT_OK(FromDict(d, "loom.json", &back, {.loom_fields = true}));
  EXPECT_EQ(back.save_for_transformers_version(), "4.41");
  EXPECT_THAT(FromDict(d, "hf.json", &back),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("unknown key \"save_for_transformers_version\"")));
}

TEST(Seq2SeqTest, ExtraFieldsOnlyInSeq2SeqForm) {
  TrainingArguments a = MustResolve({"--output_dir", "o"});
  EXPECT_EQ(ToDict(a).size(), 125u);
  auto d = ToDict(a, {.seq2seq = true});
  EXPECT_EQ(d.size(), 130u);
  EXPECT_EQ(d["generation_num_beams"], nullptr);
  EXPECT_EQ(d["predict_with_generate"], false);
}

}  // namespace
}  // namespace loom::args
