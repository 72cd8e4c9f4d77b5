#include "hpsearch/truncnorm.h"

#include <cfloat>
#include <cmath>
#include <cstddef>
#include <limits>

#include "hpsearch/numpy_svml.h"

namespace loom::hpsearch::truncnorm {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr size_t kErfVectorizedFrom = 2000;  // optuna's `x.size < 2000` switch

// The constants of optuna 4.6 `_truncnorm`, computed as Python computes them.
const double kSqrt2 = std::sqrt(2.0);  // Python's 2**0.5
const double kNormPdfLogC = std::log(std::sqrt(2 * M_PI));
const double kNdtriExpApproxC = std::sqrt(3.0) / M_PI;

// The coefficients of FreeBSD's s_erf.c (via optuna 4.6 `_erf.py`), lowest degree first.
constexpr double kErx = 8.45062911510467529297e-01;
constexpr double kEfx = 1.28379167095512586316e-01;
constexpr double kPp[] = {1.28379167095512558561e-01, -3.25042107247001499370e-01,
                          -2.84817495755985104766e-02, -5.77027029648944159157e-03,
                          -2.37630166566501626084e-05};
constexpr double kQq[] = {1.0,
                          3.97917223959155352819e-01,
                          6.50222499887672944485e-02,
                          5.08130628187576562776e-03,
                          1.32494738004321644526e-04,
                          -3.96022827877536812320e-06};
constexpr double kPa[] = {-2.36211856075265944077e-03, 4.14856118683748331666e-01,
                          -3.72207876035701323847e-01, 3.18346619901161753674e-01,
                          -1.10894694282396677476e-01, 3.54783043256182359371e-02,
                          -2.16637559486879084300e-03};
constexpr double kQa[] = {1.0,
                          1.06420880400844228286e-01,
                          5.40397917702171048937e-01,
                          7.18286544141962662868e-02,
                          1.26171219808761642112e-01,
                          1.36370839120290507362e-02,
                          1.19844998467991074170e-02};
constexpr double kRa[] = {-9.86494403484714822705e-03, -6.93858572707181764372e-01,
                          -1.05586262253232909814e01,  -6.23753324503260060396e01,
                          -1.62396669462573470355e02,  -1.84605092906711035994e02,
                          -8.12874355063065934246e01,  -9.81432934416914548592e00};
constexpr double kSa[] = {1.0,
                          1.96512716674392571292e01,
                          1.37657754143519042600e02,
                          4.34565877475229228821e02,
                          6.45387271733267880336e02,
                          4.29008140027567833386e02,
                          1.08635005541779435134e02,
                          6.57024977031928170135e00,
                          -6.04244152148580987438e-02};
constexpr double kRb[] = {-9.86494292470009928597e-03, -7.99283237680523006574e-01,
                          -1.77579549177547519889e01,  -1.60636384855821916062e02,
                          -6.37566443368389627722e02,  -1.02509513161107724954e03,
                          -4.83519191608651397019e02};
constexpr double kSb[] = {1.0,
                          3.03380607434824582924e01,
                          3.25792512996573918826e02,
                          1.53672958608443695994e03,
                          3.19985821950859553908e03,
                          2.55305040643316442583e03,
                          4.74528541206955367215e02,
                          -2.24409524465858183362e01};

// numpy.polynomial.Polynomial(c)(x): Horner from the highest coefficient.
template <size_t N>
double Poly(const double (&c)[N], double x) {
  double r = c[N - 1];
  for (size_t i = N - 1; i-- > 0;) r = c[i] + r * x;
  return r;
}

// optuna 4.6 `_erf_right_non_big` for one x in [0, 6).
double ErfRightNonBig(double x) {
  if (x < 0x1p-28) return (1 + kEfx) * x;
  if (x < 0.84375) {
    const double z = x * x;
    return x * (1 + Poly(kPp, z) / Poly(kQq, z));
  }
  if (x < 1.25) {
    const double s = x - 1;
    return kErx + Poly(kPa, s) / Poly(kQa, s);
  }
  const double z = x * x;
  const double s = 1 / z;
  const double r = x < 1 / 0.35 ? Poly(kRa, s) / Poly(kSa, s) : Poly(kRb, s) / Poly(kSb, s);
  return 1 - numpy::Exp(-z - 0.5625 + r) / x;
}

double Sign(double x) { return x > 0 ? 1.0 : (x < 0 ? -1.0 : (x == 0 ? 0.0 : x)); }

// optuna 4.6 `_ndtr` over one array: 0.5 + 0.5 erf(a / sqrt 2).
std::vector<double> NdtrBatch(const std::vector<double>& a) {
  std::vector<double> x(a.size());
  for (size_t i = 0; i < a.size(); ++i) x[i] = a[i] / kSqrt2;
  std::vector<double> e = Erf(x);
  for (double& v : e) v = 0.5 + 0.5 * v;
  return e;
}

// optuna 4.6 `_log_diff`: log(exp(log_p) - exp(log_q)).
double LogDiff(double log_p, double log_q) {
  return log_p + numpy::Log1p(-numpy::Exp(log_q - log_p));
}

// numpy's logaddexp (npymath npy_logaddexp).
double LogAddExp(double x, double y) {
  if (x == y) return x + M_LN2;
  const double tmp = x - y;
  if (tmp > 0) return x + std::log1p(std::exp(-tmp));
  if (tmp <= 0) return y + std::log1p(std::exp(tmp));
  return tmp;
}

}  // namespace

std::vector<double> Erf(const std::vector<double>& x) {
  std::vector<double> out(x.size());
  if (x.size() < kErfVectorizedFrom) {
    for (size_t i = 0; i < x.size(); ++i) out[i] = std::erf(x[i]);
    return out;
  }
  for (size_t i = 0; i < x.size(); ++i) {
    const double a = std::abs(x[i]);
    double v = std::isnan(a) ? kNaN : 1.0;
    if (!std::isnan(a) && a < 6) v = ErfRightNonBig(a);
    out[i] = Sign(x[i]) * v;
  }
  return out;
}

double Ndtr(double a) {
  const double x = a / kSqrt2;
  if (x < -1 / kSqrt2) return 0.5 * std::erfc(-x);
  if (x < 1 / kSqrt2) return 0.5 + 0.5 * std::erf(x);
  return 1.0 - 0.5 * std::erfc(x);
}

double LogNdtr(double a) {
  if (a > 6) return -Ndtr(-a);
  if (a > -20) return std::log(Ndtr(a));
  // The asymptotic series of the left tail (optuna's `_log_ndtr_single`).
  const double log_lhs = -0.5 * std::pow(a, 2.0) - std::log(-a) - 0.5 * std::log(2 * M_PI);
  double last_total = 0.0;
  double right_hand_side = 1.0;
  double numerator = 1.0;
  double denom_factor = 1.0;
  const double denom_cons = 1 / std::pow(a, 2.0);
  int sign = 1;
  int i = 0;
  while (std::abs(last_total - right_hand_side) > DBL_EPSILON) {
    i += 1;
    last_total = right_hand_side;
    sign = -sign;
    denom_factor *= denom_cons;
    numerator *= 2 * i - 1;
    right_hand_side += sign * numerator * denom_factor;
  }
  return log_lhs + std::log(right_hand_side);
}

std::vector<double> LogGaussMass(const std::vector<double>& a, const std::vector<double>& b) {
  const size_t n = a.size();
  std::vector<double> out(n, kNaN);
  std::vector<size_t> central;
  std::vector<double> central_a, central_neg_b;
  for (size_t i = 0; i < n; ++i) {
    const bool left = b[i] <= 0;
    const bool right = a[i] > 0;
    // optuna writes the left case, then the right case over it.
    if (right) {
      out[i] = LogDiff(LogNdtr(-a[i]), LogNdtr(-b[i]));
    } else if (left) {
      out[i] = LogDiff(LogNdtr(b[i]), LogNdtr(a[i]));
    } else {
      central.push_back(i);
      central_a.push_back(a[i]);
      central_neg_b.push_back(-b[i]);
    }
  }
  if (!central.empty()) {
    const std::vector<double> ndtr_a = NdtrBatch(central_a);
    const std::vector<double> ndtr_neg_b = NdtrBatch(central_neg_b);
    for (size_t k = 0; k < central.size(); ++k) {
      out[central[k]] = numpy::Log1p(-ndtr_a[k] - ndtr_neg_b[k]);
    }
  }
  return out;
}

std::vector<double> NdtriExp(const std::vector<double>& y) {
  const size_t n = y.size();
  std::vector<bool> flipped(n);
  std::vector<double> z(y);
  std::vector<double> x(n, kNaN);
  for (size_t i = 0; i < n; ++i) {
    flipped[i] = y[i] > -1e-2;
    if (flipped[i]) z[i] = numpy::Log(-numpy::Expm1(y[i]));
    if (z[i] < -5) {
      x[i] = -std::sqrt(-2.0 * (z[i] + kNormPdfLogC));
    } else if (z[i] >= -5) {
      x[i] = -kNdtriExpApproxC * numpy::Log(numpy::Expm1(-z[i]));
    }
  }
  for (int iteration = 0; iteration < 100; ++iteration) {
    bool converged = true;
    for (size_t i = 0; i < n; ++i) {
      const double log_ndtr_x = LogNdtr(x[i]);
      const double log_norm_pdf_x = -0.5 * (x[i] * x[i]) - kNormPdfLogC;
      const double dx = (log_ndtr_x - z[i]) * numpy::Exp(log_ndtr_x - log_norm_pdf_x);
      x[i] -= dx;
      converged = converged && std::abs(dx) < 1e-8 * std::abs(x[i]);
    }
    if (converged) break;
  }
  for (size_t i = 0; i < n; ++i) {
    if (flipped[i]) x[i] *= -1;
  }
  return x;
}

std::vector<double> Ppf(const std::vector<double>& q, const std::vector<double>& a,
                        const std::vector<double>& b) {
  const size_t n = q.size();
  const std::vector<double> log_mass = LogGaussMass(a, b);
  std::vector<size_t> left, right;
  std::vector<double> left_y, right_y;
  for (size_t i = 0; i < n; ++i) {
    if (a[i] < 0) {
      left.push_back(i);
      left_y.push_back(LogAddExp(LogNdtr(a[i]), numpy::Log(q[i]) + log_mass[i]));
    } else {
      right.push_back(i);
      right_y.push_back(LogAddExp(LogNdtr(-b[i]), numpy::Log1p(-q[i]) + log_mass[i]));
    }
  }
  std::vector<double> out(n);
  const std::vector<double> left_x = NdtriExp(left_y);
  const std::vector<double> right_x = NdtriExp(right_y);
  for (size_t k = 0; k < left.size(); ++k) out[left[k]] = left_x[k];
  for (size_t k = 0; k < right.size(); ++k) out[right[k]] = -right_x[k];
  for (size_t i = 0; i < n; ++i) {
    if (a[i] == b[i]) {
      out[i] = kNaN;
    } else if (q[i] == 1) {
      out[i] = b[i];
    } else if (q[i] == 0) {
      out[i] = a[i];
    }
  }
  return out;
}

std::vector<double> Rvs(const std::vector<double>& a, const std::vector<double>& b,
                        const std::vector<double>& loc, const std::vector<double>& scale,
                        NumpyRandomState& rng) {
  std::vector<double> q(a.size());
  for (double& u : q) u = rng.Uniform(0.0, 1.0);
  std::vector<double> out = Ppf(q, a, b);
  for (size_t i = 0; i < out.size(); ++i) out[i] = out[i] * scale[i] + loc[i];
  return out;
}

std::vector<double> LogPdf(const std::vector<double>& x, const std::vector<double>& a,
                           const std::vector<double>& b, const std::vector<double>& loc,
                           const std::vector<double>& scale) {
  const size_t n = a.size();
  const std::vector<double> log_mass = LogGaussMass(a, b);
  std::vector<double> log_scale(n);
  for (size_t i = 0; i < n; ++i) log_scale[i] = numpy::Log(scale[i]);
  std::vector<double> out(x.size());
  for (size_t r = 0; n > 0 && r < x.size() / n; ++r) {
    for (size_t i = 0; i < n; ++i) {
      const double xs = (x[r * n + i] - loc[i]) / scale[i];
      double v = -(xs * xs) / 2.0 - kNormPdfLogC - log_mass[i] - log_scale[i];
      if (a[i] == b[i]) {
        v = kNaN;
      } else if (xs < a[i] || xs > b[i]) {
        v = -kInf;
      }
      out[r * n + i] = v;
    }
  }
  return out;
}

}  // namespace loom::hpsearch::truncnorm
