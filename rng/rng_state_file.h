// rng_state.pth files: an RngState (rng/rng_state.h) as a torch pickle shaped like HF Trainer's
// rng_state.pth, so Python can torch.load it and C++ can resume from it.
//
// Contract:
//   - The file is torch::pickle_save of a dict with string keys:
//       "format":    "loom.rng_state"          (required)
//       "version":   1                          (required int; newer versions are rejected)
//       "cpu":       1-D uint8 tensor           (required; torch.get_rng_state() format, so
//                                                Python can torch.set_rng_state(state["cpu"]))
//       "cuda":      list of 1-D uint8 tensors  (written only when there are CUDA states; on
//                                                load a single tensor is also accepted, as HF's
//                                                non-distributed files hold, meaning device 0)
//       "loom_host": dict str -> str            (host generator states by name; written even
//                                                when empty; optional on load)
//     HF's "python" and "numpy" entries have no C++ counterpart and are not written, so HF's
//     Python Trainer cannot resume from this file as is. Unknown keys are ignored on load.
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

// Reads and validates a file written by SaveRngState (or by Python in the same layout).
absl::StatusOr<RngState> LoadRngState(const std::string& path);

// "rng_state.pth" when world_size <= 1, else "rng_state_<process_index>.pth".
std::string RngStateFileName(int process_index, int world_size);

}  // namespace loom::rng

#endif  // LOOM_RNG_RNG_STATE_FILE_H_
