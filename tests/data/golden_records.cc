#include "tests/data/golden_records.h"

#include <cstdlib>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "base/file_util.h"
#include "gtest/gtest.h"

namespace loom::data::testing {
namespace {

std::string RunfilePath(const std::string& rel) {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* workspace = std::getenv("TEST_WORKSPACE");
  if (srcdir == nullptr || workspace == nullptr) return rel;
  return std::string(srcdir) + "/" + workspace + "/" + rel;
}

GoldenRecord ParseLine(absl::string_view line) {
  std::pair<absl::string_view, absl::string_view> head_numbers = absl::StrSplit(line, " : ");
  GoldenRecord r;
  bool first = true;
  for (absl::string_view word : absl::StrSplit(head_numbers.first, ' ', absl::SkipEmpty())) {
    if (first) {
      r.kind = std::string(word);
      first = false;
      continue;
    }
    std::pair<std::string, std::string> kv = absl::StrSplit(word, '=');
    r.fields.insert(kv);
  }
  for (absl::string_view num : absl::StrSplit(head_numbers.second, ' ', absl::SkipEmpty())) {
    int64_t v = 0;
    EXPECT_TRUE(absl::SimpleAtoi(num, &v)) << line;
    r.numbers.push_back(v);
  }
  return r;
}

}  // namespace

std::string GoldenRecord::Describe() const {
  std::string s = kind;
  for (const auto& [k, v] : fields) s += " " + k + "=" + v;
  return s;
}

std::vector<GoldenRecord> LoadGoldenRecords(const std::string& runfile) {
  absl::StatusOr<std::string> text = base::ReadFile(RunfilePath(runfile));
  EXPECT_TRUE(text.ok()) << text.status();
  std::vector<GoldenRecord> records;
  if (!text.ok()) return records;
  for (absl::string_view line : absl::StrSplit(*text, '\n', absl::SkipEmpty())) {
    if (line[0] != '#') records.push_back(ParseLine(line));
  }
  return records;
}

int64_t Int(const GoldenRecord& r, const std::string& key) {
  int64_t v = 0;
  EXPECT_TRUE(absl::SimpleAtoi(r.fields.at(key), &v)) << key << " in " << r.Describe();
  return v;
}

uint64_t Uint(const GoldenRecord& r, const std::string& key) {
  uint64_t v = 0;
  EXPECT_TRUE(absl::SimpleAtoi(r.fields.at(key), &v)) << key << " in " << r.Describe();
  return v;
}

}  // namespace loom::data::testing
