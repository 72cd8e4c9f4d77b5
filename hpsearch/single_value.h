// optuna 4.6's single-valued distributions (BaseDistribution.single() and
// optuna.distributions._get_single_value): optuna's Trial never asks a sampler for such a
// parameter, it takes the one value, so every sampler here returns it without drawing.
//
// Contract:
//   - IsSingle: a float or int distribution whose low equals high, or whose range is shorter
//     than its step (optuna compares Python Decimals of the float repr; a distribution made by
//     MakeFloat / MakeInt has its high adjusted to low + k * step, where the two agree); a
//     categorical distribution with one choice.
//   - SingleValue: the internal value of that one value (low, or choice index 0).
//
// Example:
//   if (IsSingle(d)) return SingleValue(d);
#ifndef LOOM_HPSEARCH_SINGLE_VALUE_H_
#define LOOM_HPSEARCH_SINGLE_VALUE_H_

#include "hpsearch/distribution.h"

namespace loom::hpsearch {

bool IsSingle(const Distribution& d);
double SingleValue(const Distribution& d);

}  // namespace loom::hpsearch

#endif  // LOOM_HPSEARCH_SINGLE_VALUE_H_
