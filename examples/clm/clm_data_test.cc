#include "examples/clm/clm_data.h"

#include <cstdlib>
#include <string>
#include <vector>

#include "base/file_util.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::examples::clm {
namespace {

using ::loom::base::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string Write(const std::string& name, const std::string& text) {
  const std::string path =
      std::string(getenv("TEST_TMPDIR") ? getenv("TEST_TMPDIR") : "/tmp") + "/" + name;
  EXPECT_OK(base::WriteFileAtomically(path, text));
  return path;
}

TEST(ClmDataTest, TextLinesKeepTheirLinebreaksAndUniversalNewlines) {
  const std::string path = Write("a.txt", "one\r\ntwo\rthree\n\nlast");
  ASSERT_OK_AND_ASSIGN(TextColumn keep, ReadTextColumn(path, "--train_file", true));
  EXPECT_THAT(keep.texts, ElementsAre("one\n", "two\n", "three\n", "\n", "last"));
  ASSERT_OK_AND_ASSIGN(TextColumn drop, ReadTextColumn(path, "--train_file", false));
  EXPECT_THAT(drop.texts, ElementsAre("one", "two", "three", "", "last"));
}

TEST(ClmDataTest, JsonLinesListsAndTheColumnRule) {
  ASSERT_OK_AND_ASSIGN(
      TextColumn lines,
      ReadTextColumn(Write("a.jsonl", "{\"id\": 1, \"text\": \"a\"}\n\n{\"id\": 2, \"text\": \"b\"}\n"),
                     "--train_file", true));
  EXPECT_EQ(lines.column, "text");
  EXPECT_THAT(lines.texts, ElementsAre("a", "b"));
  ASSERT_OK_AND_ASSIGN(
      TextColumn list,
      ReadTextColumn(Write("a.json", "[{\"body\": \"x\", \"id\": \"1\"}, {\"body\": \"y\", \"id\": \"2\"}]"),
                     "--train_file", true));
  EXPECT_EQ(list.column, "body");  // no "text": the first column
  EXPECT_THAT(list.texts, ElementsAre("x", "y"));
  EXPECT_THAT(ReadTextColumn(Write("b.jsonl", "{\"text\": 3}\n"), "--train_file", true),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("record 1")));
  EXPECT_THAT(ReadTextColumn(Write("c.jsonl", "{\"text\": \"a\"}\nnot json\n"), "--validation_file", true),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--validation_file")));
}

TEST(ClmDataTest, CsvQuotingAndErrors) {
  ASSERT_OK_AND_ASSIGN(
      TextColumn csv,
      ReadTextColumn(Write("a.csv", "id,text\n1,plain\n\n2,\"has, comma\nand \"\"quote\"\"\"\r\n"),
                     "--train_file", true));
  EXPECT_THAT(csv.texts, ElementsAre("plain", "has, comma\nand \"quote\""));
  // A quote inside an unquoted field is a character; "\r\n" inside quotes stays as written.
  ASSERT_OK_AND_ASSIGN(
      TextColumn literal,
      ReadTextColumn(Write("q.csv", "text,id\r\na 5\" screen,1\r\n\"two\r\nlines\",2\r\n"),
                     "--train_file", true));
  EXPECT_THAT(literal.texts, ElementsAre("a 5\" screen", "two\r\nlines"));
  EXPECT_THAT(ReadTextColumn(Write("na.csv", "id,text\n1,None\n"), "--train_file", true),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("\"None\"")));
  EXPECT_THAT(ReadTextColumn(Write("b.csv", "text\n\"open\n"), "--train_file", true),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("never closes")));
  EXPECT_THAT(ReadTextColumn(Write("c.csv", "id,text\n1,\n"), "--train_file", true),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("NaN")));
  EXPECT_THAT(ReadTextColumn(Write("d.csv", "id,text\n1,a,b\n"), "--train_file", true),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("3 fields")));
  EXPECT_THAT(ReadTextColumn(Write("e.txt", std::string("\xff\xfe")), "--train_file", true),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("UTF-8")));
  EXPECT_THAT(ReadTextColumn(Write("f.txt", ""), "--train_file", true),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no examples")));
}

TEST(ClmDataTest, PercentSplitRoundsToTheClosestTiesToEven) {
  std::vector<std::string> texts;
  for (int i = 0; i < 30; ++i) texts.push_back(std::to_string(i));
  // 5% of 30 = 1.5 -> 2 (ties to even); 5% of 50 = 2.5 -> 2.
  EXPECT_EQ(SplitPercent(texts, 5).first.size(), 2u);
  texts.resize(50, "x");
  const auto [validation, train] = SplitPercent(texts, 5);
  EXPECT_EQ(validation.size(), 2u);
  EXPECT_EQ(train.size(), 48u);
  EXPECT_EQ(train.front(), "2");
}

}  // namespace
}  // namespace loom::examples::clm
