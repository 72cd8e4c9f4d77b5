#include "examples/translation/translation_data.h"

#include <cstdlib>
#include <string>

#include "base/file_util.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::examples::translation {
namespace {

using ::loom::base::testing::StatusIs;
using ::testing::HasSubstr;

std::string Write(const std::string& name, const std::string& text) {
  const std::string path = std::string(std::getenv("TEST_TMPDIR")) + "/" + name;
  EXPECT_OK(base::WriteFileAtomically(path, text));
  return path;
}

TEST(TranslationDataTest, ReadsWmt16JsonLinesAndArrays) {
  const std::string lines = Write(
      "train.json",
      "{\"translation\": {\"en\": \"The house.\", \"ro\": \"Casa.\"}}\n\n"
      "{\"translation\": {\"ro\": \"Pisica doarme \\u0219i visează.\", \"en\": \"The cat sleeps.\"}}\n");
  ASSERT_OK_AND_ASSIGN(auto pairs, ReadTranslationFile(lines, "--train_file", "en", "ro"));
  ASSERT_EQ(pairs.size(), 2u);
  EXPECT_EQ(pairs[1].source, "The cat sleeps.");
  EXPECT_EQ(pairs[1].target, "Pisica doarme și visează.");
  const std::string array =
      Write("a.jsonl", "[{\"translation\": {\"en\": \"a\", \"ro\": \"b\"}}]");
  ASSERT_OK_AND_ASSIGN(pairs, ReadTranslationFile(array, "--test_file", "ro", "en"));
  EXPECT_EQ(pairs[0].source, "b");
}

TEST(TranslationDataTest, ErrorsNameTheFileLineAndFix) {
  const std::string no_field = Write("n.json", "{\"translation\": {\"en\": \"a\", \"ro\": \"b\"}}\n"
                                               "{\"text\": \"a\"}\n");
  EXPECT_THAT(ReadTranslationFile(no_field, "--train_file", "en", "ro"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("n.json:2: no \"translation\" object")));
  const std::string no_lang = Write("l.json", "{\"translation\": {\"en\": \"a\", \"de\": \"b\"}}\n");
  EXPECT_THAT(ReadTranslationFile(no_lang, "--validation_file", "en", "ro"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("l.json:1: \"translation\" has no \"ro\" (--target_lang); it "
                                 "has: de, en")));
  const std::string bad = Write("b.json", "{not json\n");
  EXPECT_THAT(ReadTranslationFile(bad, "--train_file", "en", "ro"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("b.json:1: not valid JSON")));
  EXPECT_THAT(ReadTranslationFile("x.csv", "--train_file", "en", "ro"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("`train_file` should be a json file")));
}

}  // namespace
}  // namespace loom::examples::translation
