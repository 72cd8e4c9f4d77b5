#include "models/llama/llama_model.h"

#include <ATen/CPUGeneratorImpl.h>
#include <c10/core/DispatchKeySet.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <c10/util/Exception.h>

#include <cmath>
#include <utility>

#include "modeling/deferred_init.h"
#include "modeling/layers.h"

namespace loom::models::llama {
namespace {

using modeling::Dense;

torch::nn::Linear Projection(int64_t in, int64_t out, bool bias) {
  return torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(bias));
}

// rotate_half: cat(-x2, x1) of the two halves of the last dimension.
at::Tensor RotateHalf(const at::Tensor& x) {
  const int64_t half = x.size(-1) / 2;
  return at::cat({-x.narrow(-1, half, half), x.narrow(-1, 0, half)}, -1);
}

// repeat_kv: [B, kv, S, d] -> [B, kv * n_rep, S, d], each head repeated n_rep times in place.
at::Tensor RepeatKv(const at::Tensor& x, int64_t n_rep) {
  if (n_rep == 1) return x;
  const int64_t b = x.size(0), kv = x.size(1), s = x.size(2), d = x.size(3);
  return x.unsqueeze(2).expand({b, kv, n_rep, s, d}).reshape({b, kv * n_rep, s, d});
}

}  // namespace

LlamaRMSNorm::LlamaRMSNorm(int64_t size, double eps) : eps_(eps) {
  weight = register_parameter("weight", at::ones({size}));
}

at::Tensor LlamaRMSNorm::Forward(const at::Tensor& x) {
  const at::Tensor h = x.to(at::kFloat);
  const at::Tensor variance = h.pow(2).mean(-1, /*keepdim=*/true);
  return weight * (h * at::rsqrt(variance + eps_)).to(x.scalar_type());
}

LlamaRotaryEmbedding::LlamaRotaryEmbedding(const LlamaConfig& config)
    : dim_(config.HeadDim()),
      base_(config.rope_theta),
      max_position_embeddings_(config.max_position_embeddings),
      scaling_(config.rope_scaling) {
  inv_freq_ = InvFreq(base_);
  if (scaling_.has_value() && scaling_->type == RopeScalingType::kLlama3) {
    // transformers 4.43 _compute_llama3_parameters, in float32 as there.
    const RopeScaling& s = *scaling_;
    const double old_len = static_cast<double>(s.original_max_position_embeddings);
    const double low_wavelen = old_len / s.low_freq_factor;
    const double high_wavelen = old_len / s.high_freq_factor;
    const at::Tensor wavelen = inv_freq_.reciprocal() * (2 * M_PI);
    at::Tensor scaled = at::where(wavelen > low_wavelen, inv_freq_ / s.factor, inv_freq_);
    const at::Tensor smooth =
        (wavelen.reciprocal() * old_len - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
    const at::Tensor smoothed = (1 - smooth) * scaled / s.factor + smooth * scaled;
    const at::Tensor medium = (~(wavelen < high_wavelen)) & (~(wavelen > low_wavelen));
    inv_freq_ = at::where(medium, smoothed, scaled);
  }
}

at::Tensor LlamaRotaryEmbedding::InvFreq(double base) const {
  const at::Tensor exponents = at::arange(0, dim_, 2, at::kLong).to(at::kFloat) / dim_;
  return at::pow(base, exponents).reciprocal();
}

std::pair<at::Tensor, at::Tensor> LlamaRotaryEmbedding::CosSin(const at::Tensor& position_ids,
                                                                c10::ScalarType dtype) const {
  at::Tensor positions = position_ids.to(at::kFloat);
  at::Tensor inv_freq = inv_freq_;
  if (scaling_.has_value() && scaling_->type == RopeScalingType::kLinear) {
    positions = positions / scaling_->factor;
  } else if (scaling_.has_value() && scaling_->type == RopeScalingType::kDynamic) {
    const at::Tensor seq_len = position_ids.max().to(at::kCPU) + 1;
    if (seq_len.item<int64_t>() > max_position_embeddings_) {
      const double f = scaling_->factor;
      const at::Tensor base =
          at::pow(seq_len * f / static_cast<double>(max_position_embeddings_) - (f - 1),
                  static_cast<double>(dim_) / static_cast<double>(dim_ - 2)) *
          base_;
      inv_freq =
          at::pow(base, at::arange(0, dim_, 2, at::kLong).to(at::kFloat) / dim_).reciprocal();
    }
  }
  // transformers 4.41 computes the angles with autocast disabled (bf16 positions and angles
  // lose whole radians on long contexts).
  c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::autocast_dispatch_keyset);
  const int64_t batch = position_ids.size(0);
  const at::Tensor inv = inv_freq.to(position_ids.device())
                             .unsqueeze(0)
                             .unsqueeze(-1)
                             .expand({batch, inv_freq.size(0), 1});
  const at::Tensor freqs = at::matmul(inv, positions.unsqueeze(1)).transpose(1, 2);
  const at::Tensor emb = at::cat({freqs, freqs}, -1);
  return {emb.cos().to(dtype), emb.sin().to(dtype)};
}

at::Tensor ApplyRotary(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) {
  return x * cos.unsqueeze(1) + RotateHalf(x) * sin.unsqueeze(1);
}

LlamaMLP::LlamaMLP(const LlamaConfig& c) : act_(c.hidden_act) {
  gate_proj = register_module("gate_proj", Projection(c.hidden_size, c.intermediate_size, c.mlp_bias));
  up_proj = register_module("up_proj", Projection(c.hidden_size, c.intermediate_size, c.mlp_bias));
  down_proj = register_module("down_proj", Projection(c.intermediate_size, c.hidden_size, c.mlp_bias));
}

at::Tensor LlamaMLP::Forward(const at::Tensor& x) {
  return Dense(down_proj, modeling::ApplyActivation(act_, Dense(gate_proj, x)) * Dense(up_proj, x));
}

void LlamaCache::Reorder(const at::Tensor& beam_idx) {
  for (LlamaLayerCache& layer : layers) {
    if (!layer.key.defined()) continue;
    layer.key = layer.key.index_select(0, beam_idx.to(layer.key.device()));
    layer.value = layer.value.index_select(0, beam_idx.to(layer.value.device()));
  }
}

LlamaAttention::LlamaAttention(const LlamaConfig& c)
    : heads_(c.num_attention_heads),
      kv_heads_(c.KeyValueHeads()),
      head_dim_(c.HeadDim()),
      dropout_(c.attention_dropout) {
  const bool bias = c.attention_bias;
  q_proj = register_module("q_proj", Projection(c.hidden_size, heads_ * head_dim_, bias));
  k_proj = register_module("k_proj", Projection(c.hidden_size, kv_heads_ * head_dim_, bias));
  v_proj = register_module("v_proj", Projection(c.hidden_size, kv_heads_ * head_dim_, bias));
  o_proj = register_module("o_proj", Projection(heads_ * head_dim_, c.hidden_size, bias));
}

at::Tensor LlamaAttention::Heads(const at::Tensor& x, int64_t heads) const {
  return x.view({x.size(0), x.size(1), heads, head_dim_}).transpose(1, 2);
}

at::Tensor LlamaAttention::Forward(const at::Tensor& hidden, const LlamaLayerContext& ctx) {
  const int64_t batch = hidden.size(0), seq = hidden.size(1);
  at::Tensor q = Heads(Dense(q_proj, hidden), heads_);
  at::Tensor k = Heads(Dense(k_proj, hidden), kv_heads_);
  at::Tensor v = Heads(Dense(v_proj, hidden), kv_heads_);
  const at::Tensor cos = ctx.cos.to(v.scalar_type()), sin = ctx.sin.to(v.scalar_type());
  q = ApplyRotary(q, cos, sin);
  k = ApplyRotary(k, cos, sin);
  if (ctx.cache != nullptr) {
    if (ctx.cache->key.defined()) {
      k = at::cat({ctx.cache->key, k}, -2);
      v = at::cat({ctx.cache->value, v}, -2);
    }
    ctx.cache->key = k;
    ctx.cache->value = v;
  }
  k = RepeatKv(k, heads_ / kv_heads_);
  v = RepeatKv(v, heads_ / kv_heads_);
  at::Tensor weights =
      at::matmul(q, k.transpose(2, 3)) / std::sqrt(static_cast<double>(head_dim_));
  if (ctx.mask.defined()) weights = weights + ctx.mask.narrow(-1, 0, k.size(-2));
  weights = at::softmax(weights, -1, at::kFloat).to(q.scalar_type());
  weights = at::dropout(weights, dropout_, is_training());
  const at::Tensor context = at::matmul(weights, v).transpose(1, 2).contiguous().reshape(
      {batch, seq, heads_ * head_dim_});
  return Dense(o_proj, context);
}

LlamaDecoderLayer::LlamaDecoderLayer(const LlamaConfig& c) {
  self_attn = register_module("self_attn", std::make_shared<LlamaAttention>(c));
  mlp = register_module("mlp", std::make_shared<LlamaMLP>(c));
  input_layernorm = register_module("input_layernorm",
                                    std::make_shared<LlamaRMSNorm>(c.hidden_size, c.rms_norm_eps));
  post_attention_layernorm = register_module(
      "post_attention_layernorm", std::make_shared<LlamaRMSNorm>(c.hidden_size, c.rms_norm_eps));
}

at::Tensor LlamaDecoderLayer::Forward(const at::Tensor& hidden, const LlamaLayerContext& ctx) {
  const at::Tensor attended = hidden + self_attn->Forward(input_layernorm->Forward(hidden), ctx);
  return attended + mlp->Forward(post_attention_layernorm->Forward(attended));
}

at::Tensor CausalMask(const at::Tensor& attention_mask, int64_t batch, int64_t seq, int64_t past,
                      c10::ScalarType dtype, const at::Device& device) {
  const int64_t target = past + seq;
  const auto longs = at::TensorOptions().dtype(at::kLong).device(device);
  const at::Tensor query_pos = at::arange(past, target, longs).view({seq, 1});
  const at::Tensor key_pos = at::arange(target, longs).view({1, target});
  at::Tensor blocked = (key_pos > query_pos).view({1, 1, seq, target}).expand({batch, 1, seq, target});
  if (attention_mask.defined()) {
    TORCH_CHECK(attention_mask.dim() == 2 && attention_mask.size(0) == batch &&
                    attention_mask.size(1) == target,
                "attention_mask must be [batch, past + sequence] = [", batch, ", ", target,
                "], got ", attention_mask.sizes());
    blocked = blocked | (attention_mask.to(device) == 0).view({batch, 1, 1, target});
  }
  return at::zeros({batch, 1, seq, target}, at::TensorOptions().dtype(dtype).device(device))
      .masked_fill(blocked, modeling::FinfoMin(dtype));
}

LlamaModel::LlamaModel(const LlamaConfig& c, bool deferred) : rotary_(c) {
  auto embedding = torch::nn::EmbeddingOptions(c.vocab_size, c.hidden_size);
  if (c.pad_token_id.has_value()) embedding.padding_idx(*c.pad_token_id);
  embed_tokens = register_module("embed_tokens", torch::nn::Embedding(embedding));
  if (deferred) modeling::DeferParameters(*embed_tokens);
  layers = register_module("layers", torch::nn::ModuleList());
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    auto layer = std::make_shared<LlamaDecoderLayer>(c);
    if (deferred) modeling::DeferParameters(*layer);  // at most one layer's bytes at a time
    layers->push_back(layer);
  }
  norm = register_module("norm", std::make_shared<LlamaRMSNorm>(c.hidden_size, c.rms_norm_eps));
  if (deferred) modeling::DeferParameters(*norm);
}

at::Tensor LlamaModel::Forward(const at::Tensor& input_ids, const at::Tensor& attention_mask,
                               const at::Tensor& position_ids, LlamaCache* cache) {
  TORCH_CHECK(input_ids.dim() == 2, "input_ids must be [batch, sequence], got ",
              input_ids.sizes());
  const int64_t batch = input_ids.size(0), seq = input_ids.size(1);
  const int64_t past = cache != nullptr ? cache->Length() : 0;
  const at::Tensor embeds = embed_tokens->forward(input_ids);
  const at::Device device = embeds.device();
  const at::Tensor positions =
      position_ids.defined()
          ? position_ids.to(device)
          : at::arange(past, past + seq, at::TensorOptions().dtype(at::kLong).device(device))
                .unsqueeze(0)
                .expand({batch, seq});
  TORCH_CHECK(positions.dim() == 2 && positions.size(0) == batch && positions.size(1) == seq,
              "position_ids must be [batch, sequence] = [", batch, ", ", seq, "], got ",
              positions.sizes());
  LlamaLayerContext ctx;
  ctx.mask = CausalMask(attention_mask, batch, seq, past, embeds.scalar_type(), device);
  std::tie(ctx.cos, ctx.sin) = rotary_.CosSin(positions, at::kFloat);
  if (cache != nullptr && cache->layers.empty()) cache->layers.resize(layers->size());
  // HF's LlamaModel turns use_cache off under gradient checkpointing while training.
  const bool checkpoint = gradient_checkpointing.has_value() && is_training() && cache == nullptr;
  at::Tensor hidden = embeds;
  for (size_t i = 0; i < layers->size(); ++i) {
    ctx.cache = cache != nullptr ? &cache->layers[i] : nullptr;
    hidden = RunLayer(*layers[i]->as<LlamaDecoderLayer>(), hidden, ctx, checkpoint);
  }
  return norm->Forward(hidden);
}

// One layer, through the unit runner; checkpointed, the hidden state, cos, sin and the mask are
// the recomputation's inputs.
at::Tensor LlamaModel::RunLayer(LlamaDecoderLayer& layer, const at::Tensor& hidden,
                                const LlamaLayerContext& ctx, bool checkpoint) {
  return modeling::RunUnit(unit_runner, layer, [&]() -> at::Tensor {
    if (!checkpoint) return layer.Forward(hidden, ctx);
    return modeling::Checkpoint(
        [&layer](const std::vector<at::Tensor>& in) {
          LlamaLayerContext local;
          local.cos = in[1];
          local.sin = in[2];
          local.mask = in[3];
          return layer.Forward(in[0], local);
        },
        {hidden, ctx.cos, ctx.sin, ctx.mask}, layer.parameters(), *gradient_checkpointing);
  });
}

namespace {

// FNV-1a of the tensor's name, mixed with the seed by splitmix64's finaliser.
uint64_t TensorSeed(uint64_t seed, const std::string& name) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char ch : name) h = (h ^ ch) * 1099511628211ull;
  uint64_t z = seed ^ h;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// normal_(0, std) drawn on the CPU from the tensor's own generator (the same values whatever
// device or shard the tensor lives on).
void Normal(const at::Tensor& weight, double std, uint64_t seed, const std::string& name) {
  at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(TensorSeed(seed, name));
  at::Tensor values = at::empty(weight.sizes(), at::TensorOptions().dtype(at::kFloat));
  values.normal_(0.0, std, gen);
  weight.copy_(values);
}

}  // namespace

void InitLlamaParameter(const torch::nn::Module& owner, const std::string& local_name,
                        const std::string& name, const LlamaConfig& config, uint64_t seed,
                        at::Tensor& dest) {
  at::NoGradGuard no_grad;
  const double stddev = config.initializer_range;
  if (owner.as<torch::nn::Linear>() != nullptr) {
    if (local_name == "weight") {
      Normal(dest, stddev, seed, name);
    } else {
      dest.zero_();  // a bias
    }
  } else if (const auto* embedding = owner.as<torch::nn::Embedding>()) {
    Normal(dest, stddev, seed, name);
    if (auto pad = embedding->options.padding_idx(); pad.has_value()) dest[*pad].zero_();
  } else if (owner.as<LlamaRMSNorm>() != nullptr) {
    dest.fill_(1.0);
  }
}

namespace {

// _init_weights on one module named `name` (its tensors are "<name>.weight", ...).
void InitModule(torch::nn::Module& module, const std::string& name, const LlamaConfig& config,
                uint64_t seed) {
  const std::string dot = name.empty() ? "" : name + ".";
  for (auto& item : module.named_parameters(/*recurse=*/false)) {
    InitLlamaParameter(module, item.key(), dot + item.key(), config, seed, item.value());
  }
}

}  // namespace

void InitLlamaWeights(torch::nn::Module& module, const std::string& prefix,
                      const LlamaConfig& config, uint64_t seed) {
  at::NoGradGuard no_grad;
  const std::string root =
      !prefix.empty() && prefix.back() == '.' ? prefix.substr(0, prefix.size() - 1) : prefix;
  InitModule(module, root, config, seed);
  for (const auto& item : module.named_modules("", /*include_self=*/false)) {
    InitModule(*item.value(), prefix + item.key(), config, seed);
  }
}

}  // namespace loom::models::llama
