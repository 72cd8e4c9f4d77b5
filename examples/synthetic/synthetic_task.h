// A small, fully deterministic sequence-classification task for demos, end-to-end tests and
// benchmarks: token sequences whose label is a function of their tokens, and a bag-of-embeddings
// classifier implementing the Trainer's model contract (trainer/model.h).
//
// Task: input_ids are `seq_len` tokens drawn uniformly from [0, vocab_size) with a generator
// seeded by `seed`; the label is the class k whose tokens (id % num_labels == k) occur most
// often (ties: the smallest k), so a bag-of-embeddings model can learn it.
// Model: Embedding(vocab, hidden) -> mean over positions -> Linear(hidden, hidden) ->
// LayerNorm -> tanh -> Linear(hidden, num_labels); loss = cross entropy (mean) when "labels"
// is in the batch. FloatingPointOps is HF's PreTrainedModel estimate: 6 * non-embedding
// parameters * tokens.
//
// Example:
//   SyntheticTaskOptions o;
//   ASSIGN_OR_RETURN(auto train, MakeSyntheticDataset(o.set_num_examples(512).set_seed(1)));
//   auto model = std::make_shared<BagOfEmbeddingsClassifier>(o);
#ifndef LOOM_EXAMPLES_SYNTHETIC_SYNTHETIC_TASK_H_
#define LOOM_EXAMPLES_SYNTHETIC_SYNTHETIC_TASK_H_

#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "data/dataset.h"
#include "trainer/model.h"

namespace loom::examples::synthetic {

struct SyntheticTaskOptions {
  int64_t num_examples = 256;
  int64_t seq_len = 16;
  int64_t vocab_size = 64;
  int64_t hidden_size = 32;
  int64_t num_labels = 4;
  uint64_t seed = 0;

  SyntheticTaskOptions& set_num_examples(int64_t v) {
    num_examples = v;
    return *this;
  }
  SyntheticTaskOptions& set_seq_len(int64_t v) {
    seq_len = v;
    return *this;
  }
  SyntheticTaskOptions& set_vocab_size(int64_t v) {
    vocab_size = v;
    return *this;
  }
  SyntheticTaskOptions& set_hidden_size(int64_t v) {
    hidden_size = v;
    return *this;
  }
  SyntheticTaskOptions& set_num_labels(int64_t v) {
    num_labels = v;
    return *this;
  }
  SyntheticTaskOptions& set_seed(uint64_t v) {
    seed = v;
    return *this;
  }
};

// Columns "input_ids" [N, seq_len] (int64) and "labels" [N] (int64). InvalidArgument names the
// option when a size is < 1 or num_labels > vocab_size.
absl::StatusOr<std::shared_ptr<data::TensorDataset>> MakeSyntheticDataset(
    const SyntheticTaskOptions& options);

class BagOfEmbeddingsClassifier : public trainer::Model {
 public:
  explicit BagOfEmbeddingsClassifier(const SyntheticTaskOptions& options);
  trainer::ModelOutput Forward(const data::Batch& inputs) override;
  double FloatingPointOps(const data::Batch& inputs) const override;

 private:
  torch::nn::Embedding embed_{nullptr};
  torch::nn::Linear dense_{nullptr};
  torch::nn::LayerNorm norm_{nullptr};
  torch::nn::Linear classifier_{nullptr};
  int64_t non_embedding_params_ = 0;
};

}  // namespace loom::examples::synthetic

#endif  // LOOM_EXAMPLES_SYNTHETIC_SYNTHETIC_TASK_H_
