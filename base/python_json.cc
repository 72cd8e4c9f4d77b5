#include "base/python_json.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/python_float.h"

namespace loom::base {
namespace {

using ojson = nlohmann::ordered_json;

void DumpTo(const ojson& v, int indent, bool sort_keys, int depth, std::string* out) {
  const std::string nl = indent >= 0 ? "\n" : "";
  const std::string pad = indent >= 0 ? std::string(indent * (depth + 1), ' ') : "";
  const std::string pad_end = indent >= 0 ? std::string(indent * depth, ' ') : "";
  const std::string item_sep = indent >= 0 ? "," : ", ";
  switch (v.type()) {
    case ojson::value_t::object: {
      if (v.empty()) {
        *out += "{}";
        return;
      }
      std::vector<std::string> keys;
      for (auto it = v.begin(); it != v.end(); ++it) keys.push_back(it.key());
      if (sort_keys) std::sort(keys.begin(), keys.end());
      *out += "{" + nl;
      for (size_t i = 0; i < keys.size(); ++i) {
        *out += pad + ojson(keys[i]).dump() + ": ";
        DumpTo(v.at(keys[i]), indent, sort_keys, depth + 1, out);
        if (i + 1 < keys.size()) *out += item_sep;
        *out += nl;
      }
      *out += pad_end + "}";
      return;
    }
    case ojson::value_t::array: {
      if (v.empty()) {
        *out += "[]";
        return;
      }
      *out += "[" + nl;
      for (size_t i = 0; i < v.size(); ++i) {
        *out += pad;
        DumpTo(v[i], indent, sort_keys, depth + 1, out);
        if (i + 1 < v.size()) *out += item_sep;
        *out += nl;
      }
      *out += pad_end + "]";
      return;
    }
    case ojson::value_t::number_float:
      *out += PyJsonFloatRepr(v.get<double>());
      return;
    default:
      // Python's json.dumps escapes non-ASCII by default (ensure_ascii=True).
      *out += v.dump(-1, ' ', /*ensure_ascii=*/true);
      return;
  }
}

// Python str() of a formatted metric value (used by log_metrics).
}  // namespace

std::string PyJsonFloatRepr(double x) {
  if (std::isnan(x)) return "NaN";
  if (std::isinf(x)) return x > 0 ? "Infinity" : "-Infinity";
  return PythonFloatRepr(x);
}

std::string PyJsonDumps(const nlohmann::ordered_json& value, int indent, bool sort_keys) {
  std::string out;
  DumpTo(value, indent, sort_keys, 0, &out);
  return out;
}

}  // namespace loom::base
