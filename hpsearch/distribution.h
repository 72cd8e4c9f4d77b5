// Search-space distributions with optuna 4.6's semantics (optuna.distributions):
// FloatDistribution(low, high, log, step), IntDistribution(low, high, log, step) and
// CategoricalDistribution(choices), their checks and messages, their internal representation
// (a float: the value itself, or a categorical choice's index) and their JSON, both optuna's
// serialized form ({"name": "FloatDistribution", "attributes": {...}}, what its journal stores)
// and its abbreviated form ({"type": "float", "low": ..., "high": ..., "log": true}, what
// `--hp_space` takes).
//
// Contract:
//   - MakeFloat / MakeInt / MakeCategorical check as optuna's constructors do (low <= high,
//     log needs low > 0 (float) or low >= 1 (int), step > 0, no step with a float log, one or
//     more choices, each None/bool/int/float/string) and InvalidArgument names the parameter.
//     A range not divisible by step has its high lowered as optuna does (a warning is logged).
//   - ParseSearchSpace reads a JSON object of abbreviated distributions in its key order (the
//     order the parameters are suggested in, which is what samplers see); unknown keys, an
//     unknown "type" and an empty space are refused.
//   - ToInternal / ToExternal convert between a JSON value and the internal float.
//
// Example:
//   ASSIGN_OR_RETURN(SearchSpace space, ParseSearchSpace(R"({"learning_rate": {"type":
//       "float", "low": 1e-5, "high": 1e-3, "log": true}})"));
//   nlohmann::json value = ToExternal(space.params[0].second, 3e-4);
#ifndef LOOM_HPSEARCH_DISTRIBUTION_H_
#define LOOM_HPSEARCH_DISTRIBUTION_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace loom::hpsearch {

struct FloatDistribution {
  double low = 0;
  double high = 0;
  bool log = false;
  std::optional<double> step;
};

struct IntDistribution {
  int64_t low = 0;
  int64_t high = 0;
  bool log = false;
  int64_t step = 1;
};

struct CategoricalDistribution {
  // Each null, a bool, an integer, a float or a string.
  std::vector<nlohmann::json> choices;
};

using Distribution = std::variant<FloatDistribution, IntDistribution, CategoricalDistribution>;

absl::StatusOr<Distribution> MakeFloat(const std::string& name, double low, double high,
                                       bool log = false, std::optional<double> step = {});
absl::StatusOr<Distribution> MakeInt(const std::string& name, int64_t low, int64_t high,
                                     bool log = false, int64_t step = 1);
absl::StatusOr<Distribution> MakeCategorical(const std::string& name,
                                             std::vector<nlohmann::json> choices);

// The parameters in suggestion order.
struct SearchSpace {
  std::vector<std::pair<std::string, Distribution>> params;
  const Distribution* Find(const std::string& name) const;
};

// optuna's abbreviated form, as a JSON object {name: {"type": ..., ...}, ...}.
absl::StatusOr<SearchSpace> ParseSearchSpace(const std::string& json_text);
absl::StatusOr<SearchSpace> SearchSpaceFromJson(const nlohmann::ordered_json& j);
// The abbreviated form back (what ParseSearchSpace reads).
nlohmann::ordered_json SearchSpaceToJson(const SearchSpace& space);
absl::StatusOr<Distribution> DistributionFromAbbreviated(const std::string& name,
                                                         const nlohmann::ordered_json& j);
nlohmann::ordered_json DistributionToAbbreviated(const Distribution& d);

// optuna.distributions.distribution_to_json / json_to_distribution (a JSON text).
std::string DistributionToJson(const Distribution& d);
absl::StatusOr<Distribution> DistributionFromJson(const std::string& text);
bool SameDistribution(const Distribution& a, const Distribution& b);

// optuna's to_internal_repr: a float for numbers, the index of a categorical choice.
absl::StatusOr<double> ToInternal(const Distribution& d, const nlohmann::json& external);
// optuna's to_external_repr: float, int (truncated), or the choice at the index.
nlohmann::json ToExternal(const Distribution& d, double internal);
// Whether `internal` is a value of `d` (optuna's _contains).
bool Contains(const Distribution& d, double internal);

// optuna's choice equality (NaN equals NaN; 1 equals 1.0 and true, as Python's ==).
bool CategoricalChoiceEqual(const nlohmann::json& a, const nlohmann::json& b);

}  // namespace loom::hpsearch

#endif  // LOOM_HPSEARCH_DISTRIBUTION_H_
