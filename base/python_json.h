// Python's json.dumps(value, indent=indent, sort_keys=sort_keys) text for JSON values loom
// writes into files Python tools read (trainer_state.json, config.json, *_results.json): floats
// spelled as Python's repr (base/python_float.h), NaN / Infinity / -Infinity as Python's json
// writes them, ", " and ": " separators without indent, "," and ": " with it; indent < 0 is
// json.dumps' indent=None.
//
// Example:
//   PyJsonDumps(nlohmann::ordered_json{{"lr", 5e-05}}, 2, /*sort_keys=*/true)
//     == "{\n  \"lr\": 5e-05\n}"
#ifndef LOOM_BASE_PYTHON_JSON_H_
#define LOOM_BASE_PYTHON_JSON_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace loom::base {

std::string PyJsonDumps(const nlohmann::ordered_json& value, int indent, bool sort_keys);

// One float as json.dumps writes it: repr(), or NaN / Infinity / -Infinity.
std::string PyJsonFloatRepr(double x);

// json.loads of text Python's json module wrote: standard JSON plus the bare tokens NaN,
// Infinity and -Infinity as numbers (json.dumps writes them by default, e.g. a logged
// grad_norm of a step whose gradients overflowed). Invalid JSON, and arrays / objects nested
// deeper than kMaxPythonJsonDepth (what reads and writes it back recurses per level), are
// InvalidArgument.
inline constexpr int kMaxPythonJsonDepth = 512;
absl::StatusOr<nlohmann::ordered_json> ParsePythonJson(absl::string_view text);

}  // namespace loom::base

#endif  // LOOM_BASE_PYTHON_JSON_H_
