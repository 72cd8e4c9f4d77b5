#include "hpsearch/numpy_random.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace loom::hpsearch {
namespace {

// numpy's gen_mask: the smallest all-ones bit mask >= max.
uint64_t Mask(uint64_t max) {
  uint64_t mask = max;
  mask |= mask >> 1;
  mask |= mask >> 2;
  mask |= mask >> 4;
  mask |= mask >> 8;
  mask |= mask >> 16;
  mask |= mask >> 32;
  return mask;
}

// numpy's kahan_sum (numpy/random/_common.pyx), which `choice` checks p with.
double KahanSum(const std::vector<double>& x) {
  if (x.empty()) return 0.0;
  double sum = x[0];
  double c = 0.0;
  for (size_t i = 1; i < x.size(); ++i) {
    const double y = x[i] - c;
    const double t = sum + y;
    c = (t - sum) - y;
    sum = t;
  }
  return sum;
}

}  // namespace

NumpyRandomState NumpyRandomState::Restore(uint32_t seed, uint64_t draws) {
  NumpyRandomState state(seed);
  state.Discard(draws);
  return state;
}

void NumpyRandomState::Discard(uint64_t n) {
  mt_.discard(n);
  draws_ += n;
}

uint32_t NumpyRandomState::NextUint32() {
  ++draws_;
  return static_cast<uint32_t>(mt_());
}

uint64_t NumpyRandomState::NextUint64() {
  const uint64_t high = NextUint32();
  return (high << 32) | NextUint32();
}

double NumpyRandomState::RandomSample() {
  const int32_t a = static_cast<int32_t>(NextUint32() >> 5);
  const int32_t b = static_cast<int32_t>(NextUint32() >> 6);
  return (a * 67108864.0 + b) / 9007199254740992.0;
}

std::vector<double> NumpyRandomState::RandomSample(size_t n) {
  std::vector<double> out(n);
  for (double& x : out) x = RandomSample();
  return out;
}

double NumpyRandomState::Uniform(double low, double high) {
  const double range = high - low;
  return low + range * RandomSample();
}

uint64_t NumpyRandomState::RandomInterval(uint64_t max) {
  if (max == 0) return 0;
  const uint64_t mask = Mask(max);
  uint64_t value;
  if (max <= 0xffffffffULL) {
    while ((value = (NextUint32() & mask)) > max) {
    }
  } else {
    while ((value = (NextUint64() & mask)) > max) {
    }
  }
  return value;
}

int64_t NumpyRandomState::RandInt(int64_t low, int64_t high) {
  // numpy's _rand_int64 -> random_bounded_uint64_fill(off=low, rng=high-1-low, masked).
  const uint64_t rng = static_cast<uint64_t>(high - 1) - static_cast<uint64_t>(low);
  const uint64_t off = static_cast<uint64_t>(low);
  if (rng == 0) return low;
  uint64_t value;
  if (rng <= 0xffffffffULL) {
    if (rng == 0xffffffffULL) {
      value = NextUint32();
    } else {
      const uint32_t mask = static_cast<uint32_t>(Mask(rng));
      uint32_t v;
      while ((v = (NextUint32() & mask)) > rng) {
      }
      value = v;
    }
  } else if (rng == std::numeric_limits<uint64_t>::max()) {
    value = NextUint64();
  } else {
    const uint64_t mask = Mask(rng);
    while ((value = (NextUint64() & mask)) > rng) {
    }
  }
  return static_cast<int64_t>(off + value);
}

absl::StatusOr<std::vector<int64_t>> NumpyRandomState::Choice(int64_t n,
                                                              const std::vector<double>& p,
                                                              size_t size) {
  if (n <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("choice: 'a' must be greater than 0 unless no samples are taken (got ", n,
                     "); pass at least one candidate"));
  }
  if (static_cast<int64_t>(p.size()) != n) {
    return absl::InvalidArgumentError(
        absl::StrCat("choice: 'a' (", n, ") and 'p' (", p.size(), ") must have same size"));
  }
  const double sum = KahanSum(p);
  if (std::isnan(sum)) return absl::InvalidArgumentError("choice: probabilities contain NaN");
  if (std::any_of(p.begin(), p.end(), [](double x) { return x < 0; })) {
    return absl::InvalidArgumentError("choice: probabilities are not non-negative");
  }
  const double atol = std::sqrt(std::numeric_limits<double>::epsilon());
  if (std::abs(sum - 1.0) > atol) {
    return absl::InvalidArgumentError(
        absl::StrCat("choice: probabilities do not sum to 1 (sum ", sum, "); normalize p"));
  }
  std::vector<double> cdf(p.size());
  double running = 0.0;
  for (size_t i = 0; i < p.size(); ++i) cdf[i] = running = running + p[i];
  const double last = cdf.back();
  for (double& c : cdf) c /= last;
  std::vector<int64_t> out(size);
  for (int64_t& index : out) {
    const double u = RandomSample();
    index = std::upper_bound(cdf.begin(), cdf.end(), u) - cdf.begin();
  }
  return out;
}

}  // namespace loom::hpsearch
