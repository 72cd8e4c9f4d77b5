// numpy 1.24's legacy `numpy.random.RandomState(seed)` for a uint32 seed: the generator
// optuna 4.6's samplers draw from (LazyRandomState). Hand-written here: nothing packaged for
// C++ reproduces numpy's streams, so each method below follows numpy's own code
// (numpy/random/mtrand.pyx, _mt19937.pyx, src/mt19937, src/distributions at v1.24.2).
//
// Contract:
//   - The bit generator is MT19937 seeded with init_genrand(seed) (numpy's
//     `_legacy_seeding` for an integer; the same as std::mt19937(seed)).
//   - RandomSample() is numpy's 53-bit double from two 32-bit outputs:
//     ((a >> 5) * 67108864.0 + (b >> 6)) / 9007199254740992.0. Uniform(low, high) is
//     low + (high - low) * RandomSample(); Rand(n) is n RandomSample()s in order.
//   - RandomInterval(max) is numpy's `random_interval` (masked rejection on 32-bit draws,
//     64-bit draws above 2**32 - 1); RandInt(low, high) is the legacy `randint` for one value
//     in [low, high) (masked rejection); Shuffle is the legacy `shuffle` of a sequence
//     (for i = n-1 .. 1: swap x[i] with x[RandomInterval(i)]).
//   - Choice(n, p, size) is the legacy `choice(n, size, p=p)` with replacement: p is checked
//     as numpy checks it (same length, no NaN, non-negative, Kahan sum within sqrt(eps) of 1;
//     InvalidArgument otherwise, drawing nothing), then cdf = cumsum(p) / cdf[-1] and each index
//     is searchsorted(cdf, RandomSample(), side="right").
//   - draws() counts the 32-bit outputs taken since seeding. The legacy state also caches a
//     Gaussian, which none of these methods use, so (seed, draws) is the whole state:
//     Restore(seed, draws) (or Discard on a fresh generator) reproduces it exactly.
//
// Example:
//   NumpyRandomState rng(42);                 // numpy.random.RandomState(42)
//   double u = rng.Uniform(-5.0, 5.0);        // rng.uniform(-5, 5)
//   ASSIGN_OR_RETURN(std::vector<int64_t> idx, rng.Choice(3, {0.2, 0.3, 0.5}, 24));
//   nlohmann::json saved = {{"seed", rng.seed()}, {"draws", rng.draws()}};
#ifndef LOOM_HPSEARCH_NUMPY_RANDOM_H_
#define LOOM_HPSEARCH_NUMPY_RANDOM_H_

#include <cstddef>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace loom::hpsearch {

class NumpyRandomState {
 public:
  explicit NumpyRandomState(uint32_t seed) : seed_(seed), mt_(seed) {}
  // The generator `draws` 32-bit outputs after seeding with `seed`.
  static NumpyRandomState Restore(uint32_t seed, uint64_t draws);

  uint32_t seed() const { return seed_; }
  uint64_t draws() const { return draws_; }
  void Discard(uint64_t n);

  uint32_t NextUint32();
  uint64_t NextUint64();  // numpy's mt19937_next64: (first << 32) | second
  double RandomSample();
  std::vector<double> RandomSample(size_t n);
  std::vector<double> Rand(size_t n) { return RandomSample(n); }
  double Uniform(double low, double high);

  uint64_t RandomInterval(uint64_t max);
  // One legacy randint(low, high) value, low < high.
  int64_t RandInt(int64_t low, int64_t high);

  absl::StatusOr<std::vector<int64_t>> Choice(int64_t n, const std::vector<double>& p, size_t size);

  template <typename T>
  void Shuffle(std::vector<T>& x) {
    for (size_t i = x.size() > 0 ? x.size() - 1 : 0; i >= 1; --i) {
      const auto j = static_cast<size_t>(RandomInterval(i));
      if (i != j) std::swap(x[i], x[j]);
    }
  }

 private:
  uint32_t seed_;
  std::mt19937 mt_;
  uint64_t draws_ = 0;
};

}  // namespace loom::hpsearch

#endif  // LOOM_HPSEARCH_NUMPY_RANDOM_H_
