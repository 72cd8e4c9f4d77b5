#include "examples/glue/hp_search_flags.h"

#include <cstdlib>
#include <string>

#include "base/file_util.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::examples::glue_script {
namespace {

using ::loom::base::testing::StatusIs;
using ::testing::HasSubstr;

TEST(HpSearchFromFlags, NoSearchWithoutTrialsAndNoHpFlagAlone) {
  DataTrainingArguments d;
  ASSERT_OK_AND_ASSIGN(std::optional<trainer::HpSearchOptions> none, HpSearchFromFlags(d));
  EXPECT_FALSE(none.has_value());
  d.set_hp_pruner("none");
  EXPECT_THAT(HpSearchFromFlags(d).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--hp_pruner was given without --hp_search_trials")));
}

TEST(HpSearchFromFlags, ReadsEveryFlagAndASpaceFile) {
  const std::string path = std::string(std::getenv("TEST_TMPDIR")) + "/space.json";
  ASSERT_OK(base::WriteFileAtomically(
      path, R"({"learning_rate": {"type": "float", "low": 1e-5, "high": 1e-3, "log": true}})"));
  DataTrainingArguments d;
  d.set_hp_search_trials(7);
  d.set_hp_backend("grid");
  d.set_hp_direction("maximize");
  d.set_hp_space(path);
  d.set_hp_journal("/tmp/j");
  d.set_hp_pruner("none");
  d.set_hp_seed(9);
  ASSERT_OK_AND_ASSIGN(std::optional<trainer::HpSearchOptions> o, HpSearchFromFlags(d));
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->n_trials, 7);
  EXPECT_EQ(o->backend, "grid");
  EXPECT_EQ(o->direction, std::vector<std::string>{"maximize"});
  ASSERT_TRUE(o->hp_space.has_value());
  EXPECT_EQ(o->hp_space->params[0].first, "learning_rate");
  EXPECT_EQ(o->journal, "/tmp/j");
  EXPECT_EQ(o->pruner, "none");
  EXPECT_EQ(o->seed, 9u);
  hpsearch::TrialRun run;
  run.number = 4;
  EXPECT_EQ(o->hp_name(run), "run-4");
}

TEST(HpSearchFromFlags, RefusesBadValuesNamingTheFlag) {
  DataTrainingArguments d;
  d.set_hp_search_trials(0);
  EXPECT_THAT(HpSearchFromFlags(d).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("at least 1")));
  d.set_hp_search_trials(2);
  d.set_hp_space("/no/such/space.json");
  EXPECT_THAT(HpSearchFromFlags(d).status(),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("--hp_space")));
  d.set_hp_space(R"({"x": {"type": "int", "low": 3, "high": 1}})");
  EXPECT_THAT(HpSearchFromFlags(d).status(), StatusIs(absl::StatusCode::kInvalidArgument,
                                                      HasSubstr("--hp_space: parameter \"x\"")));
  d.clear_hp_space();
  d.set_hp_seed(-1);
  EXPECT_THAT(HpSearchFromFlags(d).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--hp_seed")));
}

TEST(CheckSearchTrainingArgs, RefusesWhatASearchCannotHonour) {
  args::TrainingArguments t;
  EXPECT_THAT(CheckSearchTrainingArgs(t),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--do_train and --do_eval")));
  t.set_do_train(true);
  t.set_do_eval(true);
  EXPECT_OK(CheckSearchTrainingArgs(t));
  t.set_overwrite_output_dir(true);
  EXPECT_THAT(CheckSearchTrainingArgs(t),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("does not discard it")));
  t.set_overwrite_output_dir(false);
  t.set_resume_from_checkpoint("out/checkpoint-4");
  EXPECT_THAT(CheckSearchTrainingArgs(t),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("resumes from its journal")));
  t.clear_resume_from_checkpoint();
  t.set_do_predict(true);
  EXPECT_THAT(CheckSearchTrainingArgs(t),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("predicts nothing")));
}

}  // namespace
}  // namespace loom::examples::glue_script
