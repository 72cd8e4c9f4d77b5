// BertModel: HF transformers' BertModel (4.38-4.41, eager or sdpa attention, absolute
// positions, no decoder / cross-attention / KV cache) as LibTorch modules whose state-dict keys
// are HF's.
//
// Contract:
//   Module tree and tensor names (children registered in HF's order, so ModuleStateDict lists
//   HF's state_dict() keys in HF's order):
//     embeddings.{word_embeddings, position_embeddings, token_type_embeddings}.weight,
//     embeddings.LayerNorm.{weight,bias},
//     encoder.layer.<i>.attention.self.{query,key,value}.{weight,bias},
//     encoder.layer.<i>.attention.output.{dense,LayerNorm}.{weight,bias},
//     encoder.layer.<i>.intermediate.dense.{weight,bias},
//     encoder.layer.<i>.output.{dense,LayerNorm}.{weight,bias},
//     pooler.dense.{weight,bias}.
//   HF's position_ids / token_type_ids buffers are non-persistent (absent from saved files), so
//   they are not registered here; the defaults are computed in Forward instead.
//   Forward(input_ids [B,S] int, attention_mask [B,S] or undefined (all ones),
//     token_type_ids [B,S] or undefined (zeros), position_ids [B,S]/[1,S] or undefined
//     (0..S-1)) returns {sequence_output [B,S,H], pooled_output [B,H]}:
//       emb = LayerNorm(word + token_type + position), dropout;
//       per layer, eager (BertSelfAttention): scores = q k^T / sqrt(head_dim) +
//         (1 - mask) * finfo(dtype).min, softmax, dropout, context;
//       sdpa (BertSdpaSelfAttention): at::scaled_dot_product_attention(q, k, v, SdpaAttentionMask,
//         dropout_p = attention_probs_dropout_prob in training, 0 in eval, is_causal false);
//       then LayerNorm(dropout(dense(context)) + x);
//         LayerNorm(dropout(dense(act(dense(h)))) + h);
//       pooled = tanh(dense(sequence_output[:, 0])).
//     Dropout follows the module's train()/eval() mode. Throws c10::Error / std::invalid_argument
//     on inputs that do not fit (callers at loom's boundary convert; see
//     BertForSequenceClassification::TryForward).
//   Attention implementation (transformers 4.41 `_autoset_attn_implementation`): the model
//     resolves config.attn_implementation once, when it is built (ResolveAttnImplementation):
//     unset -> kSdpa when base::kHasScaledDotProductAttention (LibTorch >= 2.1.1), kEager
//     otherwise; kSdpa asked for on an older LibTorch is FailedPrecondition naming
//     attn_implementation (constructors throw std::invalid_argument with that message; Create
//     and the loaders return it). HF's sdpa class falls back to eager for output_attentions,
//     head_mask and relative positions, none of which loom's BERT has, so kSdpa always runs
//     SDPA. kEager is the formula above, op for op, on every LibTorch.
//   InitBertWeights(module, config, seed): HF's _init_weights on every submodule: Linear and
//     Embedding weights ~ N(0, initializer_range), biases 0, the padding_idx row 0, LayerNorm
//     weight 1 / bias 0; draws come from a CPU generator seeded with `seed`, in module order.
//   InitBertModules(module, config, seed, names): the same init on just the submodules named
//     in `names` (as named_modules names them, e.g. "classifier"), the first draw of a fresh
//     generator going to the first of them in module order — from_pretrained's fast init,
//     which initialises only the modules the checkpoint did not fill.
//
// Example:
//   auto bert = std::make_shared<BertModel>(config);
//   InitBertWeights(*bert, config, /*seed=*/42);
//   BertModelOutput out = bert->Forward(ids, mask, at::Tensor(), at::Tensor());
#ifndef LOOM_MODELS_BERT_BERT_MODEL_H_
#define LOOM_MODELS_BERT_BERT_MODEL_H_

#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "absl/status/statusor.h"
#include "modeling/activation_checkpoint.h"
#include "modeling/hooked_embedding.h"
#include "modeling/layers.h"
#include "modeling/unit_runner.h"
#include "models/bert/bert_config.h"

namespace loom::models::bert {

// transformers 4.41's choice of attention for a model that supports sdpa (see the contract).
absl::StatusOr<AttnImplementation> ResolveAttnImplementation(
    std::optional<AttnImplementation> requested);

// ACT2FN (modeling/layers.h).
using ::loom::modeling::ApplyActivation;

class BertEmbeddings : public torch::nn::Module {
 public:
  explicit BertEmbeddings(const BertConfig& config);
  at::Tensor Forward(const at::Tensor& input_ids, const at::Tensor& token_type_ids,
                     const at::Tensor& position_ids);

  // Hookable (HF get_input_embeddings, e.g. for NEFTune); state-dict keys are Embedding's.
  modeling::HookedEmbedding word_embeddings{nullptr};
  torch::nn::Embedding position_embeddings{nullptr};
  torch::nn::Embedding token_type_embeddings{nullptr};
  torch::nn::LayerNorm layer_norm{nullptr};  // "LayerNorm"
  torch::nn::Dropout dropout{nullptr};
};

// BertSelfAttention or, with kSdpa, BertSdpaSelfAttention (same parameters).
class BertSelfAttention : public torch::nn::Module {
 public:
  explicit BertSelfAttention(const BertConfig& config);
  // `additive_mask`: eager [B,1,1,S] (ExtendedAttentionMask); sdpa [B,1,S,S]
  // (SdpaAttentionMask); undefined for none.
  at::Tensor Forward(const at::Tensor& hidden, const at::Tensor& additive_mask);

  AttnImplementation attn_implementation() const { return attn_implementation_; }

  torch::nn::Linear query{nullptr}, key{nullptr}, value{nullptr};
  torch::nn::Dropout dropout{nullptr};

 private:
  at::Tensor EagerAttention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                            const at::Tensor& additive_mask);
  at::Tensor SdpaAttention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                           const at::Tensor& additive_mask);

  int64_t num_heads_;
  int64_t head_size_;
  double attention_dropout_;
  AttnImplementation attn_implementation_;
};

// Dense + dropout + residual LayerNorm: HF's BertSelfOutput and BertOutput.
class BertResidualOutput : public torch::nn::Module {
 public:
  BertResidualOutput(const BertConfig& config, int64_t in_features);
  at::Tensor Forward(const at::Tensor& hidden, const at::Tensor& residual);

  torch::nn::Linear dense{nullptr};
  torch::nn::LayerNorm layer_norm{nullptr};  // "LayerNorm"
  torch::nn::Dropout dropout{nullptr};
};

class BertAttention : public torch::nn::Module {
 public:
  explicit BertAttention(const BertConfig& config);
  at::Tensor Forward(const at::Tensor& hidden, const at::Tensor& additive_mask);

  std::shared_ptr<BertSelfAttention> self_attention;  // "self"
  std::shared_ptr<BertResidualOutput> output;
};

class BertIntermediate : public torch::nn::Module {
 public:
  explicit BertIntermediate(const BertConfig& config);
  at::Tensor Forward(const at::Tensor& hidden);

  torch::nn::Linear dense{nullptr};

 private:
  std::string act_;
};

class BertLayer : public torch::nn::Module {
 public:
  explicit BertLayer(const BertConfig& config);
  at::Tensor Forward(const at::Tensor& hidden, const at::Tensor& additive_mask);

  std::shared_ptr<BertAttention> attention;
  std::shared_ptr<BertIntermediate> intermediate;
  std::shared_ptr<BertResidualOutput> output;
};

class BertEncoder : public torch::nn::Module {
 public:
  explicit BertEncoder(const BertConfig& config);
  // With gradient_checkpointing set and in training mode, each layer's activations are
  // recomputed in backward (HF's BertEncoder with gradient_checkpointing and self.training).
  at::Tensor Forward(at::Tensor hidden, const at::Tensor& additive_mask);

  torch::nn::ModuleList layer{nullptr};
  std::optional<modeling::CheckpointingOptions> gradient_checkpointing;
  // Each BertLayer runs through it when set (modeling/unit_runner.h).
  modeling::UnitRunner* unit_runner = nullptr;
};

class BertPooler : public torch::nn::Module {
 public:
  explicit BertPooler(const BertConfig& config);
  at::Tensor Forward(const at::Tensor& sequence_output);

  torch::nn::Linear dense{nullptr};
};

struct BertModelOutput {
  at::Tensor sequence_output;  // last_hidden_state [B, S, H]
  at::Tensor pooled_output;    // pooler_output [B, H]
};

class BertModel : public torch::nn::Module {
 public:
  explicit BertModel(const BertConfig& config);
  BertModelOutput Forward(const at::Tensor& input_ids, const at::Tensor& attention_mask,
                          const at::Tensor& token_type_ids, const at::Tensor& position_ids);

  // The resolved implementation every layer uses.
  AttnImplementation attn_implementation() const { return attn_implementation_; }

  std::shared_ptr<BertEmbeddings> embeddings;
  std::shared_ptr<BertEncoder> encoder;
  std::shared_ptr<BertPooler> pooler;

 private:
  AttnImplementation attn_implementation_;
};

// HF's get_extended_attention_mask for an encoder: mask [B,S] -> (1 - mask[:,None,None,:]) *
// finfo(dtype).min, in `dtype`.
at::Tensor ExtendedAttentionMask(const at::Tensor& attention_mask, c10::ScalarType dtype);

// transformers 4.41 `_prepare_4d_attention_mask_for_sdpa` for an encoder (query length = key
// length = S): undefined when every mask entry is 1 (SDPA then attends everywhere), otherwise
// `_expand_mask`: 1 - mask expanded to [B,1,S,S] in `dtype`, with finfo(dtype).min wherever
// that is nonzero.
at::Tensor SdpaAttentionMask(const at::Tensor& attention_mask, c10::ScalarType dtype);

// HF's _init_weights applied to every submodule of `module` (see the contract above).
void InitBertWeights(torch::nn::Module& module, const BertConfig& config, uint64_t seed);

// HF's _init_weights on the submodules named in `names` only (see the contract above).
void InitBertModules(torch::nn::Module& module, const BertConfig& config, uint64_t seed,
                     const std::set<std::string>& names);

}  // namespace loom::models::bert

#endif  // LOOM_MODELS_BERT_BERT_MODEL_H_
