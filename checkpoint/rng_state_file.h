// rng_state.pth files: an RngState (rng/rng_state.h) as a torch pickle shaped like HF Trainer's
// rng_state.pth, so Python can torch.load it and C++ can resume from it; and the reader of the
// files Python's HF Trainer and accelerate write.
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
//       "python":    (3, (625 ints), gauss_next)
//                                               (RngState::python when set, else random.getstate()
//                                                right after random.seed(host_base_seed))
//       "numpy":     ('MT19937', [624 ints], pos, has_gauss, cached_gaussian)
//                                               (RngState::numpy when set, else
//                                                np.random.get_state() right after
//                                                np.random.seed(host_base_seed); the key is a
//                                                list, which np.random.set_state accepts)
//     The derived "python" and "numpy" are written when host_base_seed is set ("numpy" only for
//     seeds below 2^32, numpy's range): loom draws nothing from Python's generators, so it
//     records them as a Python process that ran HF's set_seed(seed) and never drew from them
//     would hold them (rng/python_rng.h). With them, HF's Trainer._load_rng_state can read the
//     file. In this layout LoadRngState ignores "python", "numpy" and unknown keys.
//   - With RngFileOptions::accelerate_keys the dict also holds every key accelerate 0.27's
//     save_accelerator_state writes on a machine without XPU or TPU, so its load_state reads
//     random_states_<i>.pkl: "random_state" (= "python"), "numpy_random_seed" (= "numpy"),
//     "torch_manual_seed" (= "cpu") and "torch_cuda_manual_seed" (= "cuda" as a list, empty
//     without CUDA states, as torch.cuda.get_rng_state_all() on a CPU machine). The first two
//     exist only when "python" / "numpy" do.
//   - LoadRngState also reads the files Python writes, told apart by their keys when "format"
//     is absent:
//       HF Trainer's rng_state.pth (transformers 4.38 `_save_rng_state`): "python", "numpy",
//         "cpu" required, "cuda" (a tensor or a list) optional;
//       accelerate's random_states_<i>.pkl (accelerate 0.27 `save_accelerator_state`):
//         "random_state", "numpy_random_seed", "torch_manual_seed" required,
//         "torch_cuda_manual_seed" optional;
//     other keys ("xla", "npu", "xm_seed", ...) are ignored. The Python states land in
//     RngState::python / numpy (checked: version 3, 624 words below 2^32, positions 0..624,
//     numpy's key a uint32 array of 624 or a list), `host` stays empty and host_base_seed unset.
//     The file is read by checkpoint/python_unpickler.h with numpy arrays allowed (no other
//     Python object beyond what torch state dicts hold), so Python's 5-byte ints and numpy's
//     arrays read; LibTorch's unpickler is not used.
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
//       checkpoint_dir + "/" + loom::checkpoint::RngStateFileName(rank, world_size);
//   RETURN_IF_ERROR(loom::checkpoint::SaveRngState(state, path));
//   ...
//   ASSIGN_OR_RETURN(loom::rng::RngState loaded, loom::checkpoint::LoadRngState(path));
//   RETURN_IF_ERROR(loom::rng::RestoreRngState(loaded, &host));
#ifndef LOOM_CHECKPOINT_RNG_STATE_FILE_H_
#define LOOM_CHECKPOINT_RNG_STATE_FILE_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "rng/rng_state.h"

namespace loom::checkpoint {

inline constexpr char kRngStateFormat[] = "loom.rng_state";
inline constexpr int64_t kRngStateVersion = 1;

// Writes `state` to `path` atomically; see the header comment for the layout.
absl::Status SaveRngState(const rng::RngState& state, const std::string& path);

struct RngFileOptions {
  // Also accelerate's save_state names (random_states_<i>.pkl); see the header comment.
  bool accelerate_keys = false;
};
absl::Status SaveRngState(const rng::RngState& state, const std::string& path,
                          const RngFileOptions& options);

// Reads and validates a file written by SaveRngState, HF's Trainer or accelerate.
absl::StatusOr<rng::RngState> LoadRngState(const std::string& path);

// "rng_state.pth" when world_size <= 1, else "rng_state_<process_index>.pth".
std::string RngStateFileName(int process_index, int world_size);

}  // namespace loom::checkpoint

#endif  // LOOM_CHECKPOINT_RNG_STATE_FILE_H_
