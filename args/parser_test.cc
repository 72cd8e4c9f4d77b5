#include "args/parser.h"

#include <set>
#include <string>
#include <vector>

#include "args/field_value.h"
#include "args/training_args.pb.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::args {
namespace {

using ::loom::base::testing::IsOk;
using ::loom::base::testing::StatusIs;
using ::testing::HasSubstr;
using json = nlohmann::ordered_json;

struct FieldRow {
  std::string name;
  std::string default_json;
  std::vector<std::string> args;
  std::string parsed_json;
};

const std::vector<FieldRow>& Table() {
  static const auto* rows = new std::vector<FieldRow>{
#include "args/field_table_test_data.inc"
  };
  return *rows;
}

// loom's own fields ((spec).loom_only), declared after HF's and numbered from 1001; same
// columns as Table().
const std::vector<FieldRow>& LoomOnlyTable() {
  static const auto* rows = new std::vector<FieldRow>{
      {"save_for_transformers_version", R"("4.38")", {"--save_for_transformers_version", "4.41"},
       R"("4.41")"},
  };
  return *rows;
}

// Every field in declaration order: HF's, then loom's own.
const std::vector<FieldRow>& AllRows() {
  static const auto* rows = [] {
    auto* all = new std::vector<FieldRow>(Table());
    all->insert(all->end(), LoomOnlyTable().begin(), LoomOnlyTable().end());
    return all;
  }();
  return *rows;
}

absl::Status ParseInto(TrainingArguments* a, const std::vector<std::string>& args,
                       bool seq2seq = true) {
  ArgParser p({.program = "test", .seq2seq = seq2seq});
  p.AddGroup("TrainingArguments", a);
  return p.Parse(args);
}

TEST(FieldTableTest, CoversEveryFieldInSignatureOrder) {
  const auto* d = TrainingArguments::descriptor();
  ASSERT_EQ(Table().size(), 130u);
  ASSERT_EQ(d->field_count(), 130 + static_cast<int>(LoomOnlyTable().size()));
  for (int i = 0; i < d->field_count(); ++i) {
    EXPECT_EQ(d->field(i)->name(), AllRows()[i].name) << i;
    if (i < 130) {
      EXPECT_EQ(d->field(i)->number(), i + 1)
          << "field numbers are the positions in HF's signatures";
      EXPECT_FALSE(SpecOf(d->field(i)).loom_only()) << d->field(i)->name();
    } else {
      EXPECT_EQ(d->field(i)->number(), 1001 + (i - 130)) << "loom's own fields: from 1001";
      EXPECT_TRUE(SpecOf(d->field(i)).loom_only()) << d->field(i)->name();
    }
    EXPECT_FALSE(SpecOf(d->field(i)).doc().empty()) << d->field(i)->name();
  }
}

TEST(FieldTableTest, EveryDefaultMatchesTheSpec) {
  TrainingArguments a;
  for (const auto& row : AllRows()) {
    const auto* f = TrainingArguments::descriptor()->FindFieldByName(row.name);
    EXPECT_EQ(GetAsJson(a, f), json::parse(row.default_json)) << row.name;
  }
}

TEST(FieldTableTest, EveryFieldParsesANonDefaultValueAndNothingElseChanges) {
  const auto* d = TrainingArguments::descriptor();
  for (const auto& row : AllRows()) {
    TrainingArguments a;
    ASSERT_OK(ParseInto(&a, row.args)) << row.name;
    for (int i = 0; i < d->field_count(); ++i) {
      const auto* f = d->field(i);
      const auto& expect = f->name() == row.name ? row.parsed_json : AllRows()[i].default_json;
      EXPECT_EQ(GetAsJson(a, f), json::parse(expect)) << row.name << " -> " << f->name();
    }
  }
}

TEST(ParserTest, EqualsFormDashesAndLastValueWins) {
  TrainingArguments a;
  ASSERT_OK(ParseInto(&a, {"--learning_rate=2e-5", "--per-device-train-batch-size", "4",
                           "--learning_rate", "3e-5"}));
  EXPECT_DOUBLE_EQ(a.learning_rate(), 3e-5);
  EXPECT_EQ(a.per_device_train_batch_size(), 4);
}

TEST(ParserTest, BoolForms) {
  for (const auto& [word, want] : std::vector<std::pair<std::string, bool>>{
           {"0", false}, {"1", true}, {"true", true}, {"False", false}, {"YES", true},
           {"n", false}, {"t", true}}) {
    TrainingArguments a;
    ASSERT_OK(ParseInto(&a, {"--log_on_each_node", word})) << word;
    EXPECT_EQ(a.log_on_each_node(), want) << word;
  }
  TrainingArguments a;
  ASSERT_OK(ParseInto(&a, {"--do_train", "--no_log_on_each_node", "--fp16=true"}));
  EXPECT_TRUE(a.do_train());
  EXPECT_FALSE(a.log_on_each_node());
  EXPECT_TRUE(a.fp16());
  EXPECT_THAT(ParseInto(&a, {"--do_train", "maybe"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("argument --do_train: Truthy value expected: got 'maybe'")));
  // --no_x exists only for bools whose default is true.
  EXPECT_THAT(ParseInto(&a, {"--no_do_train"}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--no_do_train")));
}

TEST(ParserTest, ListFields) {
  TrainingArguments a;
  ASSERT_OK(ParseInto(&a, {"--report_to", "tensorboard", "wandb", "--label_names", "a", "b",
                           "--fsdp", "full_shard offload auto_wrap"}));
  EXPECT_THAT(a.report_to(), ::testing::ElementsAre("tensorboard", "wandb"));
  EXPECT_THAT(a.label_names(), ::testing::ElementsAre("a", "b"));
  EXPECT_THAT(a.fsdp(), ::testing::ElementsAre("full_shard", "offload", "auto_wrap"));
  EXPECT_THAT(ParseInto(&a, {"--fsdp", "full_shard bogus"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("argument --fsdp: invalid choice: 'bogus'")));
  EXPECT_THAT(ParseInto(&a, {"--label_names"}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--label_names")));
}

TEST(ParserTest, BadValuesNameTheFlag) {
  TrainingArguments a;
  EXPECT_THAT(ParseInto(&a, {"--per_device_train_batch_size", "eight"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("argument --per_device_train_batch_size: invalid int value: 'eight'")));
  EXPECT_THAT(ParseInto(&a, {"--learning_rate", "fast"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("argument --learning_rate: invalid float value: 'fast'")));
  EXPECT_THAT(ParseInto(&a, {"--eval_strategy", "sometimes"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("argument --eval_strategy: invalid choice: 'sometimes' (choose "
                                 "from 'no', 'steps', 'epoch')")));
  EXPECT_THAT(ParseInto(&a, {"--lr_scheduler_kwargs", "[1]"}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--lr_scheduler_kwargs")));
  EXPECT_THAT(ParseInto(&a, {"--seed", "1", "2"}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("argument --seed")));
  EXPECT_THAT(ParseInto(&a, {"stray"}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'stray'")));
}

TEST(ParserTest, UnknownFlagSuggestsClosest) {
  TrainingArguments a;
  EXPECT_THAT(ParseInto(&a, {"--lerning_rate", "1"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("unrecognized argument --lerning_rate; did you mean "
                                 "--learning_rate?")));
  EXPECT_THAT(ParseInto(&a, {"--no_log_on_each_nod"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("did you mean --no_log_on_each_node?")));
}

TEST(ParserTest, Seq2SeqFieldsOnlyWhenAsked) {
  TrainingArguments a;
  EXPECT_THAT(ParseInto(&a, {"--predict_with_generate"}, /*seq2seq=*/false),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--predict_with_generate")));
  ASSERT_OK(ParseInto(&a, {"--predict_with_generate", "--generation_num_beams", "4"}));
  EXPECT_TRUE(a.predict_with_generate());
  EXPECT_EQ(a.generation_num_beams(), 4);
}

TEST(ParserTest, SeveralGroupsInOneCommandLine) {
  // A second group: any message with FieldSpec options works; reuse TrainingArguments'
  // descriptor-free stand-in (FieldSpec itself has plain fields).
  TrainingArguments a;
  FieldSpec other;
  ArgParser p({.program = "prog"});
  p.AddGroup("TrainingArguments", &a).AddGroup("Other", &other);
  ASSERT_OK(p.Parse({"--seed", "3", "--doc", "hello", "--choices", "x", "y"}));
  EXPECT_EQ(a.seed(), 3);
  EXPECT_EQ(other.doc(), "hello");
  EXPECT_THAT(other.choices(), ::testing::ElementsAre("x", "y"));
  // A name defined by two groups is a programming error reported by Parse.
  TrainingArguments b;
  ArgParser dup({.program = "prog"});
  dup.AddGroup("A", &a).AddGroup("B", &b);
  EXPECT_THAT(dup.Parse({}), StatusIs(absl::StatusCode::kInternal, HasSubstr("--output_dir")));
}

TEST(ParserTest, LoneJsonFileIsTheWholeCommandLine) {
  std::string path = std::string(std::getenv("TEST_TMPDIR")) + "/args.json";
  FILE* f = fopen(path.c_str(), "w");
  fputs(R"({"output_dir": "o", "learning_rate": 1e-4, "do_train": true,
            "report_to": ["tensorboard"], "fsdp": "full_shard auto_wrap",
            "lr_scheduler_kwargs": {"num_cycles": 2}, "eval_steps": null})", f);
  fclose(f);
  TrainingArguments a;
  ASSERT_OK(ParseInto(&a, {path}));
  EXPECT_EQ(a.output_dir(), "o");
  EXPECT_DOUBLE_EQ(a.learning_rate(), 1e-4);
  EXPECT_TRUE(a.do_train());
  EXPECT_THAT(a.fsdp(), ::testing::ElementsAre("full_shard", "auto_wrap"));
  EXPECT_EQ(json::parse(a.lr_scheduler_kwargs()), json::parse(R"({"num_cycles": 2})"));
  f = fopen(path.c_str(), "w");
  fputs(R"({"output_dir": "o", "learning_rat": 1})", f);
  fclose(f);
  EXPECT_THAT(ParseInto(&a, {path}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("unknown key \"learning_rat\"; unrecognized argument "
                                 "--learning_rat; did you mean --learning_rate?")));
}

TEST(ParserTest, HelpListsEveryFieldWithDocAndDefault) {
  TrainingArguments a;
  ArgParser p({.program = "show_args", .seq2seq = true});
  p.AddGroup("TrainingArguments", &a);
  ASSERT_OK(p.Parse({"--help"}));
  EXPECT_TRUE(p.help_requested());
  const std::string help = p.Help();
  const auto* d = TrainingArguments::descriptor();
  for (int i = 0; i < d->field_count(); ++i) {
    EXPECT_THAT(help, HasSubstr("  --" + d->field(i)->name() + " ")) << d->field(i)->name();
    EXPECT_THAT(help, HasSubstr(SpecOf(d->field(i)).doc())) << d->field(i)->name();
  }
  EXPECT_THAT(help, HasSubstr("--learning_rate FLOAT\n      Initial learning rate for AdamW. "
                              "(default: 5e-05)"));
  EXPECT_THAT(help, HasSubstr("--no_log_on_each_node"));
  EXPECT_THAT(help, HasSubstr("--output_dir STR\n"));
  EXPECT_THAT(help, HasSubstr("(required)"));
  EXPECT_THAT(help, HasSubstr("--save_for_transformers_version {4.38,4.41}\n"));
  EXPECT_THAT(help, HasSubstr("(default: '4.38') [loom only: not an HF TrainingArguments field]"));
}

TEST(PythonValueTest, FloatsAndInts) {
  EXPECT_EQ(PythonFloat(5e-5), "5e-05");
  EXPECT_EQ(PythonFloat(3.0), "3.0");
  EXPECT_EQ(PythonFloat(1e-8), "1e-08");
  EXPECT_EQ(PythonFloat(0.999), "0.999");
  EXPECT_EQ(PythonFloat(1e16), "1e+16");
  EXPECT_THAT(ParsePythonInt("1_000"), ::loom::base::testing::IsOkAndHolds(1000));
  EXPECT_FALSE(ParsePythonInt("3.0").ok());
  EXPECT_THAT(ParsePythonFloat("1e-5"), ::loom::base::testing::IsOkAndHolds(1e-5));
  EXPECT_FALSE(ParsePythonFloat("0x10").ok());
  EXPECT_EQ(EditDistance("kitten", "sitting"), 3u);
}

TEST(ClosestNameTest, TheFirstClosestBelowTheBound) {
  const std::vector<std::string> names = {"num_epochs", "num_epoch_steps", "seed"};
  EXPECT_EQ(ClosestName("num_epoch", names), "num_epochs");
  EXPECT_EQ(ClosestName("sed", names), "seed");
  EXPECT_EQ(ClosestName("learning_rate", names), "");            // nothing within 3 edits
  EXPECT_EQ(ClosestName("seeds", {"seed", "weeds"}), "seed");      // ties: the first
  EXPECT_EQ(ClosestName("zzzz", {"seed"}, std::string::npos), "seed");  // no bound
  EXPECT_EQ(ClosestName("x", {}), "");
}

}  // namespace
}  // namespace loom::args
