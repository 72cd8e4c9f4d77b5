#include "hpsearch/distribution.h"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/python_float.h"
#include "base/python_json.h"
#include "base/status_macros.h"
#include "glog/logging.h"

namespace loom::hpsearch {
namespace {

using base::PythonFloatRepr;

absl::Status Invalid(const std::string& name, const std::string& message) {
  return absl::InvalidArgumentError(absl::StrCat("parameter \"", name, "\": ", message));
}

// A finite double as an exact decimal mantissa * 10^exponent, from its shortest repr (what
// Python's decimal.Decimal(str(x)) holds); nullopt when the mantissa does not fit.
struct Decimal {
  __int128 mantissa = 0;
  int exponent = 0;
};
std::optional<Decimal> ToDecimal(double x) {
  const std::string repr = PythonFloatRepr(x);
  Decimal d;
  bool negative = false;
  size_t i = 0;
  if (i < repr.size() && repr[i] == '-') negative = true, ++i;
  int digits_after_point = 0;
  bool after_point = false;
  for (; i < repr.size() && repr[i] != 'e'; ++i) {
    if (repr[i] == '.') {
      after_point = true;
      continue;
    }
    if (repr[i] < '0' || repr[i] > '9') return std::nullopt;
    d.mantissa = d.mantissa * 10 + (repr[i] - '0');
    if (d.mantissa > (static_cast<__int128>(1) << 100)) return std::nullopt;
    if (after_point) ++digits_after_point;
  }
  int exp10 = 0;
  if (i < repr.size()) exp10 = std::stoi(repr.substr(i + 1));
  d.exponent = exp10 - digits_after_point;
  if (negative) d.mantissa = -d.mantissa;
  return d;
}

// optuna's _adjust_discrete_uniform_high: high lowered to low + k*step for the largest k that
// fits, in decimal arithmetic over the numbers' shortest reprs.
double AdjustDiscreteHigh(const std::string& name, double low, double high, double step) {
  std::optional<Decimal> l = ToDecimal(low), h = ToDecimal(high), s = ToDecimal(step);
  if (!l || !h || !s) return high;
  const int e = std::min({l->exponent, h->exponent, s->exponent});
  auto scaled = [e](const Decimal& d) -> std::optional<__int128> {
    __int128 m = d.mantissa;
    for (int k = d.exponent; k > e; --k) {
      if (m > (static_cast<__int128>(1) << 110) || m < -(static_cast<__int128>(1) << 110)) {
        return std::nullopt;
      }
      m *= 10;
    }
    return m;
  };
  std::optional<__int128> L = scaled(*l), H = scaled(*h), S = scaled(*s);
  if (!L || !H || !S || *S <= 0) return high;
  const __int128 r = *H - *L;
  if (r % *S == 0) return high;
  const __int128 adjusted = r / *S * *S + *L;
  // float(Decimal): the decimal value rounded once (strtod), not an int times a power of ten.
  std::string digits;
  const bool negative = adjusted < 0;
  for (unsigned __int128 m = negative ? -static_cast<unsigned __int128>(adjusted)
                                      : static_cast<unsigned __int128>(adjusted);
       m > 0 || digits.empty(); m /= 10) {
    digits.insert(digits.begin(), static_cast<char>('0' + static_cast<int>(m % 10)));
  }
  const std::string text = absl::StrCat(negative ? "-" : "", digits, "e", e);
  const double new_high = std::strtod(text.c_str(), nullptr);
  LOG(WARNING) << "The distribution of \"" << name << "\" is specified by [" << PythonFloatRepr(low)
               << ", " << PythonFloatRepr(high) << "] and step=" << PythonFloatRepr(step)
               << ", but the range is not divisible by `step`. It will be replaced with ["
               << PythonFloatRepr(low) << ", " << PythonFloatRepr(new_high) << "].";
  return new_high;
}

std::string Num(double x) { return PythonFloatRepr(x); }

bool IsNumber(const nlohmann::json& v) { return v.is_number() || v.is_boolean(); }
double AsDouble(const nlohmann::json& v) {
  if (v.is_boolean()) return v.get<bool>() ? 1.0 : 0.0;
  return v.get<double>();
}

// The keys an abbreviated distribution may have.
const std::set<std::string>& AllowedKeys() {
  static const auto* keys =
      new std::set<std::string>{"type", "low", "high", "log", "step", "choices"};
  return *keys;
}

absl::StatusOr<double> NumberField(const std::string& name, const nlohmann::ordered_json& j,
                                   const char* key) {
  auto it = j.find(key);
  if (it == j.end()) return Invalid(name, absl::StrCat("needs \"", key, "\""));
  if (!it->is_number() || !std::isfinite(it->get<double>())) {
    return Invalid(name, absl::StrCat("\"", key, "\" must be a finite number, got ", it->dump()));
  }
  return it->get<double>();
}

absl::StatusOr<int64_t> IntField(const std::string& name, const nlohmann::ordered_json& j,
                                 const char* key) {
  auto it = j.find(key);
  if (it == j.end()) return Invalid(name, absl::StrCat("needs \"", key, "\""));
  if (!it->is_number_integer()) {
    return Invalid(name, absl::StrCat("\"", key, "\" of an int parameter must be an integer, got ",
                                      it->dump()));
  }
  return it->is_number_unsigned() && it->get<uint64_t>() > uint64_t{INT64_MAX}
             ? absl::StatusOr<int64_t>(Invalid(name, absl::StrCat("\"", key, "\" is too large")))
             : absl::StatusOr<int64_t>(it->get<int64_t>());
}

absl::StatusOr<bool> LogField(const std::string& name, const nlohmann::ordered_json& j) {
  auto it = j.find("log");
  if (it == j.end()) return false;
  if (!it->is_boolean()) {
    return Invalid(name, absl::StrCat("\"log\" must be true or false, got ", it->dump()));
  }
  return it->get<bool>();
}

}  // namespace

absl::StatusOr<Distribution> MakeFloat(const std::string& name, double low, double high, bool log,
                                       std::optional<double> step) {
  if (!std::isfinite(low) || !std::isfinite(high)) {
    return Invalid(name, "`low` and `high` must be finite numbers");
  }
  if (log && step.has_value()) {
    return Invalid(name, "The parameter `step` is not supported when `log` is true.");
  }
  if (low > high) {
    return Invalid(name, absl::StrCat("`low <= high` must hold, but got (low=", Num(low),
                                      ", high=", Num(high), ")."));
  }
  if (log && low <= 0.0) {
    return Invalid(name, absl::StrCat("`low > 0` must hold for `log=True`, but got (low=", Num(low),
                                      ", high=", Num(high), ")."));
  }
  if (step.has_value() && !(*step > 0 && std::isfinite(*step))) {
    return Invalid(name, absl::StrCat("`step > 0` must hold, but got step=", Num(*step), "."));
  }
  if (step.has_value()) high = AdjustDiscreteHigh(name, low, high, *step);
  return FloatDistribution{low, high, log, step};
}

absl::StatusOr<Distribution> MakeInt(const std::string& name, int64_t low, int64_t high, bool log,
                                     int64_t step) {
  if (log && step != 1) {
    return Invalid(name,
                   "Samplers and other components in Optuna only accept step is 1 when `log` "
                   "argument is True.");
  }
  if (low > high) {
    return Invalid(
        name, absl::StrCat("`low <= high` must hold, but got (low=", low, ", high=", high, ")."));
  }
  if (log && low < 1) {
    return Invalid(name, absl::StrCat("`low >= 1` must hold for `log=True`, but got (low=", low,
                                      ", high=", high, ")."));
  }
  if (step <= 0)
    return Invalid(name, absl::StrCat("`step > 0` must hold, but got step=", step, "."));
  // Both bounds are limited to +-2^53 so that every value is exact in the internal float.
  constexpr int64_t kExact = int64_t{1} << 53;
  if (low < -kExact || high > kExact) {
    return Invalid(name, "`low` and `high` must lie within +-2^53");
  }
  const int64_t r = high - low;
  if (r % step != 0) {
    const int64_t adjusted = r / step * step + low;
    LOG(WARNING) << "The distribution of \"" << name << "\" is specified by [" << low << ", "
                 << high << "] and step=" << step
                 << ", but the range is not divisible by `step`. It will be replaced with [" << low
                 << ", " << adjusted << "].";
    high = adjusted;
  }
  return IntDistribution{low, high, log, step};
}

absl::StatusOr<Distribution> MakeCategorical(const std::string& name,
                                             std::vector<nlohmann::json> choices) {
  if (choices.empty()) return Invalid(name, "The `choices` must contain one or more elements.");
  for (const nlohmann::json& c : choices) {
    if (!(c.is_null() || c.is_boolean() || c.is_number() || c.is_string())) {
      return Invalid(name, absl::StrCat("Choices for a categorical distribution should be a tuple "
                                        "of None, bool, int, float and str, got ",
                                        c.dump()));
    }
  }
  return CategoricalDistribution{std::move(choices)};
}

const Distribution* SearchSpace::Find(const std::string& name) const {
  for (const auto& [n, d] : params) {
    if (n == name) return &d;
  }
  return nullptr;
}

absl::StatusOr<Distribution> DistributionFromAbbreviated(const std::string& name,
                                                         const nlohmann::ordered_json& j) {
  if (!j.is_object()) {
    return Invalid(name, absl::StrCat("must be an object such as {\"type\": \"float\", \"low\": "
                                      "1e-5, \"high\": 1e-3, \"log\": true}, got ",
                                      j.dump()));
  }
  for (const auto& [key, value] : j.items()) {
    if (AllowedKeys().count(key) == 0) {
      return Invalid(name, absl::StrCat("unknown key \"", key,
                                        "\" (a distribution has type, low, high, log, step, "
                                        "choices)"));
    }
  }
  auto type = j.find("type");
  if (type == j.end() || !type->is_string()) {
    return Invalid(name, "needs \"type\": \"float\", \"int\" or \"categorical\"");
  }
  const std::string t = type->get<std::string>();
  if (t == "categorical") {
    auto choices = j.find("choices");
    if (choices == j.end() || !choices->is_array()) {
      return Invalid(name, "a categorical parameter needs \"choices\": [...]");
    }
    for (const char* key : {"low", "high", "log", "step"}) {
      if (j.contains(key))
        return Invalid(name, absl::StrCat("a categorical parameter has no \"", key, "\""));
    }
    std::vector<nlohmann::json> values;
    for (const auto& c : *choices) values.push_back(nlohmann::json(c));
    return MakeCategorical(name, std::move(values));
  }
  if (j.contains("choices")) return Invalid(name, "only a categorical parameter has \"choices\"");
  ASSIGN_OR_RETURN(const bool log, LogField(name, j));
  if (t == "float") {
    ASSIGN_OR_RETURN(const double low, NumberField(name, j, "low"));
    ASSIGN_OR_RETURN(const double high, NumberField(name, j, "high"));
    std::optional<double> step;
    if (j.contains("step") && !j["step"].is_null()) {
      ASSIGN_OR_RETURN(step, NumberField(name, j, "step"));
    }
    return MakeFloat(name, low, high, log, step);
  }
  if (t == "int") {
    ASSIGN_OR_RETURN(const int64_t low, IntField(name, j, "low"));
    ASSIGN_OR_RETURN(const int64_t high, IntField(name, j, "high"));
    int64_t step = 1;
    if (j.contains("step") && !j["step"].is_null()) {
      ASSIGN_OR_RETURN(step, IntField(name, j, "step"));
    }
    return MakeInt(name, low, high, log, step);
  }
  return Invalid(name, absl::StrCat("unknown \"type\": \"", t,
                                    "\" (the types are float, int and categorical)"));
}

absl::StatusOr<SearchSpace> SearchSpaceFromJson(const nlohmann::ordered_json& j) {
  if (!j.is_object()) {
    return absl::InvalidArgumentError(
        "the search space must be a JSON object {\"name\": {\"type\": ...}, ...}");
  }
  if (j.empty()) {
    return absl::InvalidArgumentError(
        "the search space is empty: give at least one parameter, e.g. {\"learning_rate\": "
        "{\"type\": \"float\", \"low\": 1e-5, \"high\": 1e-3, \"log\": true}}");
  }
  SearchSpace space;
  for (const auto& [name, value] : j.items()) {
    if (name.empty()) return absl::InvalidArgumentError("a search-space parameter has no name");
    ASSIGN_OR_RETURN(Distribution d, DistributionFromAbbreviated(name, value));
    space.params.emplace_back(name, std::move(d));
  }
  return space;
}

absl::StatusOr<SearchSpace> ParseSearchSpace(const std::string& json_text) {
  // (Python's JSON, nested at most base::kMaxPythonJsonDepth deep: what follows recurses.)
  absl::StatusOr<nlohmann::ordered_json> j = base::ParsePythonJson(json_text);
  if (!j.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the search space is not valid JSON: ", j.status().message()));
  }
  return SearchSpaceFromJson(*j);
}

nlohmann::ordered_json DistributionToAbbreviated(const Distribution& d) {
  nlohmann::ordered_json j;
  if (const auto* f = std::get_if<FloatDistribution>(&d)) {
    j["type"] = "float";
    j["low"] = f->low;
    j["high"] = f->high;
    j["log"] = f->log;
    if (f->step) j["step"] = *f->step;
  } else if (const auto* i = std::get_if<IntDistribution>(&d)) {
    j["type"] = "int";
    j["low"] = i->low;
    j["high"] = i->high;
    j["log"] = i->log;
    j["step"] = i->step;
  } else {
    j["type"] = "categorical";
    j["choices"] = nlohmann::ordered_json::array();
    for (const auto& c : std::get<CategoricalDistribution>(d).choices) {
      j["choices"].push_back(nlohmann::ordered_json::parse(c.dump()));
    }
  }
  return j;
}

nlohmann::ordered_json SearchSpaceToJson(const SearchSpace& space) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const auto& [name, d] : space.params) j[name] = DistributionToAbbreviated(d);
  return j;
}

std::string DistributionToJson(const Distribution& d) {
  // optuna: json.dumps({"name": <class>, "attributes": <__dict__ in assignment order>}).
  nlohmann::ordered_json attributes;
  std::string cls;
  if (const auto* f = std::get_if<FloatDistribution>(&d)) {
    cls = "FloatDistribution";
    attributes["step"] = f->step ? nlohmann::ordered_json(*f->step) : nlohmann::ordered_json();
    attributes["low"] = f->low;
    attributes["high"] = f->high;
    attributes["log"] = f->log;
  } else if (const auto* i = std::get_if<IntDistribution>(&d)) {
    cls = "IntDistribution";
    attributes["log"] = i->log;
    attributes["step"] = i->step;
    attributes["low"] = i->low;
    attributes["high"] = i->high;
  } else {
    cls = "CategoricalDistribution";
    attributes["choices"] = nlohmann::ordered_json::array();
    for (const auto& c : std::get<CategoricalDistribution>(d).choices) {
      attributes["choices"].push_back(nlohmann::ordered_json::parse(c.dump()));
    }
  }
  nlohmann::ordered_json j;
  j["name"] = cls;
  j["attributes"] = attributes;
  return j.dump();
}

absl::StatusOr<Distribution> DistributionFromJson(const std::string& text) {
  absl::StatusOr<nlohmann::ordered_json> parsed = base::ParsePythonJson(text);
  if (!parsed.ok() || !parsed->is_object()) {
    return absl::InvalidArgumentError("a distribution is not a JSON object");
  }
  const nlohmann::ordered_json& j = *parsed;
  if (!j.contains("name")) return DistributionFromAbbreviated("?", j);
  auto attributes = j.find("attributes");
  if (!j["name"].is_string() || attributes == j.end() || !attributes->is_object()) {
    return absl::InvalidArgumentError("a distribution needs \"name\" and \"attributes\"");
  }
  const std::string cls = j["name"].get<std::string>();
  nlohmann::ordered_json abbreviated = *attributes;
  if (cls == "FloatDistribution") {
    abbreviated["type"] = "float";
  } else if (cls == "IntDistribution") {
    abbreviated["type"] = "int";
  } else if (cls == "CategoricalDistribution") {
    abbreviated["type"] = "categorical";
  } else {
    return absl::InvalidArgumentError(absl::StrCat("Unknown distribution class: ", cls));
  }
  return DistributionFromAbbreviated(cls, abbreviated);
}

bool SameDistribution(const Distribution& a, const Distribution& b) {
  return DistributionToJson(a) == DistributionToJson(b);
}

bool CategoricalChoiceEqual(const nlohmann::json& a, const nlohmann::json& b) {
  if (IsNumber(a) && IsNumber(b)) {
    const double x = AsDouble(a), y = AsDouble(b);
    if (std::isnan(x) && std::isnan(y)) return true;
    if (a.is_number_integer() && b.is_number_integer()) {
      return a.get<int64_t>() == b.get<int64_t>();
    }
    return x == y;
  }
  return a == b;
}

absl::StatusOr<double> ToInternal(const Distribution& d, const nlohmann::json& external) {
  if (const auto* c = std::get_if<CategoricalDistribution>(&d)) {
    for (size_t i = 0; i < c->choices.size(); ++i) {
      if (CategoricalChoiceEqual(external, c->choices[i])) return static_cast<double>(i);
    }
    return absl::InvalidArgumentError(
        absl::StrCat("'", external.dump(), "' not in ", nlohmann::json(c->choices).dump(), "."));
  }
  if (!IsNumber(external)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", external.dump(), "' is not a valid type. float-castable value is expected."));
  }
  const double v = AsDouble(external);
  if (std::isnan(v))
    return absl::InvalidArgumentError(absl::StrCat("`", external.dump(), "` is invalid value."));
  const bool log = std::holds_alternative<FloatDistribution>(d) ? std::get<FloatDistribution>(d).log
                                                                : std::get<IntDistribution>(d).log;
  if (log && v <= 0.0) {
    return absl::InvalidArgumentError(
        absl::StrCat("`", external.dump(), "` is invalid value for the case log=True."));
  }
  return v;
}

nlohmann::json ToExternal(const Distribution& d, double internal) {
  if (std::holds_alternative<FloatDistribution>(d)) return internal;
  // (Integers and indices: null for what no int64 holds, rather than an undefined cast.)
  if (!std::isfinite(internal) || std::abs(internal) >= 9.2e18) return nullptr;
  if (std::holds_alternative<IntDistribution>(d)) return static_cast<int64_t>(internal);
  const auto& choices = std::get<CategoricalDistribution>(d).choices;
  const auto index = static_cast<int64_t>(internal);
  if (index < 0 || index >= static_cast<int64_t>(choices.size())) return nullptr;
  return choices[static_cast<size_t>(index)];
}

bool Contains(const Distribution& d, double v) {
  if (std::isnan(v)) return false;
  if (const auto* f = std::get_if<FloatDistribution>(&d)) {
    if (!(f->low <= v && v <= f->high)) return false;
    if (!f->step) return true;
    const double k = (v - f->low) / *f->step;
    return std::abs(k - std::nearbyint(k)) < 1.0e-8;
  }
  if (const auto* i = std::get_if<IntDistribution>(&d)) {
    if (!(static_cast<double>(i->low) <= v && v <= static_cast<double>(i->high))) return false;
    return std::fmod(v - static_cast<double>(i->low), static_cast<double>(i->step)) == 0;
  }
  const auto index = static_cast<int64_t>(v);
  return index >= 0 &&
         index < static_cast<int64_t>(std::get<CategoricalDistribution>(d).choices.size());
}

}  // namespace loom::hpsearch
