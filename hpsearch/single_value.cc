#include "hpsearch/single_value.h"

#include <variant>

namespace loom::hpsearch {

bool IsSingle(const Distribution& d) {
  if (const auto* f = std::get_if<FloatDistribution>(&d)) {
    if (f->low == f->high) return true;
    return f->step.has_value() && (f->high - f->low) < *f->step;
  }
  if (const auto* i = std::get_if<IntDistribution>(&d)) {
    if (i->low == i->high) return true;
    return !i->log && (i->high - i->low) < i->step;
  }
  return std::get<CategoricalDistribution>(d).choices.size() == 1;
}

double SingleValue(const Distribution& d) {
  if (const auto* f = std::get_if<FloatDistribution>(&d)) return f->low;
  if (const auto* i = std::get_if<IntDistribution>(&d)) return static_cast<double>(i->low);
  return 0.0;
}

}  // namespace loom::hpsearch
