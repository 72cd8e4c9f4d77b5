// Llama: transformers 4.41's Llama modules (modeling_llama.py) as LibTorch modules whose
// state-dict keys are HF's: LlamaRMSNorm, the rotary embedding, LlamaMLP (SwiGLU),
// LlamaAttention (grouped-query, eager), LlamaDecoderLayer and LlamaModel
// (llama_for_causal_lm.h adds the LM head under loom's model contract).
//
// Contract:
//   Module tree and tensor names (HF's order): model.embed_tokens.weight,
//     model.layers.<i>.self_attn.{q,k,v,o}_proj.weight (and .bias with attention_bias),
//     model.layers.<i>.mlp.{gate,up,down}_proj.weight (and .bias with mlp_bias),
//     model.layers.<i>.{input_layernorm,post_attention_layernorm}.weight, model.norm.weight,
//     lm_head.weight (LlamaForCausalLM, only when tie_word_embeddings is false; a tied head is
//     model.embed_tokens itself, as save_pretrained drops the alias).
//   Semantics (transformers 4.41, eager attention):
//     - LlamaRMSNorm: weight * (x.float() * rsqrt(mean(x.float()^2) + eps)).to(x.dtype).
//     - Rotary: inv_freq = 1 / theta^(arange(0, d, 2) / d) (float32); cos, sin of
//       cat(freqs, freqs) with freqs = inv_freq (x) positions, cast to the activations' dtype;
//       q' = q cos + rotate_half(q) sin. rope_scaling "linear" divides the positions by the
//       factor; "dynamic" (NTK) recomputes inv_freq from theta * ((f L / max_pos) - (f - 1))^(d /
//       (d - 2)) when a call's largest position L exceeds max_position_embeddings (per call:
//       4.41 kept the enlarged frequencies for later shorter calls, loom does not); "llama3"
//       rescales the frequencies as transformers 4.43's _compute_llama3_parameters.
//     - MLP: down(act(gate(x)) * up(x)).
//     - Attention: q, k, v projected, heads split (num_key_value_heads for k, v), rotary applied,
//       the cache's keys and values prepended, k and v repeated num_heads / kv_heads times
//       (repeat_kv), scores q k^T / sqrt(head_dim) + the additive mask, softmax in float32 cast
//       back, dropout(attention_dropout) in training, context, o_proj.
//     - Decoder layer: h + attn(input_layernorm(h)), then h + mlp(post_attention_layernorm(h)).
//     - Mask (LlamaModel._update_causal_mask): key j is hidden from query i when j is after i's
//       position or attention_mask[j] == 0, by adding finfo(dtype).min.
//     - Positions default to past .. past + seq - 1 (cache_position), as LlamaModel.forward.
//   Inputs that do not fit throw c10::Error / std::invalid_argument.
//
// Example:
//   auto model = std::make_shared<LlamaModel>(config);
//   at::Tensor hidden = model->Forward(input_ids, attention_mask, at::Tensor(), nullptr);
#ifndef LOOM_MODELS_LLAMA_LLAMA_MODEL_H_
#define LOOM_MODELS_LLAMA_LLAMA_MODEL_H_

#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "modeling/activation_checkpoint.h"
#include "modeling/decoder_cache.h"
#include "modeling/unit_runner.h"
#include "models/llama/llama_config.h"

namespace loom::models::llama {

class LlamaRMSNorm : public torch::nn::Module {
 public:
  LlamaRMSNorm(int64_t size, double eps);
  at::Tensor Forward(const at::Tensor& x);

  at::Tensor weight;

 private:
  double eps_;
};

// HF's LlamaRotaryEmbedding (and its scaled variants). Not a module: inv_freq is a
// non-persistent buffer in HF, never in the state dict.
class LlamaRotaryEmbedding {
 public:
  explicit LlamaRotaryEmbedding(const LlamaConfig& config);
  // cos and sin, [B, S, head_dim] in `dtype`, for position_ids [B, S].
  std::pair<at::Tensor, at::Tensor> CosSin(const at::Tensor& position_ids,
                                           c10::ScalarType dtype) const;
  const at::Tensor& inv_freq() const { return inv_freq_; }

 private:
  at::Tensor InvFreq(double base) const;
  int64_t dim_;
  double base_;
  int64_t max_position_embeddings_;
  std::optional<RopeScaling> scaling_;
  at::Tensor inv_freq_;  // float32, CPU
};

// apply_rotary_pos_emb for one tensor [B, heads, S, d] with cos, sin [B, S, d].
at::Tensor ApplyRotary(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin);

class LlamaMLP : public torch::nn::Module {
 public:
  explicit LlamaMLP(const LlamaConfig& config);
  at::Tensor Forward(const at::Tensor& x);

  torch::nn::Linear gate_proj{nullptr}, up_proj{nullptr}, down_proj{nullptr};

 private:
  std::string act_;
};

// One layer's cached keys and values, [B, kv_heads, length, head_dim] (rotated, before
// repeat_kv).
struct LlamaLayerCache {
  at::Tensor key, value;
};

// The decoder's cache (HF's DynamicCache): one entry per layer.
struct LlamaCache : public modeling::DecoderCache {
  std::vector<LlamaLayerCache> layers;
  int64_t Length() const {
    return layers.empty() || !layers[0].key.defined() ? 0 : layers[0].key.size(2);
  }
  void Reorder(const at::Tensor& beam_idx) override;
};

// What a decoder layer reads besides the hidden state.
struct LlamaLayerContext {
  at::Tensor cos, sin;           // [B, S, head_dim]
  at::Tensor mask;               // additive [B, 1, S, past + S]
  LlamaLayerCache* cache = nullptr;
};

class LlamaAttention : public torch::nn::Module {
 public:
  explicit LlamaAttention(const LlamaConfig& config);
  at::Tensor Forward(const at::Tensor& hidden, const LlamaLayerContext& context);

  torch::nn::Linear q_proj{nullptr}, k_proj{nullptr}, v_proj{nullptr}, o_proj{nullptr};

 private:
  at::Tensor Heads(const at::Tensor& x, int64_t heads) const;
  int64_t heads_, kv_heads_, head_dim_;
  double dropout_;
};

class LlamaDecoderLayer : public torch::nn::Module {
 public:
  explicit LlamaDecoderLayer(const LlamaConfig& config);
  at::Tensor Forward(const at::Tensor& hidden, const LlamaLayerContext& context);

  std::shared_ptr<LlamaAttention> self_attn;
  std::shared_ptr<LlamaMLP> mlp;
  std::shared_ptr<LlamaRMSNorm> input_layernorm, post_attention_layernorm;
};

// The additive mask [B, 1, seq, past + seq] of _update_causal_mask (eager): 0 where query i may
// see key j, finfo(dtype).min where j is a later position or attention_mask [B, past + seq]
// (undefined: none) is 0 there.
at::Tensor CausalMask(const at::Tensor& attention_mask, int64_t batch, int64_t seq, int64_t past,
                      c10::ScalarType dtype, const at::Device& device);

class LlamaModel : public torch::nn::Module {
 public:
  // `deferred`: every parameter is deferred (modeling/deferred_init.h) as soon as its module
  // is built, so construction holds at most one decoder layer's bytes.
  explicit LlamaModel(const LlamaConfig& config, bool deferred = false);

  // The last hidden state (after the final norm), [B, S, hidden]. attention_mask [B, past + S]
  // or undefined; position_ids [B, S] or undefined (past .. past + S - 1); cache or null.
  at::Tensor Forward(const at::Tensor& input_ids, const at::Tensor& attention_mask,
                     const at::Tensor& position_ids, LlamaCache* cache);

  torch::nn::Embedding embed_tokens{nullptr};
  torch::nn::ModuleList layers{nullptr};
  std::shared_ptr<LlamaRMSNorm> norm;
  // Each LlamaDecoderLayer runs through this runner (modeling/unit_runner.h) when set.
  modeling::UnitRunner* unit_runner = nullptr;
  // Set: every layer's activations are recomputed in backward while training without a cache.
  std::optional<modeling::CheckpointingOptions> gradient_checkpointing;

 private:
  at::Tensor RunLayer(LlamaDecoderLayer& layer, const at::Tensor& hidden,
                      const LlamaLayerContext& ctx, bool checkpoint);
  LlamaRotaryEmbedding rotary_;
};

// HF's LlamaPreTrainedModel._init_weights on every nn.Linear (normal(0, initializer_range),
// bias 0), nn.Embedding (the same, the padding row 0) and LlamaRMSNorm (ones) under `module`.
// Each tensor draws from its own CPU generator seeded from (seed, prefix + its name), not
// from one stream, so that any part of the model (one decoder layer, built alone for sharded
// construction) gets exactly the values whole-model initialisation gives it.
void InitLlamaWeights(torch::nn::Module& module, const std::string& prefix,
                      const LlamaConfig& config, uint64_t seed);

// What InitLlamaWeights writes into the parameter `local_name` ("weight", "bias") of `owner`,
// whose name in the whole model is `name`, written into `dest` — how a deferred model
// materialises one parameter (the same values, whatever else exists).
void InitLlamaParameter(const torch::nn::Module& owner, const std::string& local_name,
                        const std::string& name, const LlamaConfig& config, uint64_t seed,
                        at::Tensor& dest);

}  // namespace loom::models::llama

#endif  // LOOM_MODELS_LLAMA_LLAMA_MODEL_H_
