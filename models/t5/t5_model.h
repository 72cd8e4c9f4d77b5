// T5: transformers 4.41's T5 modules (modeling_t5.py) as LibTorch modules whose state-dict
// keys are HF's: T5LayerNorm, T5DenseActDense / T5DenseGatedActDense, T5Attention (relative
// position buckets, no score scaling), T5Block, T5Stack, and the T5ForConditionalGeneration
// body (t5_for_conditional_generation.h wraps it in loom's model contract).
//
// Contract:
//   Module tree and tensor names (registered in HF's order, so ModuleStateDict lists HF's
//   state_dict() keys in HF's order, minus the tied aliases save_pretrained drops):
//     shared.weight,
//     {encoder,decoder}.block.<i>.layer.0.SelfAttention.{q,k,v,o}.weight,
//     {encoder,decoder}.block.0.layer.0.SelfAttention.relative_attention_bias.weight (block 0
//       only), {encoder,decoder}.block.<i>.layer.0.layer_norm.weight,
//     decoder.block.<i>.layer.1.EncDecAttention.{q,k,v,o}.weight, ...layer.1.layer_norm.weight,
//     {encoder,decoder}.block.<i>.layer.<last>.DenseReluDense.{wi,wo}.weight (or wi_0, wi_1, wo
//       when gated), ...layer.<last>.layer_norm.weight,
//     {encoder,decoder}.final_layer_norm.weight,
//     lm_head.weight (only when tie_word_embeddings is false).
//   The stacks' embed_tokens and a tied lm_head are the `shared` module itself, not registered
//   again (LibTorch, unlike Python, would list a shared parameter twice), so
//   encoder.embed_tokens.weight / decoder.embed_tokens.weight / a tied lm_head.weight are not
//   state-dict keys here; the loader maps them (pretrained.h).
//   Semantics (T5Attention / T5Block / T5Stack of transformers 4.41, eager attention):
//     - T5LayerNorm: x * rsqrt(mean(x.float()^2) + eps), cast to the weight's dtype when that
//       is half / bfloat16, times weight; no mean subtraction, no bias.
//     - Feed-forward: wo(dropout(act(wi(x)))) or wo(dropout(act(wi_0(x)) * wi_1(x))), the
//       hidden state cast to wo's dtype first when they differ (HF's mixed-precision rule).
//     - Attention: scores = q k^T (no 1/sqrt(d)), plus position_bias (block 0's
//       relative_attention_bias over HF's buckets — bidirectional in the encoder, causal in the
//       decoder — or zeros in cross attention) plus the additive mask; softmax in fp32, cast
//       back; dropout; context; o. Block 0 computes the bias, later blocks reuse it.
//     - Encoder masks: (1 - mask[:, None, None, :]) * finfo.min; decoder self-attention: the
//       causal mask times the padding mask (ones for the cached prefix).
//     - fp16 hidden states are clamped to finfo.max - 1000 after each sublayer, as HF does.
//     - Incremental decoding: Forward with a T5Cache appends the new self-attention keys and
//       values per decoder layer and computes the cross-attention keys and values once; the
//       position bias then covers the new query positions only.
//   Inputs that do not fit throw c10::Error / std::invalid_argument (T5ForConditionalGeneration
//   converts them to a Status at loom's boundary).
//
// Example:
//   auto body = std::make_shared<T5Body>(config);
//   at::Tensor encoded = body->Encode(input_ids, attention_mask);
//   at::Tensor hidden = body->Decode(decoder_input_ids, at::Tensor(), encoded, attention_mask,
//                                    /*cache=*/nullptr);
#ifndef LOOM_MODELS_T5_T5_MODEL_H_
#define LOOM_MODELS_T5_T5_MODEL_H_

#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "modeling/activation_checkpoint.h"
#include "modeling/seq2seq_lm.h"
#include "modeling/unit_runner.h"
#include "models/t5/t5_config.h"

namespace loom::models::t5 {

// transformers 4.41 T5Attention._relative_position_bucket.
at::Tensor RelativePositionBucket(const at::Tensor& relative_position, bool bidirectional,
                                  int64_t num_buckets, int64_t max_distance);

class T5LayerNorm : public torch::nn::Module {
 public:
  T5LayerNorm(int64_t size, double eps);
  at::Tensor Forward(const at::Tensor& x);

  at::Tensor weight;

 private:
  double eps_;
};

class T5DenseActDense : public torch::nn::Module {
 public:
  explicit T5DenseActDense(const T5Config& config);
  at::Tensor Forward(const at::Tensor& x);

  torch::nn::Linear wi{nullptr}, wi_0{nullptr}, wi_1{nullptr}, wo{nullptr};
  torch::nn::Dropout dropout{nullptr};

 private:
  bool gated_;
  std::string act_;
};

class T5LayerFF : public torch::nn::Module {
 public:
  explicit T5LayerFF(const T5Config& config);
  at::Tensor Forward(const at::Tensor& x);

  std::shared_ptr<T5DenseActDense> dense_relu_dense;  // "DenseReluDense"
  std::shared_ptr<T5LayerNorm> layer_norm;
  torch::nn::Dropout dropout{nullptr};
};

// One layer's cached keys and values, [B, heads, length, d_kv].
struct T5LayerCache {
  at::Tensor self_key, self_value;    // grow by the new positions each step
  at::Tensor cross_key, cross_value;  // the encoder's, computed once
};

// The decoder's cache: one entry per decoder block (empty before the first step).
struct T5Cache : public modeling::DecoderCache {
  std::vector<T5LayerCache> layers;
  int64_t Length() const {
    return layers.empty() || !layers[0].self_key.defined() ? 0 : layers[0].self_key.size(2);
  }
  // Keeps the rows `beam_idx` of every cached tensor (generation's _reorder_cache).
  void Reorder(const at::Tensor& beam_idx) override;
};

class T5Attention : public torch::nn::Module {
 public:
  T5Attention(const T5Config& config, bool has_relative_attention_bias, bool is_decoder);

  // Self attention (key_value_states undefined) or cross attention. `position_bias` is the
  // bias (+ mask) block 0 computed, or undefined in block 0 (then it is computed here from
  // `mask` and returned through *position_bias_out). `cache_key` / `cache_value`, when not
  // null, hold this layer's cached keys and values and are updated.
  at::Tensor Forward(const at::Tensor& hidden, const at::Tensor& mask,
                     const at::Tensor& key_value_states, const at::Tensor& position_bias,
                     at::Tensor* position_bias_out, at::Tensor* cache_key, at::Tensor* cache_value);

  // [1, heads, query_length, key_length]: the bias of query positions
  // key_length - query_length .. key_length - 1 (HF's compute_bias, sliced as with a cache).
  at::Tensor ComputeBias(int64_t query_length, int64_t key_length);
  // What block 0 hands on: ComputeBias (zeros in a layer without relative_attention_bias,
  // `dtype`) plus `mask` when defined.
  at::Tensor BiasWithMask(int64_t query_length, int64_t key_length, const at::Tensor& mask,
                          const at::TensorOptions& options);

  torch::nn::Linear q{nullptr}, k{nullptr}, v{nullptr}, o{nullptr};
  torch::nn::Embedding relative_attention_bias{nullptr};

 private:
  at::Tensor Heads(const at::Tensor& x) const;
  bool is_decoder_;
  bool has_relative_attention_bias_;
  int64_t num_buckets_, max_distance_, n_heads_, d_kv_;
  double dropout_;
};

class T5LayerSelfAttention : public torch::nn::Module {
 public:
  T5LayerSelfAttention(const T5Config& config, bool has_relative_attention_bias, bool is_decoder);
  std::shared_ptr<T5Attention> self_attention;  // "SelfAttention"
  std::shared_ptr<T5LayerNorm> layer_norm;
  torch::nn::Dropout dropout{nullptr};
};

class T5LayerCrossAttention : public torch::nn::Module {
 public:
  explicit T5LayerCrossAttention(const T5Config& config);
  std::shared_ptr<T5Attention> enc_dec_attention;  // "EncDecAttention"
  std::shared_ptr<T5LayerNorm> layer_norm;
  torch::nn::Dropout dropout{nullptr};
};

// What a block reads besides the hidden state, and the biases block 0 hands on.
struct T5BlockContext {
  at::Tensor mask;                   // additive self-attention mask
  at::Tensor encoder_hidden;         // decoder only
  at::Tensor encoder_mask;           // additive cross-attention mask, decoder only
  at::Tensor position_bias;          // undefined until block 0 set it
  at::Tensor encoder_decoder_bias;   // likewise
  T5LayerCache* cache = nullptr;     // decoder with a cache only
};

class T5Block : public torch::nn::Module {
 public:
  T5Block(const T5Config& config, bool has_relative_attention_bias, bool is_decoder);
  at::Tensor Forward(at::Tensor hidden, T5BlockContext& context);
  // Fills context.position_bias (and encoder_decoder_bias in the decoder) when still undefined,
  // for `seq` new positions without a cache: what Forward would compute, done before a
  // checkpointed Forward so the biases are inputs of the recomputation (HF passes them to the
  // checkpointed block in the same way).
  void PrepareBiases(int64_t seq, T5BlockContext& context, const at::TensorOptions& options);

  torch::nn::ModuleList layer{nullptr};

 private:
  bool is_decoder_;
  std::shared_ptr<T5LayerSelfAttention> self_layer_;
  std::shared_ptr<T5LayerCrossAttention> cross_layer_;
  std::shared_ptr<T5LayerFF> ff_layer_;
};

class T5Stack : public torch::nn::Module {
 public:
  T5Stack(const T5Config& config, torch::nn::Embedding embed_tokens, bool is_decoder);

  // The encoder (encoder_hidden undefined) or the decoder. attention_mask [B, S] (undefined:
  // all ones, over the cached prefix too); encoder_attention_mask [B, S_enc] (undefined: ones).
  at::Tensor Forward(const at::Tensor& input_ids, const at::Tensor& attention_mask,
                     const at::Tensor& encoder_hidden, const at::Tensor& encoder_attention_mask,
                     T5Cache* cache);

  torch::nn::ModuleList block{nullptr};
  std::shared_ptr<T5LayerNorm> final_layer_norm;
  torch::nn::Dropout dropout{nullptr};
  // Each T5Block runs through this runner (modeling/unit_runner.h) when set: block 0's
  // position biases are computed inside its unit, while its parameters are gathered.
  modeling::UnitRunner* unit_runner = nullptr;
  // Set: every block's activations are recomputed in backward while training without a cache.
  std::optional<modeling::CheckpointingOptions> gradient_checkpointing;

 private:
  at::Tensor RunBlock(T5Block& block, const at::Tensor& hidden, T5BlockContext& ctx,
                      bool checkpoint);
  at::Tensor SelfAttentionMask(const at::Tensor& attention_mask, int64_t batch, int64_t seq,
                               int64_t past, c10::ScalarType dtype, const at::Device& device) const;
  torch::nn::Embedding embed_tokens_;  // not registered: it is the model's `shared`
  bool is_decoder_;
};

// The parameters and forward of T5ForConditionalGeneration.
class T5Body : public torch::nn::Module {
 public:
  explicit T5Body(const T5Config& config);

  at::Tensor Encode(const at::Tensor& input_ids, const at::Tensor& attention_mask);
  // The decoder's last hidden state, [B, T, d_model].
  at::Tensor Decode(const at::Tensor& decoder_input_ids, const at::Tensor& decoder_attention_mask,
                    const at::Tensor& encoder_hidden, const at::Tensor& encoder_attention_mask,
                    T5Cache* cache);
  // lm_head over the decoder's output (scaled by d_model^-0.5 when the embeddings are tied).
  at::Tensor Logits(const at::Tensor& decoder_hidden);
  // HF's _shift_right: decoder_start_token_id first, labels moved right, -100 -> pad.
  at::Tensor ShiftRight(const at::Tensor& labels) const;

  const T5Config& config() const { return config_; }

  torch::nn::Embedding shared{nullptr};
  std::shared_ptr<T5Stack> encoder, decoder;
  torch::nn::Linear lm_head{nullptr};  // registered only when not tied

 private:
  T5Config config_;
};

// HF's T5PreTrainedModel._init_weights on every submodule, drawing from a CPU generator seeded
// with `seed` in module order (initializer_factor scales every standard deviation).
void InitT5Weights(T5Body& body, uint64_t seed);

}  // namespace loom::models::t5

#endif  // LOOM_MODELS_T5_T5_MODEL_H_
