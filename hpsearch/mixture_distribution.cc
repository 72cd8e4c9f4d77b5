#include "hpsearch/mixture_distribution.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <numeric>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "hpsearch/numpy_math.h"
#include "hpsearch/numpy_svml.h"
#include "hpsearch/truncnorm.h"

namespace loom::hpsearch {
namespace {

// Groups equal (ka[i], kb[i]) pairs as optuna's `_unique_inverse_2d` does (a pair holding NaN
// is never merged): returns each element's group and the first element of each group.
std::vector<size_t> UniquePairs(const std::vector<double>& ka, const std::vector<double>& kb,
                                std::vector<size_t>& firsts) {
  const size_t n = ka.size();
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  auto has_nan = [&](size_t i) { return std::isnan(ka[i]) || std::isnan(kb[i]); };
  std::stable_sort(order.begin(), order.end(), [&](size_t i, size_t j) {
    if (has_nan(i) || has_nan(j)) return !has_nan(i) && has_nan(j);
    return ka[i] < ka[j] || (ka[i] == ka[j] && kb[i] < kb[j]);
  });
  std::vector<size_t> inverse(n);
  firsts.clear();
  for (size_t k = 0; k < n; ++k) {
    const size_t i = order[k];
    const size_t prev = k > 0 ? order[k - 1] : 0;
    const bool same =
        k > 0 && !has_nan(i) && !has_nan(prev) && ka[i] == ka[prev] && kb[i] == kb[prev];
    if (!same) firsts.push_back(i);
    inverse[i] = firsts.size() - 1;
  }
  return inverse;
}

// optuna 4.6 `_log_gauss_mass` over the distinct (ka, kb) keys of (a, b): the mass of each
// (a[i], b[i]), computed once per distinct key, which decides the batch truncnorm's erf sees.
std::vector<double> UniqueLogGaussMass(const std::vector<double>& a, const std::vector<double>& b,
                                       const std::vector<double>& ka,
                                       const std::vector<double>& kb) {
  std::vector<size_t> firsts;
  const std::vector<size_t> inverse = UniquePairs(ka, kb, firsts);
  std::vector<double> ua, ub;
  for (size_t i : firsts) {
    ua.push_back(a[i]);
    ub.push_back(b[i]);
  }
  const std::vector<double> mass = truncnorm::LogGaussMass(ua, ub);
  std::vector<double> out(a.size());
  for (size_t i = 0; i < a.size(); ++i) out[i] = mass[inverse[i]];
  return out;
}

// numpy's maximum (NaN-propagating).
double NumpyMaximum(double a, double b) { return (a >= b || std::isnan(a)) ? a : b; }

// Adds the discrete kernels' log mass of x (n samples) to w (n x K): optuna's
// _BatchedDiscreteTruncNormDistributions branch of `log_pdf`.
void AddDiscreteLogPdf(const TruncNormKernels& d, const std::vector<double>& x,
                       std::vector<double>& w) {
  const size_t n = x.size();
  const size_t k_count = d.mu.size();
  std::vector<double> a(n * k_count), b(n * k_count);
  for (size_t i = 0; i < n; ++i) {
    for (size_t k = 0; k < k_count; ++k) {
      a[i * k_count + k] = ((x[i] - d.step / 2) - d.mu[k]) / d.sigma[k];
      b[i * k_count + k] = ((x[i] + d.step / 2) - d.mu[k]) / d.sigma[k];
    }
  }
  // optuna's `_log_gauss_mass_unique`: once per distinct (a, b).
  const std::vector<double> mass = UniqueLogGaussMass(a, b, a, b);
  // The normalizer, once per distinct (mu, sigma) kernel.
  std::vector<double> na(k_count), nb(k_count);
  for (size_t k = 0; k < k_count; ++k) {
    na[k] = ((d.low - d.step / 2) - d.mu[k]) / d.sigma[k];
    nb[k] = ((d.high + d.step / 2) - d.mu[k]) / d.sigma[k];
  }
  const std::vector<double> norm = UniqueLogGaussMass(na, nb, d.mu, d.sigma);
  for (size_t i = 0; i < n; ++i) {
    for (size_t k = 0; k < k_count; ++k) w[i * k_count + k] += mass[i * k_count + k];
    for (size_t k = 0; k < k_count; ++k) w[i * k_count + k] -= norm[k];
  }
}

// Adds the continuous kernels' log densities (summed over those parameters) to w.
void AddContinuousLogPdf(const std::vector<const TruncNormKernels*>& dists,
                         const std::vector<const std::vector<double>*>& xs,
                         std::vector<double>& w) {
  const size_t c = dists.size();
  const size_t k_count = dists[0]->mu.size();
  const size_t n = xs[0]->size();
  std::vector<double> a(k_count * c), b(k_count * c), loc(k_count * c), scale(k_count * c);
  for (size_t k = 0; k < k_count; ++k) {
    for (size_t j = 0; j < c; ++j) {
      const TruncNormKernels& d = *dists[j];
      a[k * c + j] = (d.low - d.mu[k]) / d.sigma[k];
      b[k * c + j] = (d.high - d.mu[k]) / d.sigma[k];
      loc[k * c + j] = d.mu[k];
      scale[k * c + j] = d.sigma[k];
    }
  }
  std::vector<double> x(n * k_count * c);
  for (size_t i = 0; i < n; ++i) {
    for (size_t k = 0; k < k_count; ++k) {
      for (size_t j = 0; j < c; ++j) x[(i * k_count + k) * c + j] = (*xs[j])[i];
    }
  }
  const std::vector<double> lp = truncnorm::LogPdf(x, a, b, loc, scale);
  for (size_t i = 0; i < n; ++i) {
    for (size_t k = 0; k < k_count; ++k) {
      w[i * k_count + k] += numpy::Sum(lp.data() + (i * k_count + k) * c, c);
    }
  }
}

}  // namespace

absl::StatusOr<std::vector<std::vector<double>>> MixtureOfProductDistribution::Sample(
    NumpyRandomState& rng, int64_t batch_size) const {
  ASSIGN_OR_RETURN(std::vector<int64_t> active,
                   rng.Choice(static_cast<int64_t>(weights.size()), weights, batch_size),
                   "choosing the mixture's kernels");
  const size_t n = static_cast<size_t>(batch_size);
  std::vector<std::vector<double>> ret(distributions.size(), std::vector<double>(n));
  std::vector<size_t> numerical;
  for (size_t p = 0; p < distributions.size(); ++p) {
    const auto* cat = std::get_if<CategoricalKernels>(&distributions[p]);
    if (cat == nullptr) {
      numerical.push_back(p);
      continue;
    }
    const std::vector<double> q = rng.Rand(n);
    const size_t m = static_cast<size_t>(cat->n_choices);
    for (size_t i = 0; i < n; ++i) {
      const double* row = cat->weights.data() + active[i] * m;
      double cum = 0;
      int64_t below = 0;
      for (size_t c = 0; c < m; ++c) {
        cum += row[c];
        if ((c + 1 == m ? 1.0 : cum) < q[i]) ++below;
      }
      ret[p][i] = static_cast<double>(below);
    }
  }
  if (numerical.empty()) return ret;
  std::vector<double> a, b, loc, scale;
  for (size_t p : numerical) {
    const auto& d = std::get<TruncNormKernels>(distributions[p]);
    for (size_t i = 0; i < n; ++i) {
      const double mu = d.mu[active[i]];
      const double sigma = d.sigma[active[i]];
      a.push_back(((d.low - d.step / 2) - mu) / sigma);
      b.push_back(((d.high + d.step / 2) - mu) / sigma);
      loc.push_back(mu);
      scale.push_back(sigma);
    }
  }
  const std::vector<double> values = truncnorm::Rvs(a, b, loc, scale, rng);
  for (size_t j = 0; j < numerical.size(); ++j) {
    const auto& d = std::get<TruncNormKernels>(distributions[numerical[j]]);
    for (size_t i = 0; i < n; ++i) {
      double v = values[j * n + i];
      if (d.step != 0) {
        v = numpy::Clip(d.low + numpy::Round((v - d.low) / d.step) * d.step, d.low, d.high);
      }
      ret[numerical[j]][i] = v;
    }
  }
  return ret;
}

std::vector<double> MixtureOfProductDistribution::LogPdf(
    const std::vector<std::vector<double>>& x) const {
  const size_t n = x.empty() ? 0 : x[0].size();
  const size_t k_count = weights.size();
  std::vector<double> w(n * k_count, 0.0);
  std::vector<const TruncNormKernels*> continuous;
  std::vector<const std::vector<double>*> continuous_x;
  for (size_t p = 0; p < distributions.size(); ++p) {
    if (const auto* cat = std::get_if<CategoricalKernels>(&distributions[p])) {
      for (size_t i = 0; i < n; ++i) {
        const auto choice = static_cast<int64_t>(x[p][i]);
        for (size_t k = 0; k < k_count; ++k) {
          w[i * k_count + k] += numpy::Log(cat->weights[k * cat->n_choices + choice]);
        }
      }
      continue;
    }
    const auto& d = std::get<TruncNormKernels>(distributions[p]);
    if (d.step == 0) {
      continuous.push_back(&d);
      continuous_x.push_back(&x[p]);
    } else {
      AddDiscreteLogPdf(d, x[p], w);
    }
  }
  if (!continuous.empty() && n > 0) AddContinuousLogPdf(continuous, continuous_x, w);
  std::vector<double> out(n);
  std::vector<double> shifted(k_count);
  for (size_t i = 0; i < n; ++i) {
    double* row = w.data() + i * k_count;
    for (size_t k = 0; k < k_count; ++k) row[k] += numpy::Log(weights[k]);
    double max = numpy::Max(row, k_count);
    if (std::isinf(max) && max < 0) max = 0;
    for (size_t k = 0; k < k_count; ++k) shifted[k] = numpy::Exp(row[k] - max);
    out[i] = numpy::Log(numpy::Sum(shifted)) + max;
  }
  return out;
}

}  // namespace loom::hpsearch
