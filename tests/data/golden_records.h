// The golden files of //tests/data (written by make_sampler_golden.py and
// make_shard_order_golden.py): one record a line, `kind key=value ... : n n n ...`; lines
// starting with '#' are comments. LoadGoldenRecords reads one from the test's runfiles; a file or
// number that does not parse is a test failure (gtest's EXPECT), never a crash.
//
// Example:
//   for (const GoldenRecord& r : LoadGoldenRecords("tests/data/testdata/sampler_golden.txt"))
//     if (r.kind == "random") EXPECT_EQ(Sampler(Int(r, "n")).Indices(0), r.numbers) << r.Describe();
#ifndef LOOM_TESTS_DATA_GOLDEN_RECORDS_H_
#define LOOM_TESTS_DATA_GOLDEN_RECORDS_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace loom::data::testing {

struct GoldenRecord {
  std::string kind;
  std::map<std::string, std::string> fields;
  std::vector<int64_t> numbers;

  std::string Describe() const;  // the record's head, for messages
};

std::vector<GoldenRecord> LoadGoldenRecords(const std::string& runfile);
int64_t Int(const GoldenRecord& r, const std::string& key);
uint64_t Uint(const GoldenRecord& r, const std::string& key);

}  // namespace loom::data::testing

#endif  // LOOM_TESTS_DATA_GOLDEN_RECORDS_H_
