// libFuzzer target for base/python_json.h: json.loads-compatible reading (ParsePythonJson,
// standard JSON plus NaN / Infinity / -Infinity) and json.dumps-compatible writing
// (PyJsonDumps). Any bytes must give an error or a value that
//   * equals what nlohmann's strict parser reads, when the text is standard JSON (the
//     non-standard tokens must not change a standard document);
//   * is written (indent 2 sorted, and indent=None unsorted) as text that reads back to a value
//     written the same way.
// Any crash, sanitizer report, leak or uncaught exception is a finding.
#include <cstddef>
#include <cstdint>
#include <string>

#include "base/python_json.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using json = nlohmann::ordered_json;
  const std::string text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<json> value = loom::base::ParsePythonJson(text);
  const json strict = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!strict.is_discarded()) {
    fuzz::Check(value.ok(), "standard JSON is accepted");
    fuzz::Check(*value == strict, "standard JSON reads as the strict parser reads it");
  }
  if (!value.ok()) return 0;
  for (const auto& [indent, sort_keys] : {std::pair<int, bool>{2, true}, {-1, false}}) {
    const std::string written = loom::base::PyJsonDumps(*value, indent, sort_keys);
    absl::StatusOr<json> back = loom::base::ParsePythonJson(written);
    fuzz::Check(back.ok(), "written JSON reads back");
    fuzz::Check(loom::base::PyJsonDumps(*back, indent, sort_keys) == written,
                "PyJsonDumps(ParsePythonJson(PyJsonDumps(v))) == PyJsonDumps(v)");
  }
  return 0;
}
