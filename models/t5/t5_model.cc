#include "models/t5/t5_model.h"

#include <ATen/CPUGeneratorImpl.h>
#include <c10/util/Exception.h>
#include <torch/nn/functional/dropout.h>

#include <array>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <utility>

#include "absl/strings/str_cat.h"
#include "modeling/layers.h"

namespace loom::models::t5 {
namespace {

namespace F = torch::nn::functional;
using modeling::Dense;
using modeling::FinfoMin;

torch::nn::Linear NoBias(int64_t in, int64_t out) {
  return torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(false));
}

// transformers 4.41 T5Block: fp16 hidden states are clamped after every sublayer.
at::Tensor ClampFp16(const at::Tensor& hidden) {
  if (hidden.scalar_type() != at::kHalf) return hidden;
  const double max = 65504.0;
  const at::Tensor clamp =
      at::where(at::isinf(hidden).any(), at::scalar_tensor(max - 1000, hidden.options()),
                at::scalar_tensor(max, hidden.options()));
  return at::clamp(hidden, -clamp, clamp);
}

// (1 - mask) * finfo(dtype).min with `mask` already of `dtype` (get_extended_attention_mask's
// last step).
at::Tensor Additive(const at::Tensor& mask, c10::ScalarType dtype) {
  return (1.0 - mask.to(dtype)) * FinfoMin(dtype);
}

}  // namespace

at::Tensor RelativePositionBucket(const at::Tensor& relative_position, bool bidirectional,
                                  int64_t num_buckets, int64_t max_distance) {
  at::Tensor buckets = at::zeros_like(relative_position);
  at::Tensor position = relative_position;
  if (bidirectional) {
    num_buckets /= 2;
    buckets = buckets + (position > 0).to(at::kLong) * num_buckets;
    position = at::abs(position);
  } else {
    position = -at::min(position, at::zeros_like(position));
  }
  const int64_t max_exact = num_buckets / 2;
  const at::Tensor is_small = position < max_exact;
  at::Tensor if_large =
      max_exact + (at::log(position.to(at::kFloat) / max_exact) /
                   std::log(static_cast<double>(max_distance) / max_exact) *
                   (num_buckets - max_exact))
                      .to(at::kLong);
  if_large = at::min(if_large, at::full_like(if_large, num_buckets - 1));
  return buckets + at::where(is_small, position, if_large);
}

T5LayerNorm::T5LayerNorm(int64_t size, double eps) : eps_(eps) {
  weight = register_parameter("weight", at::ones({size}));
}

at::Tensor T5LayerNorm::Forward(const at::Tensor& x) {
  const at::Tensor variance = x.to(at::kFloat).pow(2).mean(-1, /*keepdim=*/true);
  at::Tensor hidden = x * at::rsqrt(variance + eps_);
  if (weight.scalar_type() == at::kHalf || weight.scalar_type() == at::kBFloat16) {
    hidden = hidden.to(weight.scalar_type());
  }
  return weight * hidden;
}

T5DenseActDense::T5DenseActDense(const T5Config& c) : gated_(c.IsGatedAct()), act_(c.DenseActFn()) {
  if (gated_) {
    wi_0 = register_module("wi_0", NoBias(c.d_model, c.d_ff));
    wi_1 = register_module("wi_1", NoBias(c.d_model, c.d_ff));
  } else {
    wi = register_module("wi", NoBias(c.d_model, c.d_ff));
  }
  wo = register_module("wo", NoBias(c.d_ff, c.d_model));
  dropout = register_module("dropout", torch::nn::Dropout(c.dropout_rate));
}

at::Tensor T5DenseActDense::Forward(const at::Tensor& x) {
  at::Tensor hidden;
  if (gated_) {
    const at::Tensor gelu = modeling::ApplyActivation(act_, Dense(wi_0, x));
    hidden = gelu * Dense(wi_1, x);
  } else {
    hidden = modeling::ApplyActivation(act_, Dense(wi, x));
  }
  hidden = dropout->forward(hidden);
  if (hidden.scalar_type() != wo->weight.scalar_type()) hidden = hidden.to(wo->weight.scalar_type());
  return Dense(wo, hidden);
}

T5LayerFF::T5LayerFF(const T5Config& c) {
  dense_relu_dense = register_module("DenseReluDense", std::make_shared<T5DenseActDense>(c));
  layer_norm = register_module("layer_norm",
                               std::make_shared<T5LayerNorm>(c.d_model, c.layer_norm_epsilon));
  dropout = register_module("dropout", torch::nn::Dropout(c.dropout_rate));
}

at::Tensor T5LayerFF::Forward(const at::Tensor& x) {
  const at::Tensor forwarded = dense_relu_dense->Forward(layer_norm->Forward(x));
  return x + dropout->forward(forwarded);
}

void T5Cache::Reorder(const at::Tensor& beam_idx) {
  for (T5LayerCache& layer : layers) {
    for (at::Tensor* t : {&layer.self_key, &layer.self_value, &layer.cross_key,
                          &layer.cross_value}) {
      if (t->defined()) *t = t->index_select(0, beam_idx.to(t->device()));
    }
  }
}

T5Attention::T5Attention(const T5Config& c, bool has_relative_attention_bias, bool is_decoder)
    : is_decoder_(is_decoder),
      has_relative_attention_bias_(has_relative_attention_bias),
      num_buckets_(c.relative_attention_num_buckets),
      max_distance_(c.relative_attention_max_distance),
      n_heads_(c.num_heads),
      d_kv_(c.d_kv),
      dropout_(c.dropout_rate) {
  const int64_t inner = n_heads_ * d_kv_;
  q = register_module("q", NoBias(c.d_model, inner));
  k = register_module("k", NoBias(c.d_model, inner));
  v = register_module("v", NoBias(c.d_model, inner));
  o = register_module("o", NoBias(inner, c.d_model));
  if (has_relative_attention_bias) {
    relative_attention_bias =
        register_module("relative_attention_bias", torch::nn::Embedding(num_buckets_, n_heads_));
  }
}

at::Tensor T5Attention::Heads(const at::Tensor& x) const {
  return x.view({x.size(0), -1, n_heads_, d_kv_}).transpose(1, 2);
}

at::Tensor T5Attention::ComputeBias(int64_t query_length, int64_t key_length) {
  const auto options = at::TensorOptions().dtype(at::kLong).device(
      relative_attention_bias->weight.device());
  const at::Tensor context = at::arange(key_length - query_length, key_length, options).unsqueeze(1);
  const at::Tensor memory = at::arange(key_length, options).unsqueeze(0);
  const at::Tensor bucket =
      RelativePositionBucket(memory - context, !is_decoder_, num_buckets_, max_distance_);
  return relative_attention_bias->forward(bucket).permute({2, 0, 1}).unsqueeze(0);
}

at::Tensor T5Attention::BiasWithMask(int64_t query_length, int64_t key_length,
                                     const at::Tensor& mask, const at::TensorOptions& options) {
  at::Tensor bias = has_relative_attention_bias_
                        ? ComputeBias(query_length, key_length)
                        : at::zeros({1, n_heads_, query_length, key_length}, options);
  return mask.defined() ? bias + mask : bias;
}

at::Tensor T5Attention::Forward(const at::Tensor& hidden, const at::Tensor& mask,
                                const at::Tensor& key_value_states,
                                const at::Tensor& position_bias, at::Tensor* position_bias_out,
                                at::Tensor* cache_key, at::Tensor* cache_value) {
  const bool cross = key_value_states.defined();
  const at::Tensor query = Heads(Dense(q, hidden));
  at::Tensor key, value;
  if (cross && cache_key != nullptr && cache_key->defined()) {
    key = *cache_key;  // the encoder's keys and values do not change between steps
    value = *cache_value;
  } else {
    const at::Tensor& source = cross ? key_value_states : hidden;
    key = Heads(Dense(k, source));
    value = Heads(Dense(v, source));
    if (!cross && cache_key != nullptr && cache_key->defined()) {
      key = at::cat({*cache_key, key}, 2);
      value = at::cat({*cache_value, value}, 2);
    }
  }
  if (cache_key != nullptr) {
    *cache_key = key;
    *cache_value = value;
  }
  at::Tensor scores = at::matmul(query, key.transpose(3, 2));
  at::Tensor bias = position_bias;
  if (!bias.defined()) {
    bias = BiasWithMask(hidden.size(1), key.size(2), mask, scores.options());
    *position_bias_out = bias;
  }
  scores += bias;
  at::Tensor weights = at::softmax(scores.to(at::kFloat), -1).type_as(scores);
  weights = F::dropout(weights, F::DropoutFuncOptions().p(dropout_).training(is_training()));
  const at::Tensor context = at::matmul(weights, value).transpose(1, 2).contiguous();
  return Dense(o, context.view({hidden.size(0), -1, n_heads_ * d_kv_}));
}

T5LayerSelfAttention::T5LayerSelfAttention(const T5Config& c, bool has_relative_attention_bias,
                                           bool is_decoder) {
  self_attention = register_module(
      "SelfAttention", std::make_shared<T5Attention>(c, has_relative_attention_bias, is_decoder));
  layer_norm = register_module("layer_norm",
                               std::make_shared<T5LayerNorm>(c.d_model, c.layer_norm_epsilon));
  dropout = register_module("dropout", torch::nn::Dropout(c.dropout_rate));
}

T5LayerCrossAttention::T5LayerCrossAttention(const T5Config& c) {
  enc_dec_attention = register_module(
      "EncDecAttention", std::make_shared<T5Attention>(c, /*has_relative_attention_bias=*/false,
                                                       /*is_decoder=*/true));
  layer_norm = register_module("layer_norm",
                               std::make_shared<T5LayerNorm>(c.d_model, c.layer_norm_epsilon));
  dropout = register_module("dropout", torch::nn::Dropout(c.dropout_rate));
}

T5Block::T5Block(const T5Config& c, bool has_relative_attention_bias, bool is_decoder)
    : is_decoder_(is_decoder) {
  layer = register_module("layer", torch::nn::ModuleList());
  self_layer_ = std::make_shared<T5LayerSelfAttention>(c, has_relative_attention_bias, is_decoder);
  layer->push_back(self_layer_);
  if (is_decoder) {
    cross_layer_ = std::make_shared<T5LayerCrossAttention>(c);
    layer->push_back(cross_layer_);
  }
  ff_layer_ = std::make_shared<T5LayerFF>(c);
  layer->push_back(ff_layer_);
}

at::Tensor T5Block::Forward(at::Tensor hidden, T5BlockContext& ctx) {
  T5LayerCache* cache = ctx.cache;
  {
    const at::Tensor normed = self_layer_->layer_norm->Forward(hidden);
    const at::Tensor attended = self_layer_->self_attention->Forward(
        normed, ctx.mask, at::Tensor(), ctx.position_bias, &ctx.position_bias,
        cache != nullptr ? &cache->self_key : nullptr,
        cache != nullptr ? &cache->self_value : nullptr);
    hidden = ClampFp16(hidden + self_layer_->dropout->forward(attended));
  }
  if (is_decoder_ && ctx.encoder_hidden.defined()) {
    const at::Tensor normed = cross_layer_->layer_norm->Forward(hidden);
    const at::Tensor attended = cross_layer_->enc_dec_attention->Forward(
        normed, ctx.encoder_mask, ctx.encoder_hidden, ctx.encoder_decoder_bias,
        &ctx.encoder_decoder_bias, cache != nullptr ? &cache->cross_key : nullptr,
        cache != nullptr ? &cache->cross_value : nullptr);
    hidden = ClampFp16(hidden + cross_layer_->dropout->forward(attended));
  }
  return ClampFp16(ff_layer_->Forward(hidden));
}

void T5Block::PrepareBiases(int64_t seq, T5BlockContext& ctx, const at::TensorOptions& options) {
  if (!ctx.position_bias.defined()) {
    ctx.position_bias = self_layer_->self_attention->BiasWithMask(seq, seq, ctx.mask, options);
  }
  if (is_decoder_ && ctx.encoder_hidden.defined() && !ctx.encoder_decoder_bias.defined()) {
    ctx.encoder_decoder_bias = cross_layer_->enc_dec_attention->BiasWithMask(
        seq, ctx.encoder_hidden.size(1), ctx.encoder_mask, options);
  }
}

T5Stack::T5Stack(const T5Config& c, torch::nn::Embedding embed_tokens, bool is_decoder)
    : embed_tokens_(std::move(embed_tokens)), is_decoder_(is_decoder) {
  block = register_module("block", torch::nn::ModuleList());
  const int64_t layers = is_decoder ? c.DecoderLayers() : c.num_layers;
  for (int64_t i = 0; i < layers; ++i) {
    block->push_back(std::make_shared<T5Block>(c, /*has_relative_attention_bias=*/i == 0,
                                               is_decoder));
  }
  final_layer_norm = register_module(
      "final_layer_norm", std::make_shared<T5LayerNorm>(c.d_model, c.layer_norm_epsilon));
  dropout = register_module("dropout", torch::nn::Dropout(c.dropout_rate));
}

// get_extended_attention_mask: the padding mask, times the causal mask in the decoder (whose
// cached prefix every new position sees).
at::Tensor T5Stack::SelfAttentionMask(const at::Tensor& attention_mask, int64_t batch,
                                      int64_t seq, int64_t past, c10::ScalarType dtype,
                                      const at::Device& device) const {
  const at::Tensor mask =
      attention_mask.defined()
          ? attention_mask
          : at::ones({batch, past + seq}, at::TensorOptions().dtype(at::kFloat).device(device));
  TORCH_CHECK(mask.dim() == 2 && mask.size(0) == batch && mask.size(1) == past + seq,
              "attention_mask must be [batch, ", past + seq, "], got ", mask.sizes());
  if (!is_decoder_) return Additive(mask.unsqueeze(1).unsqueeze(1), dtype);
  const at::Tensor ids = at::arange(seq, at::TensorOptions().dtype(at::kLong).device(device));
  at::Tensor causal =
      (ids.unsqueeze(0).unsqueeze(0).repeat({batch, seq, 1}) <= ids.unsqueeze(0).unsqueeze(2))
          .to(mask.scalar_type());
  if (past > 0) {
    causal = at::cat({at::ones({batch, seq, past}, causal.options()), causal}, -1);
  }
  return Additive(causal.unsqueeze(1) * mask.unsqueeze(1).unsqueeze(1), dtype);
}

at::Tensor T5Stack::Forward(const at::Tensor& input_ids, const at::Tensor& attention_mask,
                            const at::Tensor& encoder_hidden,
                            const at::Tensor& encoder_attention_mask, T5Cache* cache) {
  TORCH_CHECK(input_ids.dim() == 2, "input_ids must be [batch, sequence], got ",
              input_ids.sizes());
  const at::Tensor embeds = embed_tokens_->forward(input_ids);
  const int64_t batch = input_ids.size(0), seq = input_ids.size(1);
  const int64_t past = cache != nullptr ? cache->Length() : 0;
  const c10::ScalarType dtype = embed_tokens_->weight.scalar_type();
  T5BlockContext ctx;
  ctx.mask = SelfAttentionMask(attention_mask, batch, seq, past, dtype, embeds.device());
  if (is_decoder_ && encoder_hidden.defined()) {
    ctx.encoder_hidden = encoder_hidden;
    const at::Tensor enc_mask =
        encoder_attention_mask.defined()
            ? encoder_attention_mask
            : at::ones({encoder_hidden.size(0), encoder_hidden.size(1)},
                       at::TensorOptions().dtype(at::kLong).device(embeds.device()));
    ctx.encoder_mask = Additive(enc_mask.unsqueeze(1).unsqueeze(1), dtype);
  }
  if (cache != nullptr && cache->layers.empty()) cache->layers.resize(block->size());
  at::Tensor hidden = dropout->forward(embeds);
  // HF's T5Stack turns use_cache off under gradient checkpointing while training.
  const bool checkpoint = gradient_checkpointing.has_value() && is_training() && cache == nullptr;
  for (size_t i = 0; i < block->size(); ++i) {
    ctx.cache = cache != nullptr ? &cache->layers[i] : nullptr;
    hidden = RunBlock(*block[i]->as<T5Block>(), hidden, ctx, checkpoint);
  }
  return dropout->forward(final_layer_norm->Forward(hidden));
}

// The context tensors a checkpointed block takes as inputs, in a fixed order.
static std::array<at::Tensor*, 5> ContextTensors(T5BlockContext& ctx) {
  return {&ctx.mask, &ctx.encoder_hidden, &ctx.encoder_mask, &ctx.position_bias,
          &ctx.encoder_decoder_bias};
}

// One block, through the unit runner; checkpointed, the block's inputs (the hidden state, the
// masks, the encoder's output and block 0's biases) are the recomputation's inputs.
at::Tensor T5Stack::RunBlock(T5Block& blk, const at::Tensor& hidden, T5BlockContext& ctx,
                             bool checkpoint) {
  return modeling::RunUnit(unit_runner, blk, [&]() -> at::Tensor {
    if (!checkpoint) return blk.Forward(hidden, ctx);
    blk.PrepareBiases(hidden.size(1), ctx, hidden.options());
    // The defined context tensors follow the hidden state; undefined ones stay undefined.
    std::vector<at::Tensor> inputs = {hidden};
    std::vector<bool> present;
    for (at::Tensor* slot : ContextTensors(ctx)) {
      present.push_back(slot->defined());
      if (slot->defined()) inputs.push_back(*slot);
    }
    return modeling::Checkpoint(
        [&blk, present](const std::vector<at::Tensor>& in) {
          T5BlockContext local;
          const std::array<at::Tensor*, 5> slots = ContextTensors(local);
          size_t next = 1;
          for (size_t s = 0; s < slots.size(); ++s) {
            if (present[s]) *slots[s] = in[next++];
          }
          return blk.Forward(in[0], local);
        },
        inputs, blk.parameters(), *gradient_checkpointing);
  });
}

T5Body::T5Body(const T5Config& c) : config_(c) {
  shared = register_module("shared", torch::nn::Embedding(c.vocab_size, c.d_model));
  encoder = register_module("encoder", std::make_shared<T5Stack>(c, shared, /*is_decoder=*/false));
  decoder = register_module("decoder", std::make_shared<T5Stack>(c, shared, /*is_decoder=*/true));
  if (!c.tie_word_embeddings) lm_head = register_module("lm_head", NoBias(c.d_model, c.vocab_size));
}

at::Tensor T5Body::Encode(const at::Tensor& input_ids, const at::Tensor& attention_mask) {
  return encoder->Forward(input_ids, attention_mask, at::Tensor(), at::Tensor(), nullptr);
}

at::Tensor T5Body::Decode(const at::Tensor& decoder_input_ids,
                          const at::Tensor& decoder_attention_mask,
                          const at::Tensor& encoder_hidden,
                          const at::Tensor& encoder_attention_mask, T5Cache* cache) {
  return decoder->Forward(decoder_input_ids, decoder_attention_mask, encoder_hidden,
                          encoder_attention_mask, cache);
}

at::Tensor T5Body::Logits(const at::Tensor& decoder_hidden) {
  if (!config_.tie_word_embeddings) return Dense(lm_head, decoder_hidden);
  const at::Tensor scaled = decoder_hidden * std::pow(static_cast<double>(config_.d_model), -0.5);
  return at::linear(scaled, shared->weight);
}

at::Tensor T5Body::ShiftRight(const at::Tensor& labels) const {
  if (!config_.decoder_start_token_id.has_value()) {
    throw std::invalid_argument(
        "config.decoder_start_token_id has to be defined to shift labels into decoder inputs "
        "(in T5 it is usually the pad_token_id); set it in config.json");
  }
  if (!config_.pad_token_id.has_value()) {
    throw std::invalid_argument("config.pad_token_id has to be defined; set it in config.json");
  }
  at::Tensor shifted = at::zeros_like(labels);
  shifted.narrow(-1, 1, labels.size(-1) - 1).copy_(labels.narrow(-1, 0, labels.size(-1) - 1));
  shifted.select(-1, 0).fill_(*config_.decoder_start_token_id);
  return shifted.masked_fill_(shifted == -100, *config_.pad_token_id);
}

namespace {

void Normal(const at::Tensor& weight, double std, at::Generator& gen) {
  at::NoGradGuard no_grad;
  weight.normal_(0.0, std, gen);
}

// _init_weights on one module, when it is one of T5's (the other modules draw nothing).
void InitModule(torch::nn::Module& module, const T5Config& c, at::Generator& gen) {
  const double f = c.initializer_factor;
  if (auto* norm = dynamic_cast<T5LayerNorm*>(&module)) {
    at::NoGradGuard no_grad;
    norm->weight.fill_(f * 1.0);
  } else if (auto* ff = dynamic_cast<T5DenseActDense*>(&module)) {
    for (auto* w : {&ff->wi, &ff->wi_0, &ff->wi_1}) {
      if (!w->is_empty()) Normal((*w)->weight, f * std::pow(c.d_model, -0.5), gen);
    }
    Normal(ff->wo->weight, f * std::pow(c.d_ff, -0.5), gen);
  } else if (auto* att = dynamic_cast<T5Attention*>(&module)) {
    Normal(att->q->weight, f * std::pow(static_cast<double>(c.d_model * c.d_kv), -0.5), gen);
    Normal(att->k->weight, f * std::pow(c.d_model, -0.5), gen);
    Normal(att->v->weight, f * std::pow(c.d_model, -0.5), gen);
    Normal(att->o->weight, f * std::pow(static_cast<double>(c.num_heads * c.d_kv), -0.5), gen);
    if (!att->relative_attention_bias.is_empty()) {
      Normal(att->relative_attention_bias->weight, f * std::pow(c.d_model, -0.5), gen);
    }
  } else if (auto* body = dynamic_cast<T5Body*>(&module)) {
    Normal(body->shared->weight, f * 1.0, gen);
    if (!body->lm_head.is_empty()) Normal(body->lm_head->weight, f * 1.0, gen);
  }
}

// nn.Module.apply: children first, then the module itself.
void ApplyPostOrder(torch::nn::Module& module, const T5Config& c, at::Generator& gen) {
  for (const auto& child : module.children()) ApplyPostOrder(*child, c, gen);
  InitModule(module, c, gen);
}

}  // namespace

void InitT5Weights(T5Body& body, uint64_t seed) {
  at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  ApplyPostOrder(body, body.config(), gen);
}

}  // namespace loom::models::t5
