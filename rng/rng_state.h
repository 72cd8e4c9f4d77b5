// RngState: a snapshot of every random generator a loom process draws from, so that a resumed
// run continues with the numbers an uninterrupted run would have drawn (HF Trainer's
// `_save_rng_state` / `_load_rng_state`, transformers 4.38). checkpoint/rng_state_file.h puts it
// on disk.
//
// Contract:
//   - `cpu` is LibTorch's CPU default generator state, exactly what Python's
//     torch.get_rng_state() returns (a 1-D uint8 tensor; 5056 bytes in LibTorch 1.13), so it
//     can be handed to torch.set_rng_state() and vice versa.
//   - `cuda[i]` is CUDA device i's default generator state (torch.cuda.get_rng_state_all()
//     format); empty when there are no CUDA devices or LibTorch is CPU-only.
//   - `host` maps a GeneratorSet name to that HostGenerator's SerializeState(), and
//     `host_base_seed` is the set's base_seed(): the seed of generators created later, so a
//     resumed set also gives later-created generators the numbers the original run would have.
//   - `python` / `numpy` are Python's `random` and `np.random` states as a Python process
//     recorded them (read from the rng files of HF's Trainer or accelerate:
//     checkpoint/rng_state_file.h). loom has no Python generators: CaptureRngState leaves them
//     unset and RestoreRngState ignores them; the file writer writes them back as they were.
//   - CaptureRngState reads every generator under its mutex; the tensors are fresh copies.
//   - RestoreRngState(state, host) validates everything first and then sets every generator:
//       * each generator already in `*host` must have an entry in `state.host`, otherwise
//         InvalidArgument naming the missing generator (nothing is changed);
//       * entries for generators `*host` lacks are created in it (GeneratorSet::Get), so a
//         component that asks for its generator after the restore gets the restored one;
//       * `host_base_seed`, when set, becomes the set's base seed (GeneratorSet::SetBaseSeed);
//       * `state.cuda` is ignored when this process sees no CUDA device (as HF does); when it
//         sees some, a non-empty `state.cuda` must have one entry per visible device
//         (FailedPrecondition otherwise); an empty one leaves the CUDA generators alone;
//       * a state LibTorch rejects gives InvalidArgument, and the LibTorch generators are put
//         back as they were; host generators are only changed once everything else succeeded.
//     `host` may be null: then only the LibTorch generators are restored.
//   - Not safe against other threads drawing at the same time (each generator is updated under
//     its own mutex, but the set as a whole is not atomic).
//
// Example:
//   ASSIGN_OR_RETURN(loom::rng::RngState saved, loom::rng::CaptureRngState(host));
//   ... train ...
//   RETURN_IF_ERROR(loom::rng::RestoreRngState(saved, &host));
#ifndef LOOM_RNG_RNG_STATE_H_
#define LOOM_RNG_RNG_STATE_H_

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "rng/host_generator.h"
#include "rng/python_rng.h"

namespace loom::rng {

struct RngState {
  at::Tensor cpu;                           // torch.get_rng_state()
  std::vector<at::Tensor> cuda;             // per CUDA device, index = device
  std::map<std::string, std::string> host;  // HostGenerator::SerializeState() by name
  std::optional<uint64_t> host_base_seed;   // GeneratorSet::base_seed(); unset: not recorded
  std::optional<PythonRandomState> python;  // random.getstate() Python recorded
  std::optional<NumpyRandomState> numpy;    // np.random.get_state() Python recorded
};

// Number of CUDA devices whose generators Capture/Restore handle (0 on CPU-only builds).
int NumCudaGenerators();

// Snapshot of the LibTorch default generators and every generator in `host`.
absl::StatusOr<RngState> CaptureRngState(const GeneratorSet& host);

// Puts every generator back as `state` recorded it; see the header comment.
absl::Status RestoreRngState(const RngState& state, GeneratorSet* host);

}  // namespace loom::rng

#endif  // LOOM_RNG_RNG_STATE_H_
