// arguments: run_glue's own argument checks, each error naming the flag and the fix.
#include "examples/glue/arguments.h"

#include <filesystem>

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::examples::glue_script {
namespace {

using ::loom::base::testing::StatusIs;
using ::testing::HasSubstr;

TEST(CheckModelPathsTest, MissingFoldersAreSaidFirst) {
  ModelArguments m;
  EXPECT_OK(CheckModelPaths(m));
  m.set_model_name_or_path(::testing::TempDir());
  EXPECT_OK(CheckModelPaths(m));
  m.set_model_name_or_path("/no/such/bert");
  EXPECT_THAT(CheckModelPaths(m),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("--model_name_or_path /no/such/bert: no such model folder "
                                 "(loom does not download)")));
  m.set_model_name_or_path("bert-base-uncased");
  EXPECT_THAT(CheckModelPaths(m),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("it looks like a Hugging Face Hub id; loom does not download")));
  m.set_model_name_or_path(::testing::TempDir());
  m.set_tokenizer_name("/no/tokenizer");
  EXPECT_THAT(CheckModelPaths(m), StatusIs(absl::StatusCode::kNotFound,
                                           HasSubstr("--tokenizer_name /no/tokenizer")));
}

TEST(ValidateArgumentsTest, RefusalsNameTheFlag) {
  ModelArguments m;
  args::TrainingArguments t;
  DataTrainingArguments d;
  EXPECT_THAT(ValidateArguments(m, &d, t),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("pass --task_name with --data_dir")));
  d.set_task_name("SST2");
  EXPECT_THAT(ValidateArguments(m, &d, t),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("pass --data_dir")));
  d.set_data_dir("/data/glue/SST-2");
  EXPECT_OK(ValidateArguments(m, &d, t));
  EXPECT_EQ(d.task_name(), "sst2");
  DataTrainingArguments files;
  files.set_train_file("train.csv");
  files.set_validation_file("dev.json");
  EXPECT_THAT(ValidateArguments(m, &files, t),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--validation_file dev.json")));
  m.set_trust_remote_code(true);
  EXPECT_THAT(ValidateArguments(m, &d, t),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--trust_remote_code")));
}

}  // namespace
}  // namespace loom::examples::glue_script
