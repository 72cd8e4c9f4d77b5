#include "hpsearch/parzen_estimator.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <variant>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "hpsearch/numpy_math.h"
#include "hpsearch/numpy_svml.h"

namespace loom::hpsearch {
namespace {

constexpr double kEps = 1e-12;

bool IsLog(const Distribution& d) {
  if (const auto* f = std::get_if<FloatDistribution>(&d)) return f->log;
  if (const auto* i = std::get_if<IntDistribution>(&d)) return i->log;
  return false;
}

// optuna 4.6 `_ParzenEstimator._call_weights_func`.
absl::StatusOr<std::vector<double>> CallWeights(const ParzenEstimatorParameters& parameters,
                                                int64_t n) {
  std::vector<double> w = parameters.weights(n);
  if (static_cast<int64_t>(w.size()) > n) w.resize(n);
  const std::string listed =
      absl::StrCat("[", absl::StrJoin(w, ", "), "] for ", n, " observations");
  if (std::any_of(w.begin(), w.end(), [](double x) { return x < 0; })) {
    return absl::InvalidArgumentError(
        absl::StrCat("TPE weights must not be negative: got ", listed));
  }
  if (!w.empty() && numpy::Sum(w) <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("TPE weights must not be all zero: got ", listed));
  }
  if (std::any_of(w.begin(), w.end(), [](double x) { return !std::isfinite(x); })) {
    return absl::InvalidArgumentError(absl::StrCat("TPE weights must be finite: got ", listed));
  }
  return w;
}

CategoricalKernels CategoricalKernelsFor(const std::vector<double>& observations, int64_t n_choices,
                                         double prior_weight) {
  CategoricalKernels out;
  out.n_choices = n_choices;
  if (observations.empty()) {
    out.weights.assign(n_choices, 1.0 / static_cast<double>(n_choices));
    return out;
  }
  const size_t n_kernels = observations.size() + 1;
  out.weights.assign(n_kernels * n_choices, prior_weight / static_cast<double>(n_kernels));
  for (size_t k = 0; k < observations.size(); ++k) {
    out.weights[k * n_choices + static_cast<int64_t>(observations[k])] += 1;
  }
  for (size_t k = 0; k < n_kernels; ++k) {
    double* row = out.weights.data() + k * n_choices;
    double sum = numpy::Sum(row, n_choices);
    if (sum == 0) sum = 1;
    for (int64_t c = 0; c < n_choices; ++c) row[c] /= sum;
  }
  return out;
}

// optuna 4.6 `_calculate_numerical_distributions`' univariate bandwidths.
std::vector<double> UnivariateSigmas(const std::vector<double>& mus, double low, double high,
                                     double step, bool consider_endpoints) {
  std::vector<double> with_prior = mus;
  with_prior.push_back(0.5 * (low + high));
  const std::vector<int64_t> sorted_indices = numpy::ArgSort(with_prior);
  const size_t m = with_prior.size();
  std::vector<double> e(m + 2);
  e[0] = low - step / 2;
  for (size_t j = 0; j < m; ++j) e[j + 1] = with_prior[sorted_indices[j]];
  e[m + 1] = high + step / 2;
  std::vector<double> sorted_sigmas(m);
  for (size_t j = 0; j < m; ++j) {
    const double left = e[j + 1] - e[j];
    const double right = e[j + 2] - e[j + 1];
    sorted_sigmas[j] = (left >= right || std::isnan(left)) ? left : right;
  }
  if (!consider_endpoints && e.size() >= 4) {
    sorted_sigmas[0] = e[2] - e[1];
    sorted_sigmas[m - 1] = e[m] - e[m - 1];
  }
  std::vector<double> sigmas(m);
  for (size_t j = 0; j < m; ++j) sigmas[sorted_indices[j]] = sorted_sigmas[j];
  sigmas.resize(mus.size());
  return sigmas;
}

TruncNormKernels NumericalKernelsFor(const std::vector<double>& mus, double low, double high,
                                     double step, size_t n_params,
                                     const ParzenEstimatorParameters& parameters) {
  const double range = high - low + step;
  std::vector<double> sigmas;
  if (parameters.multivariate) {
    const double sigma = 0.2 *
                         std::pow(static_cast<double>(std::max<size_t>(mus.size(), 1)),
                                  -1.0 / static_cast<double>(n_params + 4)) *
                         range;
    sigmas.assign(mus.size(), sigma);
  } else {
    sigmas = UnivariateSigmas(mus, low, high, step, parameters.consider_endpoints);
  }
  const double max_sigma = 1.0 * range;
  const double n_kernels = static_cast<double>(mus.size() + 1);
  const double min_sigma =
      parameters.consider_magic_clip ? 1.0 * range / std::min(100.0, 1.0 + n_kernels) : kEps;
  for (double& s : sigmas) s = numpy::Clip(s, min_sigma, max_sigma);
  TruncNormKernels out{mus, sigmas, low, high, step};
  out.mu.push_back(0.5 * (low + high));
  out.sigma.push_back(1.0 * range);
  return out;
}

// optuna 4.6 `_calculate_distributions` for one parameter.
BatchedKernels KernelsFor(const std::vector<double>& observations, const Distribution& d,
                          size_t n_params, const ParzenEstimatorParameters& parameters) {
  if (const auto* c = std::get_if<CategoricalDistribution>(&d)) {
    return CategoricalKernelsFor(observations, static_cast<int64_t>(c->choices.size()),
                                 parameters.prior_weight);
  }
  double low, high;
  std::optional<double> step;
  bool log;
  if (const auto* f = std::get_if<FloatDistribution>(&d)) {
    low = f->low;
    high = f->high;
    step = f->step;
    log = f->log;
  } else {
    const auto& i = std::get<IntDistribution>(d);
    low = static_cast<double>(i.low);
    high = static_cast<double>(i.high);
    step = static_cast<double>(i.step);
    log = i.log;
  }
  if (log && step) {  // optuna's log-int treatment: continuous over the widened log range
    return NumericalKernelsFor(observations, numpy::Log(low - *step / 2),
                               numpy::Log(high + *step / 2), 0.0, n_params, parameters);
  }
  if (log) {
    return NumericalKernelsFor(observations, numpy::Log(low), numpy::Log(high), 0.0, n_params,
                               parameters);
  }
  return NumericalKernelsFor(observations, low, high, step.value_or(0.0), n_params, parameters);
}

}  // namespace

std::vector<double> DefaultTpeWeights(int64_t n) {
  if (n <= 0) return {};
  if (n < 25) return std::vector<double>(n, 1.0);
  std::vector<double> w = numpy::Linspace(1.0 / static_cast<double>(n), 1.0, n - 25);
  w.insert(w.end(), 25, 1.0);
  return w;
}

absl::StatusOr<ParzenEstimator> ParzenEstimator::Create(
    const std::vector<std::vector<double>>& observations, const SearchSpace& space,
    const ParzenEstimatorParameters& parameters) {
  if (parameters.prior_weight < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "TPE prior_weight must be non-negative, but got ", parameters.prior_weight, "."));
  }
  if (observations.size() != space.params.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "ParzenEstimator: ", observations.size(), " observation columns for ", space.params.size(),
        " parameters; pass one column per parameter of the space"));
  }
  ParzenEstimator estimator(space, {});
  const std::vector<std::vector<double>> transformed = estimator.Transform(observations);
  const int64_t n = transformed.empty() ? 0 : static_cast<int64_t>(transformed[0].size());
  ASSIGN_OR_RETURN(std::vector<double> weights, CallWeights(parameters, n));
  if (n == 0) {
    weights = {1.0};
  } else {
    weights.push_back(parameters.prior_weight);
  }
  const double total = numpy::Sum(weights);
  for (double& x : weights) x /= total;
  estimator.mixture_.weights = std::move(weights);
  for (size_t p = 0; p < space.params.size(); ++p) {
    estimator.mixture_.distributions.push_back(
        KernelsFor(transformed[p], space.params[p].second, space.params.size(), parameters));
  }
  return estimator;
}

std::vector<std::vector<double>> ParzenEstimator::Transform(
    const std::vector<std::vector<double>>& x) const {
  std::vector<std::vector<double>> out = x;
  for (size_t p = 0; p < space_.params.size() && p < out.size(); ++p) {
    if (!IsLog(space_.params[p].second)) continue;
    for (double& v : out[p]) v = numpy::Log(v);
  }
  return out;
}

absl::StatusOr<std::vector<std::vector<double>>> ParzenEstimator::Sample(NumpyRandomState& rng,
                                                                         int64_t size) const {
  ASSIGN_OR_RETURN(std::vector<std::vector<double>> out, mixture_.Sample(rng, size));
  for (size_t p = 0; p < space_.params.size(); ++p) {
    const Distribution& d = space_.params[p].second;
    if (IsLog(d)) {
      for (double& v : out[p]) v = numpy::Exp(v);
    }
    if (const auto* i = std::get_if<IntDistribution>(&d)) {
      const double low = static_cast<double>(i->low);
      const double high = static_cast<double>(i->high);
      const double step = static_cast<double>(i->step);
      for (double& v : out[p]) {
        v = numpy::Clip(low + numpy::Round((v - low) / step) * step, low, high);
      }
    }
  }
  return out;
}

std::vector<double> ParzenEstimator::LogPdf(const std::vector<std::vector<double>>& samples) const {
  return mixture_.LogPdf(Transform(samples));
}

}  // namespace loom::hpsearch
