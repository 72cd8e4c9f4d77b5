// --train_file / --validation_file / --test_file with run_glue's column and label rules.
#include <cstdlib>
#include <string>

#include "base/file_util.h"
#include "base/status_matchers.h"
#include "glue/data_files.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::glue {
namespace {

using ::loom::base::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string TempFile(const std::string& name, const std::string& contents) {
  const std::string path = std::string(std::getenv("TEST_TMPDIR")) + "/" + name;
  EXPECT_OK(base::WriteFileAtomically(path, contents));
  return path;
}

std::vector<int64_t> ClassIds(const GlueSplit& split) {
  std::vector<int64_t> ids;
  for (const GlueExample& e : split.examples) ids.push_back(e.class_id());
  return ids;
}

TEST(UserFilesTest, CsvWithQuotedTextAndStringLabels) {
  const std::string train = TempFile("a_train.csv",
                                     "sentence1,sentence2,label\n"
                                     "\"Hello, world\",\"He said \"\"hi\"\"\",pos\n"
                                     "plain,\"two\nlines\",neg\n"
                                     "x,y,neu\n");
  const std::string dev = TempFile("a_dev.csv", "label,sentence2,sentence1\nneg,b,a\n");
  ASSERT_OK_AND_ASSIGN(GlueData data, LoadDataFiles({.train_file = train, .validation_file = dev}));
  EXPECT_FALSE(data.is_regression);
  EXPECT_FALSE(data.labels_are_integers);
  EXPECT_THAT(data.label_list, ElementsAre("neg", "neu", "pos"));  // sorted
  EXPECT_EQ(data.num_labels, 3);
  EXPECT_EQ(data.label_to_id.at("pos"), 2);
  EXPECT_EQ(data.sentence1_key, "sentence1");
  EXPECT_EQ(data.sentence2_key, "sentence2");
  ASSERT_EQ(data.splits.size(), 2u);
  const GlueSplit& t = data.splits[0];
  ASSERT_EQ(t.examples.size(), 3u);
  EXPECT_EQ(t.examples[0].text_a, "Hello, world");
  EXPECT_EQ(t.examples[0].text_b, "He said \"hi\"");
  EXPECT_EQ(t.examples[1].text_b, "two\nlines");
  EXPECT_EQ(t.examples[2].idx, 2);
  EXPECT_THAT(ClassIds(t), ElementsAre(2, 0, 1));
  // Columns are found by name in the other files.
  EXPECT_EQ(data.splits[1].name, "validation");
  EXPECT_EQ(data.splits[1].examples.at(0).text_a, "a");
  EXPECT_EQ(data.splits[1].examples.at(0).text_b, "b");
  EXPECT_THAT(ClassIds(data.splits[1]), ElementsAre(0));
}

TEST(UserFilesTest, SentenceKeysAreFirstTwoNonLabelColumnsOrOne) {
  const std::string two =
      TempFile("b_train.csv", "label,review,title,extra\n1,r,t,e\n0,r2,t2,e2\n");
  ASSERT_OK_AND_ASSIGN(GlueData data, LoadDataFiles({.train_file = two, .validation_file = two}));
  EXPECT_EQ(data.sentence1_key, "review");
  EXPECT_EQ(data.sentence2_key, "title");
  EXPECT_EQ(data.splits[0].examples[0].text_b, "t");

  const std::string one = TempFile("c_train.csv", "text,label\nfine,1\n");
  ASSERT_OK_AND_ASSIGN(GlueData single, LoadDataFiles({.train_file = one, .validation_file = one}));
  EXPECT_EQ(single.sentence1_key, "text");
  EXPECT_FALSE(single.sentence2_key.has_value());
  EXPECT_FALSE(single.splits[0].examples[0].text_b.has_value());
}

TEST(UserFilesTest, IntegerLabelsSortNumericallyAndMinusOneStays) {
  const std::string train = TempFile("d_train.csv", "text,label\na,10\nb,2\nc,-1\nd,2\n");
  ASSERT_OK_AND_ASSIGN(GlueData data,
                       LoadDataFiles({.train_file = train, .validation_file = train}));
  EXPECT_TRUE(data.labels_are_integers);
  EXPECT_THAT(data.int_label_list, ElementsAre(-1, 2, 10));
  EXPECT_THAT(data.label_list, ElementsAre("-1", "2", "10"));
  EXPECT_EQ(data.num_labels, 3);  // run_glue counts -1 among the unique labels
  EXPECT_THAT(ClassIds(data.splits[0]), ElementsAre(2, 1, -1, 1));
}

TEST(UserFilesTest, FloatLabelsMeanRegression) {
  const std::string train = TempFile("e_train.csv", "s,label\na,1\nb,2.5\nc,1e-1\n");
  const std::string test = TempFile("e_test.csv", "s\nq\n");
  ASSERT_OK_AND_ASSIGN(
      GlueData data,
      LoadDataFiles({.train_file = train, .validation_file = train, .test_file = test}));
  EXPECT_TRUE(data.is_regression);
  EXPECT_EQ(data.num_labels, 1);
  EXPECT_TRUE(data.label_list.empty());
  EXPECT_EQ(data.splits[0].examples[0].score(), 1.0);
  EXPECT_EQ(data.splits[0].examples[1].score(), 2.5);
  EXPECT_EQ(data.splits[0].examples[2].score(), 0.1);
  ASSERT_EQ(data.splits.size(), 3u);
  EXPECT_EQ(data.splits[2].name, "test");
  EXPECT_FALSE(data.splits[2].examples.at(0).has_label());  // no label column
}

TEST(UserFilesTest, JsonLinesColumnsInOrderOfFirstAppearance) {
  const std::string train = TempFile("f_train.jsonl",
                                     "{\"label\": 1, \"premise\": \"p1\", \"hypothesis\": \"h1\"}\n"
                                     "\n"
                                     "{\"idx\": 7, \"hypothesis\": \"h2\", \"label\": 0, "
                                     "\"premise\": \"p2\"}\n");
  // 1.0 in the validation file equals the training label 1 (as a Python dict lookup does).
  const std::string dev =
      TempFile("f_dev.jsonl", "{\"premise\": \"a\", \"hypothesis\": \"b\", \"label\": 1.0}\n");
  ASSERT_OK_AND_ASSIGN(GlueData data, LoadDataFiles({.train_file = train, .validation_file = dev}));
  EXPECT_EQ(data.sentence1_key, "premise");
  EXPECT_EQ(data.sentence2_key, "hypothesis");
  EXPECT_TRUE(data.labels_are_integers);
  EXPECT_THAT(data.int_label_list, ElementsAre(0, 1));
  ASSERT_EQ(data.splits[0].examples.size(), 2u);
  EXPECT_EQ(data.splits[0].examples[1].text_a, "p2");
  EXPECT_EQ(data.splits[0].examples[1].text_b, "h2");
  EXPECT_THAT(ClassIds(data.splits[0]), ElementsAre(1, 0));
  EXPECT_THAT(ClassIds(data.splits[1]), ElementsAre(1));
}

TEST(UserFilesTest, JsonListOfRecordsAndJsonField) {
  const std::string list =
      TempFile("g_train.json",
               "[{\"text\": \"a\", \"label\": \"yes\"},\n {\"text\": \"b\", \"label\": \"no\"}]");
  ASSERT_OK_AND_ASSIGN(GlueData data, LoadDataFiles({.train_file = list, .validation_file = list}));
  EXPECT_THAT(data.label_list, ElementsAre("no", "yes"));
  EXPECT_THAT(ClassIds(data.splits[0]), ElementsAre(1, 0));

  const std::string object =
      TempFile("h_train.json",
               "{\"version\": 2,\n \"data\": [{\"text\": \"a\", \"label\": 0.5}, {\"text\": \"b\", "
               "\"label\": 2}]}\n");
  EXPECT_THAT(LoadDataFiles({.train_file = object, .validation_file = object}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("h_train.json: the file is one JSON object (fields: version, "
                                 "data), not records")));
  ASSERT_OK_AND_ASSIGN(
      GlueData field,
      LoadDataFiles({.train_file = object, .validation_file = object, .json_field = "data"}));
  EXPECT_TRUE(field.is_regression);  // a JSON float label
  EXPECT_EQ(field.splits[0].examples[0].score(), 0.5);
  EXPECT_EQ(field.splits[0].examples[1].score(), 2.0);

  const std::string columns =
      TempFile("i_train.json", "{\"d\": {\"text\": [\"a\", \"b\"], \"label\": [3, 4]}}");
  ASSERT_OK_AND_ASSIGN(
      GlueData by_column,
      LoadDataFiles({.train_file = columns, .validation_file = columns, .json_field = "d"}));
  EXPECT_THAT(ClassIds(by_column.splits[0]), ElementsAre(0, 1));
  EXPECT_EQ(by_column.splits[0].examples[1].text_a, "b");
}

TEST(UserFilesTest, ExtensionRulesOfRunGlue) {
  const std::string csv = TempFile("j_train.csv", "text,label\na,1\n");
  const std::string json = TempFile("j_dev.json", "{\"text\": \"a\", \"label\": 1}\n");
  EXPECT_THAT(LoadDataFiles({.train_file = csv, .validation_file = json}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("j_dev.json: `validation_file` should have the same extension "
                                 "(csv or json) as `train_file` (csv)")));
  EXPECT_THAT(LoadDataFiles({.train_file = csv, .validation_file = csv, .test_file = json}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--test_file=" + json + ": `test_file` should have the same")));
  EXPECT_THAT(LoadDataFiles({.train_file = "x.txt", .validation_file = "y.txt"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--train_file=x.txt: `train_file` should be a csv or a json "
                                 "file")));
  EXPECT_THAT(LoadDataFiles({.train_file = csv}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--train_file and --validation_file")));
  EXPECT_THAT(LoadDataFiles({.train_file = csv, .validation_file = "/nonexistent/v.csv"}),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("/nonexistent/v.csv")));
}

TEST(UserFilesTest, TsvDataFiles) {
  const std::string train = TempFile("k_train.tsv", "a\tb\tlabel\n\"x\ty\"\tz\t0\n");
  ASSERT_OK_AND_ASSIGN(GlueData data,
                       LoadDataFiles({.train_file = train, .validation_file = train}));
  EXPECT_EQ(data.splits[0].examples.at(0).text_a, "x\ty");
  EXPECT_EQ(data.splits[0].examples.at(0).text_b, "z");
}

TEST(UserFilesTest, ErrorsNameFileAndLine) {
  const std::string no_label = TempFile("l_train.csv", "text,target\na,1\n");
  EXPECT_THAT(LoadDataFiles({.train_file = no_label, .validation_file = no_label}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("l_train.csv: no column 'label'; run_glue takes the labels from "
                                 "a column named 'label' (columns: text, target)")));
  const std::string ragged = TempFile("m_train.csv", "text,label\na,1\nb,1,extra\n");
  EXPECT_THAT(LoadDataFiles({.train_file = ragged, .validation_file = ragged}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("m_train.csv:3: the row has 3 fields but the header (line 1) "
                                 "names 2 columns")));
  const std::string train = TempFile("n_train.csv", "text,label\na,pos\nb,neg\n");
  const std::string dev = TempFile("n_dev.csv", "text,label\na,pos\nb,meh\n");
  EXPECT_THAT(LoadDataFiles({.train_file = train, .validation_file = dev}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("n_dev.csv:3: label \"meh\" is not among the training labels "
                                 "(neg, pos)")));
  const std::string empty_label = TempFile("o_train.csv", "text,label\na,1\nb,\n");
  EXPECT_THAT(
      LoadDataFiles({.train_file = empty_label, .validation_file = empty_label}),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("o_train.csv:3: empty 'label'")));
  const std::string mixed = TempFile(
      "p_train.jsonl", "{\"text\": \"a\", \"label\": 1}\n{\"text\": \"b\", \"label\": \"x\"}\n");
  EXPECT_THAT(LoadDataFiles({.train_file = mixed, .validation_file = mixed}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("p_train.jsonl:2: 'label' is a string but earlier labels are "
                                 "numbers")));
  const std::string number_text =
      TempFile("q_train.jsonl", "{\"id\": 1, \"text\": \"a\", \"label\": 1}\n");
  EXPECT_THAT(LoadDataFiles({.train_file = number_text, .validation_file = number_text}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("q_train.jsonl:1: column 'id' is number, not text; run_glue "
                                 "tokenizes the sentence columns 'id' and 'text'")));
  const std::string broken = TempFile("r_train.jsonl", "{\"text\": \"a\", \"label\": 1}\n{oops\n");
  EXPECT_THAT(
      LoadDataFiles({.train_file = broken, .validation_file = broken}),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("r_train.jsonl:2: not a JSON value")));
  const std::string bad_record = TempFile("s_train.json", "[{\"text\": \"a\", \"label\": 1}, 5]");
  EXPECT_THAT(LoadDataFiles({.train_file = bad_record, .validation_file = bad_record}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("s_train.json:record 2: expected a JSON object")));
  const std::string missing = TempFile("t_train.jsonl",
                                       "{\"a\": \"x\", \"b\": \"y\", \"label\": 1}\n"
                                       "{\"a\": \"x\", \"label\": 1}\n");
  EXPECT_THAT(LoadDataFiles({.train_file = missing, .validation_file = missing}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("t_train.jsonl:2: column 'b' is missing or null, not text")));
  const std::string unterminated = TempFile("u_train.csv", "text,label\n\"open,1\n");
  EXPECT_THAT(LoadDataFiles({.train_file = unterminated, .validation_file = unterminated}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("u_train.csv:2: unterminated quoted field")));
}

// Found by //tests/fuzz:glue_data_fuzzer: a CSV label that is not UTF-8 made the error message's
// nlohmann dump() throw (type_error 316) instead of returning the error.
TEST(UserFilesTest, LabelsThatAreNotUtf8AreShownInErrors) {
  const std::string train = TempFile("v_train.csv", "text,label\na,pos\nb,neg\n");
  const std::string dev = TempFile("v_dev.csv", "text,label\na,contra\xa0\x98\n");
  EXPECT_THAT(LoadDataFiles({.train_file = train, .validation_file = dev}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("v_dev.csv:2: label \"contra\xEF\xBF\xBD\xEF\xBF\xBD\" is "
                                 "not among the training labels (neg, pos)")));
  const std::string ints = TempFile("w_train.csv", "text,label\na,1\nb,0\n");
  const std::string bad_int = TempFile("w_dev.csv", "text,label\na,1\xff\n");
  EXPECT_THAT(LoadDataFiles({.train_file = ints, .validation_file = bad_int}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("w_dev.csv:2: 'label' \"1\xEF\xBF\xBD\" is not a integer")));
  const std::string floats = TempFile("x_train.csv", "text,label\na,0.5\nb,1.5\n");
  const std::string bad_float = TempFile("x_dev.csv", "text,label\na,\xfe\n");
  EXPECT_THAT(LoadDataFiles({.train_file = floats, .validation_file = bad_float}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("x_dev.csv:2: 'label' \"\xEF\xBF\xBD\" is not a number")));
}

}  // namespace
}  // namespace loom::glue
