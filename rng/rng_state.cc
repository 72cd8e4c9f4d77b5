#include "rng/rng_state.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Context.h>
#include <ATen/core/Generator.h>

#include <exception>
#include <mutex>
#include <utility>
#ifdef LOOM_HAS_CUDA
#include <torch/cuda.h>
#endif

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "base/torch_status.h"

namespace loom::rng {
namespace {

constexpr absl::string_view kFile = "rng/rng_state.cc";

at::Generator CudaGenerator(int device) {
  return at::globalContext().defaultGenerator(
      c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(device)));
}

// See Note [Acquire lock when using random generators] in ATen.
at::Tensor GetState(at::Generator gen) {
  std::lock_guard<std::mutex> lock(gen.mutex());
  return gen.get_state();
}

void SetState(at::Generator gen, const at::Tensor& state) {
  std::lock_guard<std::mutex> lock(gen.mutex());
  gen.set_state(state.contiguous());
}

// The LibTorch part of an RngState. Throws what LibTorch throws.
struct TorchStates {
  at::Tensor cpu;
  std::vector<at::Tensor> cuda;
};

TorchStates CaptureTorch(int num_cuda) {
  TorchStates s;
  s.cpu = GetState(at::detail::getDefaultCPUGenerator());
  for (int i = 0; i < num_cuda; ++i) s.cuda.push_back(GetState(CudaGenerator(i)));
  return s;
}

void ApplyTorch(const at::Tensor& cpu, const std::vector<at::Tensor>& cuda) {
  SetState(at::detail::getDefaultCPUGenerator(), cpu);
  for (size_t i = 0; i < cuda.size(); ++i) SetState(CudaGenerator(static_cast<int>(i)), cuda[i]);
}

absl::Status CheckStateTensor(const at::Tensor& t, absl::string_view what) {
  if (!t.defined()) {
    return absl::InvalidArgumentError(absl::StrCat(kFile, ": ", what, " state is missing"));
  }
  if (t.scalar_type() != at::kByte || t.dim() != 1 || !t.device().is_cpu()) {
    return absl::InvalidArgumentError(absl::StrCat(
        kFile, ": ", what, " state must be a 1-D uint8 CPU tensor, got ",
        c10::toString(t.scalar_type()), " with ", t.dim(), " dims on ", t.device().str()));
  }
  return absl::OkStatus();
}

}  // namespace

int NumCudaGenerators() {
#ifdef LOOM_HAS_CUDA
  return static_cast<int>(torch::cuda::device_count());
#else
  return 0;
#endif
}

absl::StatusOr<RngState> CaptureRngState(const GeneratorSet& host) {
  RngState state;
  try {
    TorchStates torch_states = CaptureTorch(NumCudaGenerators());
    state.cpu = std::move(torch_states.cpu);
    state.cuda = std::move(torch_states.cuda);
  } catch (const std::exception& e) {
    return base::TorchErrorToStatus(e, absl::StatusCode::kInternal,
                                    absl::StrCat(kFile, ": reading LibTorch generator state"));
  }
  for (const std::string& name : host.Names()) {
    state.host.emplace(name, host.Find(name)->SerializeState());
  }
  state.host_base_seed = host.base_seed();
  return state;
}

absl::Status RestoreRngState(const RngState& state, GeneratorSet* host) {
  // 1. Validate everything before touching any generator.
  RETURN_IF_ERROR(CheckStateTensor(state.cpu, "CPU generator"));
  for (size_t i = 0; i < state.cuda.size(); ++i) {
    RETURN_IF_ERROR(CheckStateTensor(state.cuda[i], absl::StrCat("CUDA device ", i, " generator")));
  }
  std::vector<std::pair<std::string, HostGenerator>> parsed_host;
  if (host != nullptr) {
    for (const std::string& name : host->Names()) {
      if (state.host.count(name) == 0) {
        return absl::InvalidArgumentError(
            absl::StrCat(kFile, ": the RNG state has no entry for host generator '", name,
                         "' (it holds ", state.host.size(), " host generator states)"));
      }
    }
    for (const auto& [name, text] : state.host) {
      HostGenerator gen;
      RETURN_IF_ERROR_CTX(gen.RestoreState(text),
                          absl::StrCat(kFile, ": host generator '", name, "'"));
      parsed_host.emplace_back(name, gen);
    }
  }
  const int num_cuda = NumCudaGenerators();
  const bool restore_cuda = num_cuda > 0 && !state.cuda.empty();
  if (restore_cuda && state.cuda.size() != static_cast<size_t>(num_cuda)) {
    return absl::FailedPreconditionError(
        absl::StrCat(kFile, ": the RNG state holds ", state.cuda.size(),
                     " CUDA generator states but this process sees ", num_cuda, " CUDA devices"));
  }

  // 2. LibTorch generators, rolled back if LibTorch rejects a state.
  TorchStates before;
  try {
    before = CaptureTorch(restore_cuda ? num_cuda : 0);
  } catch (const std::exception& e) {
    return base::TorchErrorToStatus(e, absl::StatusCode::kInternal,
                                    absl::StrCat(kFile, ": reading LibTorch generator state"));
  }
  try {
    ApplyTorch(state.cpu, restore_cuda ? state.cuda : std::vector<at::Tensor>());
  } catch (const std::exception& e) {
    try {
      ApplyTorch(before.cpu, before.cuda);
    } catch (const std::exception&) {
      // Best effort: the states were just read from these generators.
    }
    return base::TorchErrorToStatus(
        e, absl::StatusCode::kInvalidArgument,
        absl::StrCat(kFile, ": LibTorch rejected a saved generator state"));
  }

  // 3. Host generators (cannot fail any more).
  if (host != nullptr && state.host_base_seed.has_value()) {
    host->SetBaseSeed(*state.host_base_seed);  // before Get(), which seeds new generators
  }
  for (auto& [name, gen] : parsed_host) *host->Get(name) = std::move(gen);
  return absl::OkStatus();
}

}  // namespace loom::rng
