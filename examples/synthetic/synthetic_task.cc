#include "examples/synthetic/synthetic_task.h"

#include <ATen/CPUGeneratorImpl.h>

#include "absl/strings/str_cat.h"

namespace loom::examples::synthetic {

absl::StatusOr<std::shared_ptr<data::TensorDataset>> MakeSyntheticDataset(
    const SyntheticTaskOptions& o) {
  for (const auto& [name, value] : {std::pair<const char*, int64_t>{"num_examples", o.num_examples},
                                    {"seq_len", o.seq_len},
                                    {"vocab_size", o.vocab_size},
                                    {"hidden_size", o.hidden_size},
                                    {"num_labels", o.num_labels}}) {
    if (value < 1) {
      return absl::InvalidArgumentError(absl::StrCat("--", name, " must be >= 1, got ", value));
    }
  }
  if (o.seq_len < 2) return absl::InvalidArgumentError("--seq_len must be >= 2");
  if (o.num_labels > o.vocab_size) {
    return absl::InvalidArgumentError("--num_labels must not exceed --vocab_size");
  }
  at::Generator gen = at::detail::createCPUGenerator(o.seed);
  at::Tensor ids = at::randint(o.vocab_size, {o.num_examples, o.seq_len}, gen, at::kLong);
  // The class whose tokens (id % num_labels) are most frequent; ties go to the smallest class.
  at::Tensor counts = at::one_hot(ids.remainder(o.num_labels), o.num_labels).sum(1);
  at::Tensor labels = counts.argmax(1);
  return data::TensorDataset::Create({{"input_ids", ids}, {"labels", labels}});
}

BagOfEmbeddingsClassifier::BagOfEmbeddingsClassifier(const SyntheticTaskOptions& o) {
  embed_ = register_module("embed", torch::nn::Embedding(o.vocab_size, o.hidden_size));
  dense_ = register_module("dense", torch::nn::Linear(o.hidden_size, o.hidden_size));
  norm_ =
      register_module("norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({o.hidden_size})));
  classifier_ = register_module("classifier", torch::nn::Linear(o.hidden_size, o.num_labels));
  for (const auto& p : named_parameters()) {
    if (p.key().rfind("embed.", 0) != 0) non_embedding_params_ += p.value().numel();
  }
}

trainer::ModelOutput BagOfEmbeddingsClassifier::Forward(const data::Batch& inputs) {
  at::Tensor h = embed_->forward(inputs.at("input_ids")).mean(1);
  h = at::tanh(norm_->forward(dense_->forward(h)));
  at::Tensor logits = classifier_->forward(h);
  trainer::ModelOutput out;
  if (auto it = inputs.find("labels"); it != inputs.end()) {
    out.loss = at::cross_entropy_loss(logits, it->second);
  }
  out.outputs.push_back({"logits", logits});
  return out;
}

double BagOfEmbeddingsClassifier::FloatingPointOps(const data::Batch& inputs) const {
  auto it = inputs.find("input_ids");
  if (it == inputs.end()) return 0;
  return 6.0 * static_cast<double>(non_embedding_params_) * static_cast<double>(it->second.numel());
}

}  // namespace loom::examples::synthetic
