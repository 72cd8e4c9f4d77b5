// The states Python's `random` module and numpy's global generator (np.random) hold right after
// HF's `set_seed(seed)` (transformers.trainer_utils: random.seed(seed); np.random.seed(seed)).
//
// Why: HF Trainer's rng_state.pth has "python" and "numpy" entries (transformers 4.38
// `Trainer._save_rng_state`), and its
// `_load_rng_state` hands them to random.setstate / np.random.set_state. loom has no Python
// generators; a loom process behaves like a Python process that seeded them and never drew from
// them. checkpoint/rng_state_file.h writes these states, so HF's Python Trainer can load the file.
//
// Contract (both are MT19937, 624 32-bit words; Matsumoto & Nishimura's seeding procedures):
//   - PythonRandomStateAfterSeed(seed) equals CPython's `random.seed(seed); random.getstate()[1]`
//     for a non-negative int seed: the words of init_by_array(key) where key is `seed` split into
//     32-bit little-endian chunks (one chunk for seed < 2^32, two otherwise), then the index 624.
//     random.getstate() is (3, <these 625 ints>, None).
//   - NumpyStateAfterSeed(seed) equals numpy's legacy `np.random.seed(seed)` state
//     ('MT19937', key, pos, has_gauss=0, cached_gaussian=0.0): key from init_genrand(seed),
//     pos 624. numpy only accepts seeds below 2^32; nullopt for larger ones (HF's set_seed
//     raises there, so no HF state exists to match).
//
// Example:
//   loom::rng::Mt19937State py = loom::rng::PythonRandomStateAfterSeed(42);
//   // py.key[0] == 0x80000000, py.pos == 624
#ifndef LOOM_RNG_PYTHON_RNG_H_
#define LOOM_RNG_PYTHON_RNG_H_

#include <array>
#include <cstdint>
#include <optional>

namespace loom::rng {

inline constexpr int kMt19937Words = 624;

struct Mt19937State {
  std::array<uint32_t, kMt19937Words> key;
  int pos = kMt19937Words;  // index of the next word to temper; 624: twist before the next draw
};

// What random.getstate() returns: (3, (*mt.key, mt.pos), gauss_next), gauss_next None or the
// float random.gauss() cached.
struct PythonRandomState {
  Mt19937State mt;
  std::optional<double> gauss_next;
};

// What np.random.get_state() returns: ('MT19937', mt.key, mt.pos, has_gauss, cached_gaussian).
struct NumpyRandomState {
  Mt19937State mt;
  int has_gauss = 0;
  double cached_gaussian = 0.0;
};

// CPython's random.seed(seed) state; see the header comment.
Mt19937State PythonRandomStateAfterSeed(uint64_t seed);

// numpy's np.random.seed(seed) state; nullopt when seed >= 2^32.
std::optional<Mt19937State> NumpyStateAfterSeed(uint64_t seed);

}  // namespace loom::rng

#endif  // LOOM_RNG_PYTHON_RNG_H_
