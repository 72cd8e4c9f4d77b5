// rng_state.pth files: an RngState (rng/rng_state.h) as a torch pickle shaped like HF Trainer's
// rng_state.pth, so Python can torch.load it and C++ can resume from it.
//
// Contract:
//   - The file is torch::pickle_save of a dict with string keys: HF Trainer's entries
//     ("python", "numpy", "cpu", "cuda"; transformers 4.38 `Trainer._save_rng_state`) plus loom's
//     own ones:
//       "format":    "loom.rng_state"          (required)
//       "version":   1                          (required int; newer versions are rejected)
//       "cpu":       1-D uint8 tensor           (required; torch.get_rng_state() format, so
//                                                Python can torch.set_rng_state(state["cpu"]))
//       "cuda":      list of 1-D uint8 tensors  (written only when there are CUDA states, as
//                                                HF's distributed layout get_rng_state_all(); on
//                                                load a single tensor, HF's non-distributed
//                                                layout, is also accepted and means device 0;
//                                                HF's non-distributed loader cannot take the
//                                                list and only logs that)
//       "loom_host": dict str -> str            (host generator states by name; written even
//                                                when empty; optional on load)
//       "loom_host_base_seed": int              (RngState::host_base_seed, the uint64 bits as a
//                                                signed int; optional)
//       "python":    (3, (625 ints), None)      (random.getstate() right after
//                                                random.seed(host_base_seed))
//       "numpy":     ('MT19937', [624 ints], 624, 0, 0.0)
//                                               (np.random.get_state() right after
//                                                np.random.seed(host_base_seed); the key is a
//                                                list, which np.random.set_state accepts)
//     "python" and "numpy" are written when host_base_seed is set ("numpy" only for seeds
//     below 2^32, numpy's range): loom draws nothing from Python's generators, so it records
//     them as a Python process that ran HF's set_seed(seed) and never drew from them would
//     hold them (rng/python_rng.h). With them, HF's Trainer._load_rng_state can read the file.
//     LoadRngState ignores "python", "numpy" and unknown keys. It cannot read files Python's
//     torch.save wrote with those entries (HF's own rng_state.pth, or a loom file re-saved by
//     Python): LibTorch's unpickler rejects numpy arrays and Python's short encoding of ints
//     >= 2^31 (DataLoss).
//   - SaveRngState writes with base::WriteFileAtomically (all or nothing).
//   - LoadRngState never crashes on bad input; errors name the file, and the key when one is
//     at fault: NotFound (no such file), DataLoss (not a readable torch pickle: truncated,
//     random or corrupted bytes), InvalidArgument (a pickle of the wrong shape: not a dict,
//     missing or mistyped key, other format, unsupported version).
//   - RngStateFileName(process_index, world_size) is HF's per-process name: "rng_state.pth"
//     when world_size <= 1, else "rng_state_<process_index>.pth".
//
// Example:
//   ASSIGN_OR_RETURN(loom::rng::RngState state, loom::rng::CaptureRngState(host));
//   const std::string path =
//       checkpoint_dir + "/" + loom::rng::RngStateFileName(rank, world_size);
//   RETURN_IF_ERROR(loom::rng::SaveRngState(state, path));
//   ...
//   ASSIGN_OR_RETURN(loom::rng::RngState loaded, loom::rng::LoadRngState(path));
//   RETURN_IF_ERROR(loom::rng::RestoreRngState(loaded, &host));
#ifndef LOOM_RNG_RNG_STATE_FILE_H_
#define LOOM_RNG_RNG_STATE_FILE_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "rng/rng_state.h"

namespace loom::rng {

inline constexpr char kRngStateFormat[] = "loom.rng_state";
inline constexpr int64_t kRngStateVersion = 1;

// Writes `state` to `path` atomically; see the header comment for the layout.
absl::Status SaveRngState(const RngState& state, const std::string& path);

struct RngFileOptions {
  // Also accelerate's save_state names (random_states_<i>.pkl): "random_state" (= "python"),
  // "numpy_random_seed" (= "numpy"), "torch_manual_seed" (= "cpu"), "torch_cuda_manual_seed"
  // (= "cuda"), so accelerate's load_state can read the file (the first two only exist when
  // the states were seeded: host_base_seed).
  bool accelerate_keys = false;
};
absl::Status SaveRngState(const RngState& state, const std::string& path,
                          const RngFileOptions& options);

// Reads and validates a file written by SaveRngState (or by Python in the same layout).
absl::StatusOr<RngState> LoadRngState(const std::string& path);

// "rng_state.pth" when world_size <= 1, else "rng_state_<process_index>.pth".
std::string RngStateFileName(int process_index, int world_size);

}  // namespace loom::rng

#endif  // LOOM_RNG_RNG_STATE_FILE_H_
