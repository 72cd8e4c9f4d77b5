#include "hpsearch/random_sampler.h"

#include <algorithm>
#include <cmath>
#include <variant>
#include <vector>

#include "absl/strings/str_cat.h"
#include "hpsearch/numpy_math.h"
#include "hpsearch/single_value.h"

namespace loom::hpsearch {
namespace {

// optuna 4.6 `_untransform_numerical_param` of a float below high: `min(x, nextafter(high,
// high - 1))` unless the distribution is single-valued.
double CapBelowHigh(double x, double high) { return std::min(x, std::nextafter(high, high - 1)); }

double SampleFloat(const FloatDistribution& d, NumpyRandomState& rng) {
  if (d.step && !d.log) {
    const double half = 0.5 * *d.step;
    const double u = rng.Uniform(d.low - half, d.high + half);
    return numpy::Clip(numpy::Round((u - d.low) / *d.step) * *d.step + d.low, d.low, d.high);
  }
  if (d.log) {
    const double u = rng.Uniform(std::log(d.low), std::log(d.high));
    return CapBelowHigh(std::exp(u), d.high);
  }
  return CapBelowHigh(rng.Uniform(d.low, d.high), d.high);
}

double SampleInt(const IntDistribution& d, NumpyRandomState& rng) {
  const double half = 0.5 * static_cast<double>(d.step);
  const double low = static_cast<double>(d.low);
  const double high = static_cast<double>(d.high);
  if (d.log) {
    const double u = rng.Uniform(std::log(low - half), std::log(high + half));
    return std::trunc(numpy::Clip(numpy::Round(std::exp(u)), low, high));
  }
  const double step = static_cast<double>(d.step);
  const double u = rng.Uniform(low - half, high + half);
  return std::trunc(numpy::Clip(numpy::Round((u - low) / step) * step + low, low, high));
}

double SampleCategorical(const CategoricalDistribution& d, NumpyRandomState& rng) {
  std::vector<double> scores(d.choices.size());
  for (double& s : scores) s = rng.Uniform(0.0, 1.0);
  return static_cast<double>(numpy::ArgMax(scores));
}

}  // namespace

absl::StatusOr<double> RandomSampler::Sample(const Distribution& distribution) {
  if (IsSingle(distribution)) return SingleValue(distribution);
  if (const auto* f = std::get_if<FloatDistribution>(&distribution)) return SampleFloat(*f, rng_);
  if (const auto* i = std::get_if<IntDistribution>(&distribution)) return SampleInt(*i, rng_);
  const auto& c = std::get<CategoricalDistribution>(distribution);
  if (c.choices.empty()) {
    return absl::InvalidArgumentError(
        "random sampler: a categorical distribution without choices; give it one or more");
  }
  return SampleCategorical(c, rng_);
}

absl::Status RandomSampler::RestoreRngState(const nlohmann::json& state) {
  return RestoreDraws(state, "random", "random sampler", rng_);
}

absl::Status RestoreDraws(const nlohmann::json& state, const std::string& key,
                          const std::string& sampler, NumpyRandomState& rng) {
  const auto it = state.is_object() ? state.find(key) : state.end();
  if (it == state.end() || !it->is_number_integer() ||
      (it->is_number_integer() && !it->is_number_unsigned() && it->get<int64_t>() < 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat(sampler, ": the saved random state ", state.dump(), " has no draw count \"",
                     key, "\" (a non-negative integer); it was not written by this sampler"));
  }
  // A search draws a few hundred numbers a trial; a count beyond 2^40 (hours of discarding,
  // under the journal's lock) is not one a sampler wrote.
  constexpr uint64_t kMaxDraws = uint64_t{1} << 40;
  if (it->get<uint64_t>() > kMaxDraws) {
    return absl::DataLossError(absl::StrCat(sampler, ": the saved random state ", state.dump(),
                                            " counts more draws than a search takes (2^40)"));
  }
  rng = NumpyRandomState::Restore(rng.seed(), it->get<uint64_t>());
  return absl::OkStatus();
}

}  // namespace loom::hpsearch
