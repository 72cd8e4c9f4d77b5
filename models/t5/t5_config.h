// T5Config: transformers 4.41's `T5Config` (configuration_t5.py) read from and written to HF's
// config.json.
//
// Contract:
//   - Fields and defaults are HF's (t5-small's shape: vocab 32128, d_model 512, d_kv 64, d_ff
//     2048, 6 + 6 layers, 8 heads, 32 buckets, max distance 128). num_decoder_layers unset means
//     num_layers. feed_forward_proj is "ACT" or "gated-ACT" (ACT one of
//     modeling::SupportedActivations()); DenseActFn() / IsGatedAct() derive from it as HF does,
//     "gated-gelu" meaning gelu_new (T5 v1.1 / flan / T0).
//   - FromJson(text, source) accepts what save_pretrained writes (model_type "t5" or absent) and
//     keeps keys it does not model in `extra` (n_positions, task_specific_params, ...), which
//     ToJson writes back. Wrong types, sizes < 1, dropout outside [0, 1], an unknown activation
//     and is_encoder_decoder false are InvalidArgument naming `source` and the key.
//     "_attn_implementation": "eager" is accepted; "sdpa" is Unimplemented (transformers 4.41's
//     T5 has no sdpa attention either).
//   - ToJson() is save_pretrained's config.json: json.dumps(indent=2, sort_keys=True) of
//     to_diff_dict (every T5Config attribute, dense_act_fn and is_gated_act included, the
//     PretrainedConfig keys that differ from their defaults, model_type, transformers_version,
//     torch_dtype when set).
//
// Example:
//   ASSIGN_OR_RETURN(T5Config config, T5Config::FromFile(dir + "/config.json"));
//   int64_t decoder_layers = config.DecoderLayers();
#ifndef LOOM_MODELS_T5_T5_CONFIG_H_
#define LOOM_MODELS_T5_T5_CONFIG_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace loom::models::t5 {

struct T5Config {
  int64_t vocab_size = 32128;
  int64_t d_model = 512;
  int64_t d_kv = 64;
  int64_t d_ff = 2048;
  int64_t num_layers = 6;
  std::optional<int64_t> num_decoder_layers;
  int64_t num_heads = 8;
  int64_t relative_attention_num_buckets = 32;
  int64_t relative_attention_max_distance = 128;
  double dropout_rate = 0.1;
  double classifier_dropout = 0.0;
  double layer_norm_epsilon = 1e-6;
  double initializer_factor = 1.0;
  std::string feed_forward_proj = "relu";
  bool use_cache = true;
  bool tie_word_embeddings = true;
  std::optional<int64_t> pad_token_id = 0;
  std::optional<int64_t> eos_token_id = 1;
  std::optional<int64_t> decoder_start_token_id;
  std::optional<std::vector<std::string>> architectures;
  std::optional<std::string> torch_dtype;

  // Keys this struct does not model, written back as read.
  nlohmann::json extra = nlohmann::json::object();

  int64_t DecoderLayers() const { return num_decoder_layers.value_or(num_layers); }
  std::string DenseActFn() const;
  bool IsGatedAct() const;

  static absl::StatusOr<T5Config> FromJson(absl::string_view text, absl::string_view source);
  static absl::StatusOr<T5Config> FromFile(const std::string& path);
  absl::Status Validate(absl::string_view source) const;
  std::string ToJson() const;
};

}  // namespace loom::models::t5

#endif  // LOOM_MODELS_T5_T5_CONFIG_H_
