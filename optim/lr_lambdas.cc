#include "optim/lr_lambdas.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace loom::optim {
namespace {

constexpr double kPi = 3.141592653589793;  // Python's math.pi

double D(int64_t v) { return static_cast<double>(v); }

// step / max(1, warmup): the shared warmup ramp.
double Ramp(int64_t step, int64_t warmup) { return D(step) / D(std::max<int64_t>(1, warmup)); }

double Progress(int64_t step, int64_t warmup, int64_t total) {
  return D(step - warmup) / D(std::max<int64_t>(1, total - warmup));
}

// 0.5 * (1 + cos(pi * cycles * 2 * progress)), evaluated left to right as in Python.
double HalfCosine(double cycles, double progress) {
  return 0.5 * (1.0 + std::cos(kPi * cycles * 2.0 * progress));
}

// Python's float %: the result takes the sign of the divisor.
double PyMod(double a, double b) {
  double r = std::fmod(a, b);
  if (r != 0.0 && ((r < 0.0) != (b < 0.0))) r += b;
  return r;
}

}  // namespace

double ConstantLambda(int64_t /*step*/) { return 1.0; }

double ConstantWithWarmupLambda(int64_t step, int64_t warmup) {
  if (step < warmup) return D(step) / std::max(1.0, D(warmup));
  return 1.0;
}

double LinearLambda(int64_t step, int64_t warmup, int64_t total) {
  if (step < warmup) return Ramp(step, warmup);
  return std::max(0.0, D(total - step) / D(std::max<int64_t>(1, total - warmup)));
}

double CosineLambda(int64_t step, int64_t warmup, int64_t total, double cycles) {
  if (step < warmup) return Ramp(step, warmup);
  return std::max(0.0, HalfCosine(cycles, Progress(step, warmup, total)));
}

double CosineHardRestartsLambda(int64_t step, int64_t warmup, int64_t total, double cycles) {
  if (step < warmup) return Ramp(step, warmup);
  const double progress = Progress(step, warmup, total);
  if (progress >= 1.0) return 0.0;
  return std::max(0.0, 0.5 * (1.0 + std::cos(kPi * PyMod(cycles * progress, 1.0))));
}

double PolynomialLambda(int64_t step, int64_t warmup, int64_t total, double lr_end, double power,
                        double lr_init) {
  if (step < warmup) return Ramp(step, warmup);
  if (step > total) return lr_end / lr_init;
  const double lr_range = lr_init - lr_end;
  const int64_t decay_steps = total - warmup;
  const double pct_remaining = 1.0 - D(step - warmup) / D(decay_steps);
  const double decay = lr_range * std::pow(pct_remaining, power) + lr_end;
  return decay / lr_init;
}

double InverseSqrtLambda(int64_t step, int64_t warmup, int64_t timescale) {
  if (step < warmup) return Ramp(step, warmup);
  const int64_t shift = timescale - warmup;
  return 1.0 / std::sqrt(D(step + shift) / D(timescale));
}

double CosineWithMinLrLambda(int64_t step, int64_t warmup, int64_t total, double cycles,
                             double min_lr_rate) {
  if (step < warmup) return Ramp(step, warmup);
  double factor = HalfCosine(cycles, Progress(step, warmup, total));
  factor = factor * (1.0 - min_lr_rate) + min_lr_rate;
  return std::max(0.0, factor);
}

double WarmupStableDecayLambda(int64_t step, int64_t warmup, double stable, double decay,
                               double cycles, double min_lr_ratio) {
  if (step < warmup) return Ramp(step, warmup);
  if (D(step) < D(warmup) + stable) return 1.0;
  if (D(step) < D(warmup) + stable + decay) {
    const double progress = (D(step - warmup) - stable) / std::max(1.0, decay);
    const double value = std::max(0.0, HalfCosine(cycles, progress));
    return (1.0 - min_lr_ratio) * value + min_lr_ratio;
  }
  return min_lr_ratio;
}

}  // namespace loom::optim
