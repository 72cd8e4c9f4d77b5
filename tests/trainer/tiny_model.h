// A tiny classifier for the Trainer's cross-checks (tests/trainer): the same module, with the
// same parameter names, is written in Python in trainer_reference.py.
//
//   input_ids [B, L] int64 -> embedding (kVocab x kDim) -> mean over L -> dropout1 -> fc1
//   -> tanh -> norm (LayerNorm) -> dropout2 -> fc2 -> logits [B, kClasses];
//   loss = cross_entropy(logits, labels) (mean over the batch) when "labels" is given.
//
// It has what HF's optimizer grouping and AdamW care about: an Embedding whose last rows
// no example uses (their gradient is zero, so only weight decay moves them), Linear layers
// with biases (no decay: "bias" in the name) and a LayerNorm (no decay: a LayerNorm module).
// Parameters, in registration order: embedding.weight, fc1.weight, fc1.bias, norm.weight,
// norm.bias, fc2.weight, fc2.bias. The two dropouts (probability `dropout`, 0 by default: then
// they draw nothing) draw from torch's global CPU generator in training mode, in that order, as
// an HF model's dropout layers do.
//
// Example:
//   auto model = std::make_shared<TinyClassifier>();
//   RETURN_IF_ERROR(model->LoadWeights(weights));
//   ModelOutput out = model->Forward({{"input_ids", ids}, {"labels", labels}});
#ifndef LOOM_TESTS_TRAINER_TINY_MODEL_H_
#define LOOM_TESTS_TRAINER_TINY_MODEL_H_

#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>

#include <cstdint>
#include <map>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "trainer/model.h"

namespace loom::trainer::testing {

class TinyClassifier : public Model {
 public:
  static constexpr int64_t kVocab = 16;
  // Token ids the datasets draw from: rows kUsedVocab..kVocab-1 are never looked up.
  static constexpr int64_t kUsedVocab = 12;
  static constexpr int64_t kDim = 6;
  static constexpr int64_t kHidden = 8;
  static constexpr int64_t kClasses = 3;

  // Parameters get LibTorch's default initialisation from the global generator (seed it
  // first for reproducible weights).
  explicit TinyClassifier(double dropout = 0.0);

  ModelOutput Forward(const data::Batch& inputs) override;

  // name -> a copy of the parameter.
  data::TensorMap Weights() const;
  // Copies `weights` into the parameters: every parameter must be present with its shape and
  // dtype, and nothing else (InvalidArgument naming the parameter otherwise).
  absl::Status LoadWeights(const data::TensorMap& weights);

 private:
  torch::nn::Embedding embedding_{nullptr};
  torch::nn::Linear fc1_{nullptr};
  torch::nn::LayerNorm norm_{nullptr};
  torch::nn::Linear fc2_{nullptr};
  torch::nn::Dropout dropout1_{nullptr};
  torch::nn::Dropout dropout2_{nullptr};
};

// A training set of `size` examples: "input_ids" [size, seq_len] int64 in [0, kUsedVocab) and
// "labels" [size] int64 in [0, kClasses), drawn from a CPU generator seeded with `seed`
// (labels depend on the tokens, so the model has something to learn).
data::TensorMap MakeClassificationData(int64_t size, int64_t seq_len, uint64_t seed);

// Writes / reads a name -> tensor map as a torch pickle of a plain dict (Python's
// torch.load reads it; torch.save of a plain dict of tensors reads back here).
absl::Status SaveTensorMap(const data::TensorMap& tensors, const std::string& path);
absl::StatusOr<data::TensorMap> LoadTensorMap(const std::string& path);

}  // namespace loom::trainer::testing

#endif  // LOOM_TESTS_TRAINER_TINY_MODEL_H_
