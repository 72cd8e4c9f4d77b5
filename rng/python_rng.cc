#include "rng/python_rng.h"

#include <algorithm>
#include <vector>

namespace loom::rng {
namespace {

constexpr int kN = kMt19937Words;

// MT19937's linear-congruential fill from one 32-bit seed ("init_genrand").
void FillFromSeed(uint32_t seed, std::array<uint32_t, kN>* mt) {
  (*mt)[0] = seed;
  for (int i = 1; i < kN; ++i) {
    const uint32_t prev = (*mt)[i - 1];
    (*mt)[i] = 1812433253u * (prev ^ (prev >> 30)) + static_cast<uint32_t>(i);
  }
}

// MT19937's array seeding ("init_by_array"): start from a fixed seed, then mix the key words in
// over max(N, key length) steps and scramble once more over N - 1 steps.
void FillFromKey(const std::vector<uint32_t>& key, std::array<uint32_t, kN>* mt) {
  FillFromSeed(19650218u, mt);
  auto& s = *mt;
  int i = 1;
  size_t j = 0;
  auto advance_i = [&] {
    if (++i >= kN) {
      s[0] = s[kN - 1];
      i = 1;
    }
  };
  for (size_t k = std::max<size_t>(kN, key.size()); k > 0; --k) {
    const uint32_t prev = s[i - 1];
    s[i] = (s[i] ^ ((prev ^ (prev >> 30)) * 1664525u)) + key[j] + static_cast<uint32_t>(j);
    advance_i();
    if (++j >= key.size()) j = 0;
  }
  for (int k = kN - 1; k > 0; --k) {
    const uint32_t prev = s[i - 1];
    s[i] = (s[i] ^ ((prev ^ (prev >> 30)) * 1566083941u)) - static_cast<uint32_t>(i);
    advance_i();
  }
  s[0] = 0x80000000u;  // the most significant bit set: the state is never all zero
}

}  // namespace

Mt19937State PythonRandomStateAfterSeed(uint64_t seed) {
  std::vector<uint32_t> key = {static_cast<uint32_t>(seed)};
  if (seed >> 32 != 0) key.push_back(static_cast<uint32_t>(seed >> 32));
  Mt19937State state;
  FillFromKey(key, &state.key);
  state.pos = kN;
  return state;
}

std::optional<Mt19937State> NumpyStateAfterSeed(uint64_t seed) {
  if (seed >> 32 != 0) return std::nullopt;
  Mt19937State state;
  FillFromSeed(static_cast<uint32_t>(seed), &state.key);
  state.pos = kN;
  return state;
}

}  // namespace loom::rng
