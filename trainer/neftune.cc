#include "trainer/neftune.h"

#include <stdexcept>

#include "absl/strings/str_cat.h"

namespace loom::trainer {

double NeftuneMagnitude(int64_t seq_len, int64_t hidden, double alpha) {
  // dims = torch.tensor(S * H); mag_norm = alpha / torch.sqrt(dims): python-scalar / tensor is
  // tensor.reciprocal() * alpha, all in float32.
  const at::Tensor dims = at::scalar_tensor(seq_len * hidden, at::kLong);
  return (at::sqrt(dims).reciprocal() * alpha).item<double>();
}

at::Tensor NeftuneNoise(const at::Tensor& output, double alpha, bool training) {
  if (!training) return output;
  if (output.dim() != 3) {
    throw std::invalid_argument(absl::StrCat(
        "--neftune_noise_alpha: the input embeddings' output must be [batch, seq_len, hidden], "
        "got ", output.dim(), " dimensions"));
  }
  const double mag = NeftuneMagnitude(output.size(1), output.size(2), alpha);
  return output + at::zeros_like(output).uniform_(-mag, mag);
}

absl::Status CheckNeftuneSupported(modeling::Model& model) {
  if (model.InputEmbeddingHooks() != nullptr) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "--neftune_noise_alpha: ", model.ClassName(),
      " does not expose its input embeddings (modeling::Model::InputEmbeddingHooks), so NEFTune "
      "cannot add noise to them"));
}

absl::StatusOr<modeling::ForwardHookHandle> ActivateNeftune(modeling::Model& model, double alpha) {
  absl::Status supported = CheckNeftuneSupported(model);
  if (!supported.ok()) return supported;
  return model.InputEmbeddingHooks()->Register([alpha](const at::Tensor& out, bool training) {
    return NeftuneNoise(out, alpha, training);
  });
}

}  // namespace loom::trainer
