// arguments: run_translation's own argument checks, each error naming the flag and the fix.
#include "examples/translation/arguments.h"

#include <string>

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::examples::translation {
namespace {

using ::loom::base::testing::StatusIs;
using ::testing::HasSubstr;

struct Args {
  ModelArguments m;
  DataTrainingArguments d;
  args::TrainingArguments t;
  absl::Status Validate() { return ValidateArguments(m, &d, t); }
};

Args Valid() {
  Args a;
  a.m.set_model_name_or_path("/models/t5-small");
  a.d.set_source_lang("en");
  a.d.set_target_lang("ro");
  a.d.set_source_prefix("translate English to Romanian: ");
  a.d.set_train_file("train.json");
  a.d.set_validation_file("validation.jsonl");
  a.t.set_do_train(true);
  a.t.set_do_eval(true);
  return a;
}

void ExpectInvalid(Args a, const std::string& message) {
  EXPECT_THAT(a.Validate(), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(message)));
}

TEST(ValidateArgumentsTest, ValidArgumentsPassAndValMaxTargetLengthDefaultsToMaxTargetLength) {
  Args a = Valid();
  a.d.set_max_target_length(64);
  EXPECT_OK(a.Validate());
  EXPECT_EQ(a.d.val_max_target_length(), 64);
  a = Valid();
  a.d.set_val_max_target_length(40);
  EXPECT_OK(a.Validate());
  EXPECT_EQ(a.d.val_max_target_length(), 40);
  a = Valid();
  a.d.set_source_prefix("");  // an explicit empty prefix is a choice
  EXPECT_OK(a.Validate());
}

TEST(ValidateArgumentsTest, HfPostInitErrors) {
  Args a = Valid();
  a.d.clear_train_file();
  a.d.clear_validation_file();
  a.t.set_do_train(false);
  a.t.set_do_eval(false);
  ExpectInvalid(a, "Need either a dataset name or a training/validation file");
  a = Valid();
  a.d.clear_target_lang();
  ExpectInvalid(a, "Need to specify the source language and the target language");
  a = Valid();
  a.d.set_train_file("train.csv");
  ExpectInvalid(a, "`train_file` should be a jsonlines file (--train_file train.csv)");
  a = Valid();
  a.d.set_validation_file("dev.tsv");
  ExpectInvalid(a, "`validation_file` should be a jsonlines file");
  a = Valid();
  a.d.set_test_file("test.txt");
  ExpectInvalid(a, "`test_file` should be a jsonlines file");
}

TEST(ValidateArgumentsTest, LoomsRulesNameTheFlagAndTheFix) {
  Args a = Valid();
  a.m.set_trust_remote_code(true);
  ExpectInvalid(a, "--trust_remote_code");
  a = Valid();
  a.d.set_dataset_name("wmt16");
  ExpectInvalid(a, "--dataset_name wmt16: loom has no access to the Hugging Face Hub");
  a = Valid();
  a.d.set_forced_bos_token("ro_RO");
  ExpectInvalid(a, "--forced_bos_token ro_RO: only multilingual tokenizers");
  a = Valid();
  a.d.clear_source_prefix();
  ExpectInvalid(a, "didn't provide a source prefix");
  ExpectInvalid(a, "--source_prefix '' to train without one");
  a = Valid();
  a.t.set_do_predict(true);
  ExpectInvalid(a, "--do_predict requires a test dataset: pass --test_file");
  a = Valid();
  a.d.clear_validation_file();
  ExpectInvalid(a, "--do_eval requires a validation dataset");
  a = Valid();
  a.d.clear_train_file();
  ExpectInvalid(a, "--do_train requires a train dataset");
  a = Valid();
  a.m.clear_model_name_or_path();
  a.t.set_do_train(false);
  ExpectInvalid(a, "only makes sense with --do_train");
}

}  // namespace
}  // namespace loom::examples::translation
