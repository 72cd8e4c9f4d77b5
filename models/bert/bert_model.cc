#include "models/bert/bert_model.h"

#include <ATen/CPUGeneratorImpl.h>
#include <c10/util/Exception.h>
#include <torch/nn/functional/activation.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <cmath>
#include <limits>
#include <stdexcept>

#include "absl/strings/str_cat.h"
#include "base/torch_compat.h"
#include "modeling/layers.h"

namespace loom::models::bert {
namespace {

namespace F = torch::nn::functional;
using modeling::Dense;
using modeling::FinfoMin;

torch::nn::LayerNorm MakeLayerNorm(const BertConfig& c) {
  return torch::nn::LayerNorm(torch::nn::LayerNormOptions({c.hidden_size}).eps(c.layer_norm_eps));
}

// ResolveAttnImplementation for constructors: the error becomes std::invalid_argument.
AttnImplementation ResolveOrThrow(std::optional<AttnImplementation> requested) {
  absl::StatusOr<AttnImplementation> resolved = ResolveAttnImplementation(requested);
  if (!resolved.ok()) throw std::invalid_argument(std::string(resolved.status().message()));
  return *resolved;
}

}  // namespace

absl::StatusOr<AttnImplementation> ResolveAttnImplementation(
    std::optional<AttnImplementation> requested) {
  // transformers 4.41: an explicit request is honoured or refused (_check_and_enable_sdpa's
  // hard check); none means sdpa when torch has it (the model supports it).
  if (!requested.has_value()) {
    return base::kHasScaledDotProductAttention ? AttnImplementation::kSdpa
                                               : AttnImplementation::kEager;
  }
  if (*requested == AttnImplementation::kSdpa && !base::kHasScaledDotProductAttention) {
    return absl::FailedPreconditionError(absl::StrCat(
        "attn_implementation=\"sdpa\" needs at::scaled_dot_product_attention, which LibTorch ",
        base::kLibTorchVersion,
        " (this build) lacks: it needs LibTorch >= 2.1.1 (transformers 4.41 requires torch >= "
        "2.1.1 for sdpa). Build against the default LibTorch 2.11 (without --config=debian), or use attn_implementation=\"eager\""));
  }
  return *requested;
}

BertEmbeddings::BertEmbeddings(const BertConfig& c) {
  auto word = torch::nn::EmbeddingOptions(c.vocab_size, c.hidden_size);
  if (c.pad_token_id.has_value()) word.padding_idx(*c.pad_token_id);
  word_embeddings = register_module("word_embeddings", modeling::HookedEmbedding(word));
  position_embeddings = register_module(
      "position_embeddings", torch::nn::Embedding(c.max_position_embeddings, c.hidden_size));
  token_type_embeddings = register_module("token_type_embeddings",
                                          torch::nn::Embedding(c.type_vocab_size, c.hidden_size));
  layer_norm = register_module("LayerNorm", MakeLayerNorm(c));
  dropout = register_module("dropout", torch::nn::Dropout(c.hidden_dropout_prob));
}

at::Tensor BertEmbeddings::Forward(const at::Tensor& input_ids, const at::Tensor& token_type_ids,
                                   const at::Tensor& position_ids) {
  // HF's order: word embeddings, then token types, then positions.
  const at::Tensor words = word_embeddings->forward(input_ids);
  at::Tensor embeddings = words + token_type_embeddings->forward(token_type_ids);
  embeddings = embeddings + position_embeddings->forward(position_ids);
  return dropout->forward(layer_norm->forward(embeddings));
}

BertSelfAttention::BertSelfAttention(const BertConfig& c)
    : num_heads_(c.num_attention_heads),
      head_size_(c.hidden_size / c.num_attention_heads),
      attention_dropout_(c.attention_probs_dropout_prob),
      attn_implementation_(ResolveOrThrow(c.attn_implementation)) {
  const int64_t all_head_size = num_heads_ * head_size_;
  query = register_module("query", torch::nn::Linear(c.hidden_size, all_head_size));
  key = register_module("key", torch::nn::Linear(c.hidden_size, all_head_size));
  value = register_module("value", torch::nn::Linear(c.hidden_size, all_head_size));
  dropout = register_module("dropout", torch::nn::Dropout(c.attention_probs_dropout_prob));
}

at::Tensor BertSelfAttention::Forward(const at::Tensor& hidden, const at::Tensor& additive_mask) {
  const int64_t batch = hidden.size(0);
  const int64_t seq = hidden.size(1);
  auto heads = [&](const at::Tensor& x) {
    return x.view({batch, seq, num_heads_, head_size_}).permute({0, 2, 1, 3});
  };
  at::Tensor q = heads(Dense(query, hidden));
  at::Tensor k = heads(Dense(key, hidden));
  at::Tensor v = heads(Dense(value, hidden));
  if (attn_implementation_ == AttnImplementation::kSdpa) {
    // BertSdpaSelfAttention: transpose(1, 2).reshape(bsz, tgt_len, all_head_size).
    return SdpaAttention(q, k, v, additive_mask)
        .transpose(1, 2)
        .reshape({batch, seq, num_heads_ * head_size_});
  }
  at::Tensor context = EagerAttention(q, k, v, additive_mask).permute({0, 2, 1, 3}).contiguous();
  return context.view({batch, seq, num_heads_ * head_size_});
}

at::Tensor BertSelfAttention::EagerAttention(const at::Tensor& q, const at::Tensor& k,
                                             const at::Tensor& v, const at::Tensor& additive_mask) {
  at::Tensor scores = at::matmul(q, k.transpose(-1, -2));
  scores = scores / std::sqrt(static_cast<double>(head_size_));
  if (additive_mask.defined()) scores = scores + additive_mask;
  at::Tensor probs = dropout->forward(at::softmax(scores, -1));
  return at::matmul(probs, v);
}

at::Tensor BertSelfAttention::SdpaAttention(const at::Tensor& q, const at::Tensor& k,
                                            const at::Tensor& v, const at::Tensor& additive_mask) {
  // dropout_p = attention_probs_dropout_prob only in training; no causal mask in an encoder.
  return base::ScaledDotProductAttention(q, k, v, additive_mask,
                                         is_training() ? attention_dropout_ : 0.0,
                                         /*is_causal=*/false);
}

BertResidualOutput::BertResidualOutput(const BertConfig& c, int64_t in_features) {
  dense = register_module("dense", torch::nn::Linear(in_features, c.hidden_size));
  layer_norm = register_module("LayerNorm", MakeLayerNorm(c));
  dropout = register_module("dropout", torch::nn::Dropout(c.hidden_dropout_prob));
}

at::Tensor BertResidualOutput::Forward(const at::Tensor& hidden, const at::Tensor& residual) {
  return layer_norm->forward(dropout->forward(Dense(dense, hidden)) + residual);
}

BertAttention::BertAttention(const BertConfig& c) {
  self_attention = register_module("self", std::make_shared<BertSelfAttention>(c));
  output = register_module("output", std::make_shared<BertResidualOutput>(c, c.hidden_size));
}

at::Tensor BertAttention::Forward(const at::Tensor& hidden, const at::Tensor& additive_mask) {
  return output->Forward(self_attention->Forward(hidden, additive_mask), hidden);
}

BertIntermediate::BertIntermediate(const BertConfig& c) : act_(c.hidden_act) {
  dense = register_module("dense", torch::nn::Linear(c.hidden_size, c.intermediate_size));
}

at::Tensor BertIntermediate::Forward(const at::Tensor& hidden) {
  return ApplyActivation(act_, Dense(dense, hidden));
}

BertLayer::BertLayer(const BertConfig& c) {
  attention = register_module("attention", std::make_shared<BertAttention>(c));
  intermediate = register_module("intermediate", std::make_shared<BertIntermediate>(c));
  output = register_module("output", std::make_shared<BertResidualOutput>(c, c.intermediate_size));
}

at::Tensor BertLayer::Forward(const at::Tensor& hidden, const at::Tensor& additive_mask) {
  at::Tensor attention_output = attention->Forward(hidden, additive_mask);
  return output->Forward(intermediate->Forward(attention_output), attention_output);
}

BertEncoder::BertEncoder(const BertConfig& c) {
  layer = register_module("layer", torch::nn::ModuleList());
  for (int64_t i = 0; i < c.num_hidden_layers; ++i)
    layer->push_back(std::make_shared<BertLayer>(c));
}

at::Tensor BertEncoder::Forward(at::Tensor hidden, const at::Tensor& additive_mask) {
  const bool checkpoint = gradient_checkpointing.has_value() && is_training();
  for (const auto& module : *layer) {
    const std::shared_ptr<BertLayer> bert_layer = std::dynamic_pointer_cast<BertLayer>(module);
    hidden = modeling::RunUnit(unit_runner, *bert_layer, [&]() -> at::Tensor {
      if (!checkpoint) return bert_layer->Forward(hidden, additive_mask);
      return modeling::Checkpoint(
          [bert_layer](const std::vector<at::Tensor>& in) {
            return bert_layer->Forward(in[0], in[1]);
          },
          {hidden, additive_mask}, bert_layer->parameters(), *gradient_checkpointing);
    });
  }
  return hidden;
}

BertPooler::BertPooler(const BertConfig& c) {
  dense = register_module("dense", torch::nn::Linear(c.hidden_size, c.hidden_size));
}

at::Tensor BertPooler::Forward(const at::Tensor& sequence_output) {
  return at::tanh(Dense(dense, sequence_output.select(1, 0)));
}

BertModel::BertModel(const BertConfig& config)
    : attn_implementation_(ResolveOrThrow(config.attn_implementation)) {
  BertConfig c = config;
  c.attn_implementation = attn_implementation_;
  embeddings = register_module("embeddings", std::make_shared<BertEmbeddings>(c));
  encoder = register_module("encoder", std::make_shared<BertEncoder>(c));
  pooler = register_module("pooler", std::make_shared<BertPooler>(c));
}

at::Tensor ExtendedAttentionMask(const at::Tensor& attention_mask, c10::ScalarType dtype) {
  const double min = FinfoMin(dtype);
  at::Tensor extended = attention_mask.unsqueeze(1).unsqueeze(2).to(dtype);
  return (1.0 - extended) * min;
}

at::Tensor SdpaAttentionMask(const at::Tensor& attention_mask, c10::ScalarType dtype) {
  if (at::all(attention_mask == 1).item<bool>()) return at::Tensor();
  const int64_t batch = attention_mask.size(0);
  const int64_t seq = attention_mask.size(1);
  at::Tensor expanded =
      attention_mask.unsqueeze(1).unsqueeze(2).expand({batch, 1, seq, seq}).to(dtype);
  at::Tensor inverted = 1.0 - expanded;
  return inverted.masked_fill(inverted.to(at::kBool), FinfoMin(dtype));
}

BertModelOutput BertModel::Forward(const at::Tensor& input_ids, const at::Tensor& attention_mask,
                                   const at::Tensor& token_type_ids,
                                   const at::Tensor& position_ids) {
  const int64_t batch = input_ids.size(0);
  const int64_t seq = input_ids.size(1);
  const auto long_options = at::TensorOptions().dtype(at::kLong).device(input_ids.device());
  at::Tensor positions =
      position_ids.defined() ? position_ids : at::arange(seq, long_options).unsqueeze(0);
  at::Tensor token_types =
      token_type_ids.defined() ? token_type_ids : at::zeros({batch, seq}, long_options);
  at::Tensor mask = attention_mask.defined()
                        ? attention_mask
                        : at::ones({batch, seq}, at::TensorOptions().device(input_ids.device()));
  at::Tensor hidden = embeddings->Forward(input_ids, token_types, positions);
  // BertModel.forward: the sdpa mask (or none) for the sdpa layers, the extended one otherwise.
  at::Tensor additive = attn_implementation_ == AttnImplementation::kSdpa
                            ? SdpaAttentionMask(mask, hidden.scalar_type())
                            : ExtendedAttentionMask(mask, hidden.scalar_type());
  BertModelOutput out;
  out.sequence_output = encoder->Forward(hidden, additive);
  out.pooled_output = pooler->Forward(out.sequence_output);
  return out;
}

namespace {

void InitModule(torch::nn::Module& m, const BertConfig& c, at::Generator& gen) {
  if (auto* linear = m.as<torch::nn::Linear>()) {
    linear->weight.normal_(0.0, c.initializer_range, gen);
    if (linear->bias.defined()) linear->bias.zero_();
  } else if (auto* embedding = m.as<torch::nn::Embedding>()) {
    embedding->weight.normal_(0.0, c.initializer_range, gen);
    if (auto pad = embedding->options.padding_idx(); pad.has_value()) {
      embedding->weight[*pad].zero_();
    }
  } else if (auto* norm = m.as<torch::nn::LayerNorm>()) {
    norm->weight.fill_(1.0);
    norm->bias.zero_();
  }
}

}  // namespace

void InitBertWeights(torch::nn::Module& module, const BertConfig& config, uint64_t seed) {
  torch::NoGradGuard no_grad;
  at::Generator gen = at::detail::createCPUGenerator(seed);
  // Module order (depth first, registration order): the order the tensors are listed.
  InitModule(module, config, gen);
  for (const auto& m : module.modules(/*include_self=*/false)) InitModule(*m, config, gen);
}

void InitBertModules(torch::nn::Module& module, const BertConfig& config, uint64_t seed,
                     const std::set<std::string>& names) {
  torch::NoGradGuard no_grad;
  at::Generator gen = at::detail::createCPUGenerator(seed);
  for (const auto& item : module.named_modules(/*name_prefix=*/"", /*include_self=*/true)) {
    if (names.count(item.key())) InitModule(*item.value(), config, gen);
  }
}

}  // namespace loom::models::bert
