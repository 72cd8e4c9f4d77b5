// TinyBert (testonly): a 3-layer BERT sequence classifier small enough for multi-rank tests of
// parameter sharding (vocabulary 40, hidden 16, 2 heads, intermediate 23 — an odd size, so flat
// buffers need padding — 12 positions, 2 labels), from a fixed seed.
//
// Example:
//   auto model = testing::TinyBert();
//   model->eval();  // no dropout, for exact comparisons
#ifndef LOOM_SHARDING_PARAM_SHARD_TINY_BERT_TESTING_H_
#define LOOM_SHARDING_PARAM_SHARD_TINY_BERT_TESTING_H_

#include <cstdlib>
#include <memory>

#include "models/bert/bert_for_sequence_classification.h"

namespace loom::sharding::testing {

inline std::shared_ptr<models::bert::BertForSequenceClassification> TinyBert() {
  models::bert::BertConfig c;
  c.vocab_size = 40;
  c.hidden_size = 16;
  c.num_hidden_layers = 3;
  c.num_attention_heads = 2;
  c.intermediate_size = 23;
  c.max_position_embeddings = 12;
  c.set_num_labels(2);
  auto model = models::bert::BertForSequenceClassification::Create(c, /*seed=*/9);
  if (!model.ok()) std::abort();  // a fixed, valid config
  return *model;
}

}  // namespace loom::sharding::testing

#endif  // LOOM_SHARDING_PARAM_SHARD_TINY_BERT_TESTING_H_
