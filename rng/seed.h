// Seeding every random generator loom uses: the C++ counterpart of HF's `set_seed` and
// `enable_full_determinism` (transformers.trainer_utils).
//
// Contract:
//   SetSeed(seed, host) seeds
//     - LibTorch's CPU default generator (at::manual_seed, as Python's torch.manual_seed: after
//       SetSeed(42), torch::rand({5}) equals Python's `torch.manual_seed(42); torch.rand(5)`),
//     - every CUDA device's default generator (torch::cuda::manual_seed_all; a no-op without
//       CUDA devices or on a CPU-only LibTorch),
//     - every host generator in `host`, present and created later, with
//       DeriveHostSeed(seed, name) (rng/host_generator.h). `host` may be null.
//   EnableFullDeterminism(seed, host, warn_only) does SetSeed and then, as HF does:
//     - setenv CUDA_LAUNCH_BLOCKING=1 and CUBLAS_WORKSPACE_CONFIG=:16:8 (overwriting; they only
//       take effect if CUDA/cuBLAS have not been initialised yet, so call it early),
//     - at::globalContext().setDeterministicAlgorithms(true, warn_only): ops without a
//       deterministic implementation then throw (or warn when warn_only),
//     - setDeterministicCuDNN(true), setBenchmarkCuDNN(false).
//   These touch process-wide LibTorch state (the default generators, the global context, the
//   environment), which is inherent to LibTorch; loom's own generators stay in `host`.
//   Errors from LibTorch come back as Internal statuses naming this file.
//
// Example:
//   loom::rng::GeneratorSet host;
//   RETURN_IF_ERROR(args.full_determinism ? loom::rng::EnableFullDeterminism(args.seed, &host)
//                                         : loom::rng::SetSeed(args.seed, &host));
#ifndef LOOM_RNG_SEED_H_
#define LOOM_RNG_SEED_H_

#include <cstdint>

#include "absl/status/status.h"
#include "rng/host_generator.h"

namespace loom::rng {

// HF's `transformers.set_seed(seed)`; see the header comment.
absl::Status SetSeed(uint64_t seed, GeneratorSet* host);

// HF's `transformers.enable_full_determinism(seed, warn_only)`; see the header comment.
absl::Status EnableFullDeterminism(uint64_t seed, GeneratorSet* host, bool warn_only = false);

}  // namespace loom::rng

#endif  // LOOM_RNG_SEED_H_
