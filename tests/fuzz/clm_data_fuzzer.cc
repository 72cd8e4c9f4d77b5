// libFuzzer target for run_clm's data-file parsers (examples/clm/clm_data.h): any bytes, read as
// a .txt, .json, .jsonl or .csv file (the first input byte picks which) with and without
// keep_linebreaks, must give an error or a column whose texts are valid UTF-8 and, for .txt
// files, join back to the input (universal newlines applied). Violations abort, which
// libFuzzer reports as a crash.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "examples/clm/clm_data.h"
#include "text/unicode.h"

namespace {

void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "invariant violated: %s\n", what);
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static const char* kNames[] = {"f.txt", "f.json", "f.jsonl", "f.csv"};
  const std::string path = kNames[data[0] % 4];
  const bool keep = (data[0] & 4) != 0;
  const std::string raw(reinterpret_cast<const char*>(data + 1), size - 1);
  absl::StatusOr<loom::examples::clm::TextColumn> column =
      loom::examples::clm::ParseTextColumn(raw, path, "--train_file", keep);
  if (!column.ok()) return 0;
  Check(!column->texts.empty(), "a parsed file has examples");
  std::string joined;
  for (const std::string& t : column->texts) {
    Check(loom::text::DecodeUtf8(t).ok(), "every example is UTF-8");
    joined += t;
  }
  if (path == "f.txt" && keep) {
    std::string expected;
    for (size_t i = 0; i < raw.size(); ++i) {
      if (raw[i] != '\r') {
        expected.push_back(raw[i]);
      } else {
        expected.push_back('\n');
        if (i + 1 < raw.size() && raw[i + 1] == '\n') ++i;
      }
    }
    Check(joined == expected, "text lines with their breaks join back to the file");
  }
  return 0;
}
