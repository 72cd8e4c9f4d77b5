// LlamaConfig: transformers 4.41's `LlamaConfig` (configuration_llama.py) read from and written to
// HF's config.json.
//
// Contract:
//   - Fields and defaults are HF's (Llama-7B's shape: vocab 32000, hidden 4096, intermediate
//     11008, 32 layers, 32 heads, num_key_value_heads unset = num_attention_heads, silu,
//     max_position_embeddings 2048, initializer_range 0.02, rms_norm_eps 1e-6, rope_theta
//     10000, bos 1, eos 2, no pad, untied embeddings, no attention / mlp biases).
//     eos_token_id is an int or a list of ints (Llama 3's configs list several).
//   - rope_scaling: null, or an object whose "type" (or "rope_type", transformers >= 4.43's
//     spelling) is "linear" or "dynamic" (transformers 4.41's two, with a float "factor" > 1) or
//     "llama3" (transformers 4.43's, with factor, low_freq_factor, high_freq_factor and
//     original_max_position_embeddings). Any other type is Unimplemented naming it.
//   - FromJson(text, source) accepts what save_pretrained writes (model_type "llama" or absent)
//     and keeps keys it does not model in `extra`, which ToJson writes back. Wrong types, sizes
//     < 1, hidden_size not divisible by num_attention_heads, num_attention_heads not divisible
//     by num_key_value_heads, an unknown activation, pretraining_tp != 1 (HF's slicing of the
//     matmuls that reproduces pretraining's rounding) and token ids outside the vocabulary are
//     InvalidArgument naming `source` and the key. "_attn_implementation" "eager" (and "sdpa",
//     which computes the same function) is accepted; others are Unimplemented.
//   - ToJson() is save_pretrained's config.json: json.dumps(indent=2, sort_keys=True) of
//     to_diff_dict (every LlamaConfig attribute, the PretrainedConfig keys that differ from
//     their defaults, model_type, transformers_version, torch_dtype when set).
//
// Example:
//   ASSIGN_OR_RETURN(LlamaConfig config, LlamaConfig::FromFile(dir + "/config.json"));
//   int64_t kv_heads = config.KeyValueHeads();
#ifndef LOOM_MODELS_LLAMA_LLAMA_CONFIG_H_
#define LOOM_MODELS_LLAMA_LLAMA_CONFIG_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace loom::models::llama {

enum class RopeScalingType { kLinear, kDynamic, kLlama3 };

struct RopeScaling {
  RopeScalingType type = RopeScalingType::kLinear;
  double factor = 1.0;
  // llama3 only.
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  int64_t original_max_position_embeddings = 8192;
  // The object as read (written back unchanged).
  nlohmann::json json = nlohmann::json::object();
};

struct LlamaConfig {
  int64_t vocab_size = 32000;
  int64_t hidden_size = 4096;
  int64_t intermediate_size = 11008;
  int64_t num_hidden_layers = 32;
  int64_t num_attention_heads = 32;
  std::optional<int64_t> num_key_value_heads;
  std::string hidden_act = "silu";
  int64_t max_position_embeddings = 2048;
  double initializer_range = 0.02;
  double rms_norm_eps = 1e-6;
  int64_t pretraining_tp = 1;
  bool use_cache = true;
  double rope_theta = 10000.0;
  std::optional<RopeScaling> rope_scaling;
  bool attention_bias = false;
  double attention_dropout = 0.0;
  bool mlp_bias = false;
  std::optional<int64_t> pad_token_id;
  std::optional<int64_t> bos_token_id = 1;
  std::vector<int64_t> eos_token_id = {2};
  bool eos_is_list = false;
  bool tie_word_embeddings = false;
  std::optional<std::vector<std::string>> architectures;
  std::optional<std::string> torch_dtype;

  // Keys this struct does not model, written back as read.
  nlohmann::json extra = nlohmann::json::object();

  int64_t KeyValueHeads() const { return num_key_value_heads.value_or(num_attention_heads); }
  int64_t HeadDim() const { return hidden_size / num_attention_heads; }

  static absl::StatusOr<LlamaConfig> FromJson(absl::string_view text, absl::string_view source);
  static absl::StatusOr<LlamaConfig> FromFile(const std::string& path);
  absl::Status Validate(absl::string_view source) const;
  std::string ToJson() const;
};

}  // namespace loom::models::llama

#endif  // LOOM_MODELS_LLAMA_LLAMA_CONFIG_H_
