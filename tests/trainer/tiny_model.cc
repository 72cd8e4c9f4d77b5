#include "tests/trainer/tiny_model.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/nn/functional/loss.h>
#include <torch/serialize.h>

#include <exception>
#include <set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/file_util.h"
#include "base/status_macros.h"
#include "base/torch_status.h"
#include "checkpoint/torch_pickle.h"

namespace loom::trainer::testing {

TinyClassifier::TinyClassifier(double dropout) {
  embedding_ = register_module("embedding", torch::nn::Embedding(kVocab, kDim));
  fc1_ = register_module("fc1", torch::nn::Linear(kDim, kHidden));
  norm_ = register_module("norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({kHidden})));
  fc2_ = register_module("fc2", torch::nn::Linear(kHidden, kClasses));
  dropout1_ = register_module("dropout1", torch::nn::Dropout(dropout));
  dropout2_ = register_module("dropout2", torch::nn::Dropout(dropout));
}

ModelOutput TinyClassifier::Forward(const data::Batch& inputs) {
  at::Tensor h = dropout1_->forward(embedding_->forward(inputs.at("input_ids")).mean(1));
  h = at::tanh(fc1_->forward(h));
  h = dropout2_->forward(norm_->forward(h));
  ModelOutput out;
  at::Tensor logits = fc2_->forward(h);
  auto labels = inputs.find("labels");
  if (labels != inputs.end()) out.loss = at::cross_entropy_loss(logits, labels->second);
  out.outputs.push_back({"logits", logits});
  return out;
}

data::TensorMap TinyClassifier::Weights() const {
  data::TensorMap out;
  for (const auto& p : named_parameters()) out[p.key()] = p.value().detach().clone();
  return out;
}

absl::Status TinyClassifier::LoadWeights(const data::TensorMap& weights) {
  std::set<std::string> seen;
  torch::NoGradGuard no_grad;
  for (auto& p : named_parameters()) {
    auto it = weights.find(p.key());
    if (it == weights.end()) {
      return absl::InvalidArgumentError(absl::StrCat("weights lack parameter ", p.key()));
    }
    if (it->second.sizes() != p.value().sizes() || it->second.dtype() != p.value().dtype()) {
      return absl::InvalidArgumentError(absl::StrCat("weights: ", p.key(),
                                                     " has the wrong shape "
                                                     "or dtype"));
    }
    p.value().copy_(it->second);
    seen.insert(p.key());
  }
  for (const auto& [name, tensor] : weights) {
    if (!seen.count(name)) {
      return absl::InvalidArgumentError(absl::StrCat("weights: unknown parameter ", name));
    }
  }
  return absl::OkStatus();
}

data::TensorMap MakeClassificationData(int64_t size, int64_t seq_len, uint64_t seed) {
  at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  at::Tensor ids = at::randint(TinyClassifier::kUsedVocab, {size, seq_len}, gen, at::kLong);
  at::Tensor labels = ids.sum(1).remainder(TinyClassifier::kClasses);
  return {{"input_ids", ids}, {"labels", labels}};
}

absl::Status SaveTensorMap(const data::TensorMap& tensors, const std::string& path) {
  c10::Dict<std::string, at::Tensor> dict;
  for (const auto& [name, tensor] : tensors) dict.insert(name, tensor);
  return checkpoint::SavePickle(path, c10::IValue(std::move(dict)));
}

absl::StatusOr<data::TensorMap> LoadTensorMap(const std::string& path) {
  ASSIGN_OR_RETURN(std::string bytes, base::ReadFile(path));
  try {
    c10::IValue root = torch::pickle_load(std::vector<char>(bytes.begin(), bytes.end()));
    if (!root.isGenericDict()) {
      return absl::InvalidArgumentError(path + " does not hold a dict");
    }
    data::TensorMap out;
    for (const auto& item : root.toGenericDict()) {
      if (!item.key().isString() || !item.value().isTensor()) {
        return absl::InvalidArgumentError(path + " holds a non str -> tensor entry");
      }
      out[item.key().toStringRef()] = item.value().toTensor();
    }
    return out;
  } catch (const std::exception& e) {
    return base::TorchErrorToStatus(e, absl::StatusCode::kInvalidArgument, "reading " + path);
  }
}

}  // namespace loom::trainer::testing
