#include "rng/seed.h"

#include <ATen/Context.h>
#include <stdlib.h>
#include <torch/cuda.h>

#include <exception>

#include "base/status_macros.h"
#include "base/torch_status.h"

namespace loom::rng {

absl::Status SetSeed(uint64_t seed, GeneratorSet* host) {
  try {
    at::manual_seed(seed);
    torch::cuda::manual_seed_all(seed);
  } catch (const std::exception& e) {
    return base::TorchErrorToStatus(e, absl::StatusCode::kInternal,
                                    "rng/seed.cc: seeding LibTorch failed");
  }
  if (host != nullptr) host->Seed(seed);
  return absl::OkStatus();
}

absl::Status EnableFullDeterminism(uint64_t seed, GeneratorSet* host, bool warn_only) {
  RETURN_IF_ERROR(SetSeed(seed, host));
  // Either may be needed for deterministic cuBLAS depending on the CUDA version (HF sets both).
  if (::setenv("CUDA_LAUNCH_BLOCKING", "1", /*overwrite=*/1) != 0 ||
      ::setenv("CUBLAS_WORKSPACE_CONFIG", ":16:8", /*overwrite=*/1) != 0) {
    return absl::InternalError("rng/seed.cc: setenv failed");
  }
  try {
    at::Context& ctx = at::globalContext();
    ctx.setDeterministicAlgorithms(true, warn_only);
    ctx.setDeterministicCuDNN(true);
    ctx.setBenchmarkCuDNN(false);
  } catch (const std::exception& e) {
    return base::TorchErrorToStatus(e, absl::StatusCode::kInternal,
                                    "rng/seed.cc: enabling deterministic algorithms failed");
  }
  return absl::OkStatus();
}

}  // namespace loom::rng
