#include "examples/clm/arguments.h"

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace loom::examples::clm {
namespace {

using ::loom::base::testing::StatusIs;
using ::testing::HasSubstr;

struct Args {
  ModelArguments m;
  DataTrainingArguments d;
  args::TrainingArguments t;
  Args() {
    m.set_model_type("llama");
    m.set_tokenizer_name("/tok");
    d.set_train_file("train.txt");
    t.set_do_train(true);
    t.set_do_eval(true);
  }
  absl::Status Check(bool builtin = false) const { return ValidateArguments(m, d, t, builtin); }
};

TEST(ClmArgumentsTest, AcceptsHfsFileKindsAndSplitsOffValidation) {
  Args a;
  EXPECT_OK(a.Check());
  for (const char* name : {"a.json", "a.jsonl", "a.csv"}) {
    a.d.set_train_file(name);
    EXPECT_OK(a.Check()) << name;
  }
  a.d.set_train_file("a.parquet");
  EXPECT_THAT(a.Check(), StatusIs(absl::StatusCode::kInvalidArgument,
                                  HasSubstr("`train_file` should be a csv, a json or a txt file")));
}

TEST(ClmArgumentsTest, RefusesWhatHfRefusesAndWhatLoomDoesNotDo) {
  Args a;
  a.m.set_config_overrides("hidden_size=8");
  a.m.set_model_name_or_path("/model");
  EXPECT_THAT(a.Check(), StatusIs(absl::StatusCode::kInvalidArgument,
                                  HasSubstr("--config_overrides can't be used")));
  Args b;
  b.d.set_streaming(true);
  EXPECT_THAT(b.Check(), StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("--streaming")));
  Args c;
  c.m.set_model_type("gpt2");
  EXPECT_THAT(c.Check(), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--model_type llama")));
  Args e;
  e.m.clear_tokenizer_name();
  EXPECT_THAT(e.Check(), StatusIs(absl::StatusCode::kInvalidArgument,
                                  HasSubstr("new tokenizer from scratch")));
  EXPECT_OK(e.Check(/*builtin=*/true));
  Args f;
  f.m.set_torch_dtype("bfloat16");
  EXPECT_THAT(f.Check(), StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("--bf16")));
  Args g;
  g.d.clear_train_file();
  EXPECT_THAT(g.Check(), StatusIs(absl::StatusCode::kInvalidArgument,
                                  HasSubstr("Need either a dataset name")));
  Args h;
  h.d.set_validation_split_percentage(0);
  EXPECT_THAT(h.Check(), StatusIs(absl::StatusCode::kInvalidArgument,
                                  HasSubstr("--validation_split_percentage 0")));
  Args i;
  i.d.set_dataset_name("wikitext");
  EXPECT_THAT(i.Check(), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("Hub")));
}

TEST(ClmArgumentsTest, ConfigOverridesParseByTheCurrentType) {
  const nlohmann::json config = {{"hidden_size", 4096}, {"rms_norm_eps", 1e-6},
                                 {"tie_word_embeddings", false}, {"hidden_act", "silu"},
                                 {"rope_scaling", nullptr}};
  ASSERT_OK_AND_ASSIGN(
      nlohmann::json out,
      ApplyConfigOverrides(config, "hidden_size=64,rms_norm_eps=1e-5,tie_word_embeddings=Yes,"
                                   "hidden_act=gelu"));
  EXPECT_EQ(out["hidden_size"], 64);
  EXPECT_EQ(out["rms_norm_eps"], 1e-5);
  EXPECT_EQ(out["tie_word_embeddings"], true);
  EXPECT_EQ(out["hidden_act"], "gelu");
  EXPECT_THAT(ApplyConfigOverrides(config, "n_embd=10"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("key n_embd isn't in the original config dict")));
  EXPECT_THAT(ApplyConfigOverrides(config, "tie_word_embeddings=maybe"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("can't derive true or false")));
  EXPECT_THAT(ApplyConfigOverrides(config, "rope_scaling=x"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("You can only update")));
  EXPECT_THAT(ApplyConfigOverrides(config, "hidden_size"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not key=value")));
}

}  // namespace
}  // namespace loom::examples::clm
