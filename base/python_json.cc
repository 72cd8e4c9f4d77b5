#include "base/python_json.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/match.h"
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

// Stand-ins for the non-standard tokens while nlohmann parses the text: strings that start
// with a control character, which JSON text can only hold escaped.
constexpr char kNanMarker[] = "\x01loom:NaN";
constexpr char kInfMarker[] = "\x01loom:Infinity";
constexpr char kNegInfMarker[] = "\x01loom:-Infinity";

void RestoreNonFinite(ojson* v) {
  if (v->is_string()) {
    const std::string& s = v->get_ref<const std::string&>();
    if (s == kNanMarker) *v = std::numeric_limits<double>::quiet_NaN();
    else if (s == kInfMarker) *v = std::numeric_limits<double>::infinity();
    else if (s == kNegInfMarker) *v = -std::numeric_limits<double>::infinity();
    return;
  }
  if (v->is_structured()) {
    for (auto& child : *v) RestoreNonFinite(&child);
  }
}

}  // namespace

absl::StatusOr<ojson> ParsePythonJson(absl::string_view text) {
  std::string standard;
  standard.reserve(text.size());
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      standard += c;
      if (c == '\\' && i + 1 < text.size()) {
        standard += text[++i];
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') in_string = true;
    const absl::string_view rest = text.substr(i);
    const char* marker = nullptr;
    size_t length = 0;
    if (absl::StartsWith(rest, "NaN")) {
      marker = kNanMarker, length = 3;
    } else if (absl::StartsWith(rest, "Infinity")) {
      marker = kInfMarker, length = 8;
    } else if (absl::StartsWith(rest, "-Infinity")) {
      marker = kNegInfMarker, length = 9;
    }
    if (marker == nullptr) {
      standard += c;
      continue;
    }
    standard += ojson(std::string(marker)).dump();
    i += length - 1;
  }
  ojson parsed = ojson::parse(standard, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) {
    return absl::InvalidArgumentError("not valid JSON (Python's json.loads would refuse it)");
  }
  RestoreNonFinite(&parsed);
  return parsed;
}

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
