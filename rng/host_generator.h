// HostGenerator: loom's own host-side random engine (the C++ stand-in for Python's `random`
// and numpy's global RNG in HF Trainer), and GeneratorSet: a caller-owned collection of named
// HostGenerators that SetSeed (rng/seed.h) and CaptureRngState/RestoreRngState
// (rng/rng_state.h) act on. There is no global instance: whoever owns the training run owns
// the set and passes it down.
//
// Contract:
//   - HostGenerator wraps std::mt19937_64 and models UniformRandomBitGenerator, so it works
//     with <random> distributions and std::shuffle. Its whole state (the 312-word engine state
//     and position) round-trips through SerializeState() / RestoreState(): after a restore the
//     generator yields exactly the numbers it would have yielded at capture time.
//   - The serialized form is "mt19937_64 " followed by the engine's operator<< text. It is
//     specific to the C++ standard library (libstdc++ here); RestoreState validates it and
//     never crashes on garbage (InvalidArgument instead).
//   - DeriveHostSeed(seed, name) is the seed SetSeed gives the generator called `name`:
//     SplitMix64(seed ^ Fnv1a64(name)). It is stable across builds and platforms (no std::hash),
//     and different names give independent streams from one user seed.
//   - GeneratorSet owns its generators; pointers from Get() stay valid for the set's lifetime.
//     After Seed(s), generators created later by Get() start from DeriveHostSeed(s, name) too,
//     so creation order never changes the numbers. Before any Seed() they start from
//     DeriveHostSeed(kDefaultHostSeed, name).
//   - Neither class is thread-safe; guard shared use externally.
//
// Example:
//   loom::rng::GeneratorSet host;
//   loom::rng::HostGenerator* shuffle = host.Get("sampler");
//   std::shuffle(order.begin(), order.end(), *shuffle);
//   std::string saved = shuffle->SerializeState();
//   ...
//   RETURN_IF_ERROR(shuffle->RestoreState(saved));
#ifndef LOOM_RNG_HOST_GENERATOR_H_
#define LOOM_RNG_HOST_GENERATOR_H_

#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace loom::rng {

// The base seed a GeneratorSet uses before anyone calls Seed(); equal to HF's default seed.
inline constexpr uint64_t kDefaultHostSeed = 42;

// 64-bit FNV-1a of `name`.
uint64_t Fnv1a64(absl::string_view name);

// The seed SetSeed(seed) gives the host generator named `name`: SplitMix64(seed ^ Fnv1a64(name)).
uint64_t DeriveHostSeed(uint64_t seed, absl::string_view name);

class HostGenerator {
 public:
  using result_type = std::mt19937_64::result_type;

  explicit HostGenerator(uint64_t seed = kDefaultHostSeed) : engine_(seed) {}

  static constexpr result_type min() { return std::mt19937_64::min(); }
  static constexpr result_type max() { return std::mt19937_64::max(); }
  result_type operator()() { return engine_(); }

  // Re-seeds the engine (std::mt19937_64::seed).
  void Seed(uint64_t seed) { engine_.seed(seed); }

  // Uniform integer in [0, n) without modulo bias; n must be > 0 (returns 0 for n == 0).
  uint64_t UniformInt(uint64_t n);
  // Uniform double in [0, 1) from the top 53 bits of one draw.
  double UniformDouble();

  // The engine's full state as text (see the header comment for the format).
  std::string SerializeState() const;
  // Replaces the state with one produced by SerializeState(). InvalidArgument (and the state
  // unchanged) when `state` is not such a string.
  absl::Status RestoreState(absl::string_view state);

  // Direct access for code that wants the raw engine.
  std::mt19937_64& engine() { return engine_; }

  friend bool operator==(const HostGenerator& a, const HostGenerator& b) {
    return a.engine_ == b.engine_;
  }
  friend bool operator!=(const HostGenerator& a, const HostGenerator& b) { return !(a == b); }

 private:
  std::mt19937_64 engine_;
};

class GeneratorSet {
 public:
  GeneratorSet() = default;
  GeneratorSet(GeneratorSet&&) = default;
  GeneratorSet& operator=(GeneratorSet&&) = default;
  GeneratorSet(const GeneratorSet&) = delete;
  GeneratorSet& operator=(const GeneratorSet&) = delete;

  // The generator called `name`, created on first use (seeded as the header comment says).
  // The pointer stays valid as long as the set.
  HostGenerator* Get(absl::string_view name);
  // The generator called `name`, or nullptr when the set has none.
  HostGenerator* Find(absl::string_view name);
  const HostGenerator* Find(absl::string_view name) const;

  // Seeds every generator (present and future) with DeriveHostSeed(seed, name).
  void Seed(uint64_t seed);
  // The base seed generators are derived from: the last Seed() or SetBaseSeed() argument, else
  // kDefaultHostSeed.
  uint64_t base_seed() const { return base_seed_; }
  // Sets the base seed for generators created later by Get(), leaving the existing ones as they
  // are (RestoreRngState uses it to bring back a captured set whole).
  void SetBaseSeed(uint64_t seed) { base_seed_ = seed; }

  // Names in sorted order.
  std::vector<std::string> Names() const;
  size_t size() const { return generators_.size(); }
  bool empty() const { return generators_.empty(); }

 private:
  uint64_t base_seed_ = kDefaultHostSeed;
  std::map<std::string, std::unique_ptr<HostGenerator>, std::less<>> generators_;
};

}  // namespace loom::rng

#endif  // LOOM_RNG_HOST_GENERATOR_H_
