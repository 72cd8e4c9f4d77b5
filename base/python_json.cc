#include "base/python_json.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>
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

// The non-standard tokens are replaced by number literals that occur nowhere in the text (so no
// number or string of the document can be mistaken for one), surrounded by spaces (so a
// replacement cannot merge with a neighbouring number); a SAX handler that builds the value as
// nlohmann's own parser does turns those literals back into NaN and the infinities.
class PythonJsonSax {
 public:
  PythonJsonSax(ojson* root, std::string nan, std::string inf, std::string neg_inf)
      : dom_(*root, /*allow_exceptions=*/false),
        nan_(std::move(nan)),
        inf_(std::move(inf)),
        neg_inf_(std::move(neg_inf)) {}

  bool null() { return dom_.null(); }
  bool boolean(bool v) { return dom_.boolean(v); }
  bool number_integer(ojson::number_integer_t v) { return dom_.number_integer(v); }
  bool number_unsigned(ojson::number_unsigned_t v) { return dom_.number_unsigned(v); }
  bool number_float(ojson::number_float_t v, const std::string& lexeme) {
    if (lexeme == nan_) v = std::numeric_limits<double>::quiet_NaN();
    if (lexeme == inf_) v = std::numeric_limits<double>::infinity();
    if (lexeme == neg_inf_) v = -std::numeric_limits<double>::infinity();
    return dom_.number_float(v, lexeme);
  }
  bool string(std::string& v) { return dom_.string(v); }
  bool binary(ojson::binary_t& v) { return dom_.binary(v); }
  bool start_object(std::size_t n) { return dom_.start_object(n); }
  bool key(std::string& k) { return dom_.key(k); }
  bool end_object() { return dom_.end_object(); }
  bool start_array(std::size_t n) { return dom_.start_array(n); }
  bool end_array() { return dom_.end_array(); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) {
    return false;
  }

 private:
  nlohmann::detail::json_sax_dom_parser<ojson> dom_;
  const std::string nan_, inf_, neg_inf_;
};

// "0E-0", "0E-00", ...: the first such literal (with `tag` as its sign of exponent) that the text
// does not contain.
std::string UnusedLiteral(absl::string_view text, char tag) {
  std::string literal = std::string("0E") + tag + "0";
  while (absl::StrContains(text, literal)) literal += '0';
  return literal;
}

}  // namespace

absl::StatusOr<ojson> ParsePythonJson(absl::string_view text) {
  const std::string nan = UnusedLiteral(text, '-');
  const std::string inf = UnusedLiteral(text, '+');
  const std::string neg_inf = "-" + inf;
  std::string standard;
  standard.reserve(text.size());
  bool in_string = false;
  int depth = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (!in_string && (c == '[' || c == '{') && ++depth > kMaxPythonJsonDepth) {
      return absl::InvalidArgumentError(absl::StrCat("JSON nested deeper than ",
                                                     kMaxPythonJsonDepth,
                                                     " levels (refused: reading and writing "
                                                     "it back would recurse that deep)"));
    }
    if (!in_string && (c == ']' || c == '}')) --depth;
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
    const std::string* literal = nullptr;
    size_t length = 0;
    if (absl::StartsWith(rest, "NaN")) {
      literal = &nan, length = 3;
    } else if (absl::StartsWith(rest, "Infinity")) {
      literal = &inf, length = 8;
    } else if (absl::StartsWith(rest, "-Infinity")) {
      literal = &neg_inf, length = 9;
    }
    if (literal == nullptr) {
      standard += c;
      continue;
    }
    absl::StrAppend(&standard, " ", *literal, " ");
    i += length - 1;
  }
  ojson parsed;
  PythonJsonSax sax(&parsed, nan, inf, neg_inf);
  if (!ojson::sax_parse(standard, &sax) || parsed.is_discarded()) {
    return absl::InvalidArgumentError("not valid JSON (Python's json.loads would refuse it)");
  }
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
