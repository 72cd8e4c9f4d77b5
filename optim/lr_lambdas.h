// The multiplicative factors λ(step) of HF's learning-rate schedules (transformers
// 4.38–4.41, optimization.py), as pure functions. LambdaLrScheduler sets
// lr = base_lr * λ(step). Arithmetic follows the Python expressions operation by operation
// (same order, double precision), so the factors agree with Python to the last bit.
//
// Every schedule except constant starts with the same linear warmup:
//   step < warmup: λ = step / max(1, warmup).
// After the warmup (p = (step - warmup) / max(1, total - warmup)):
//   Linear               max(0, (total - step) / max(1, total - warmup))
//   ConstantWithWarmup   1
//   Cosine               max(0, (1 + cos(π · cycles · 2 · p)) / 2)
//   CosineHardRestarts   0 when p >= 1, else max(0, (1 + cos(π · ((cycles · p) mod 1))) / 2)
//   Polynomial           step > total: lr_end / lr_init, else
//                        ((lr_init - lr_end) · (1 - (step - warmup)/(total - warmup))^power
//                         + lr_end) / lr_init
//   InverseSqrt          1 / sqrt((step + timescale - warmup) / timescale)
//   CosineWithMinLr      max(0, c · (1 - min_lr_rate) + min_lr_rate), c the cosine factor
//   WarmupStableDecay    1 for the next `stable` steps, then over `decay` steps
//                        (1 - min_lr_ratio) · max(0, (1 + cos(π · cycles · 2 · q)) / 2)
//                        + min_lr_ratio with q = (step - warmup - stable) / max(1, decay),
//                        then min_lr_ratio.
// Preconditions (CreateScheduler checks them): Polynomial needs total != warmup when
// warmup <= step <= total (Python divides by zero there).
//
// Example:
//   double f = CosineLambda(/*step=*/7, /*warmup=*/2, /*total=*/10, /*cycles=*/0.5);
#ifndef LOOM_OPTIM_LR_LAMBDAS_H_
#define LOOM_OPTIM_LR_LAMBDAS_H_

#include <cstdint>

namespace loom::optim {

double ConstantLambda(int64_t step);
double ConstantWithWarmupLambda(int64_t step, int64_t warmup);
double LinearLambda(int64_t step, int64_t warmup, int64_t total);
double CosineLambda(int64_t step, int64_t warmup, int64_t total, double cycles);
double CosineHardRestartsLambda(int64_t step, int64_t warmup, int64_t total, double cycles);
double PolynomialLambda(int64_t step, int64_t warmup, int64_t total, double lr_end, double power,
                        double lr_init);
double InverseSqrtLambda(int64_t step, int64_t warmup, int64_t timescale);
double CosineWithMinLrLambda(int64_t step, int64_t warmup, int64_t total, double cycles,
                             double min_lr_rate);
double WarmupStableDecayLambda(int64_t step, int64_t warmup, double stable, double decay,
                               double cycles, double min_lr_ratio);

}  // namespace loom::optim

#endif  // LOOM_OPTIM_LR_LAMBDAS_H_
