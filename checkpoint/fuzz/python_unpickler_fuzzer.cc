// libFuzzer target for loom's hand-written pickle machine (checkpoint/python_unpickler.h): the
// input is the pickle program of a torch.save archive's data.pkl, run with every opt-in set of
// globals (plain state dicts; numpy arrays for the RNG files; training_args.bin's
// TrainingArguments and transformers' enums). Storages named by persistent ids
// are zero tensors of the requested dtype and size (up to 4096 elements). A crash, a sanitizer
// report or an uncaught exception is a finding; a Status error is the expected answer to bad
// bytes.
#include <ATen/ATen.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "checkpoint/python_unpickler.h"

namespace {

absl::StatusOr<at::Tensor> ZeroStorage(const std::string& /*key*/, c10::ScalarType dtype,
                                       int64_t numel) {
  if (numel < 0 || numel > 4096) return absl::InvalidArgumentError("storage size out of range");
  return at::zeros({numel}, at::TensorOptions().dtype(dtype));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string pickle(reinterpret_cast<const char*>(data), size);
  for (int set = 0; set < 3; ++set) {
    loom::checkpoint::UnpickleOptions options;
    options.numpy_arrays = set == 1;
    options.hf_training_arguments = set == 2;
    (void)loom::checkpoint::RunTorchPickle(pickle, ZeroStorage, options);
  }
  return 0;
}
