// GenerationConfig: the fields of transformers 4.41's `GenerationConfig` that greedy search,
// beam search and multinomial sampling use, read from and written to generation_config.json.
//
// Contract:
//   - Defaults are HF's (max_length 20, min_length 0, num_beams 1, length_penalty 1.0,
//     early_stopping false, no_repeat_ngram_size 0, num_return_sequences 1, use_cache true,
//     do_sample false, temperature 1.0, top_k 50, top_p 1.0, repetition_penalty 1.0, every
//     token id unset). eos_token_id is an int or a list of ints (any of them ends a sequence);
//     top_k null means 0 (no top-k filtering).
//   - FromModel(tokens): GenerationConfig.from_model_config — the model config's
//     decoder_start / eos / pad ids, _from_model_config true.
//   - FromJson(text, source): generation_config.json. Keys that change what greedy or beam
//     search produce and that loom does not implement (bad_words_ids, min_new_tokens, num_beam_groups > 1, diversity_penalty, suppress_tokens,
//     begin_suppress_tokens, forced_decoder_ids, sequence_bias, encoder_no_repeat_ngram_size,
//     exponential_decay_length_penalty, renormalize_logits, remove_invalid_values,
//     guidance_scale, penalty_alpha, constraints, force_words_ids) are Unimplemented naming the
//     key, unless they hold HF's default; other keys are kept in `extra` and written back.
//     Wrong types are InvalidArgument naming `source` and the key.
//   - Set(key, json value) applies one field as generate(**kwargs) / Seq2SeqTrainer's
//     gen_kwargs do (the same checks).
//   - Validate(): HF's GenerationConfig.validate errors that matter here (num_beams >= 1;
//     num_return_sequences <= num_beams in beam search; greedy (not sampling) with
//     num_return_sequences > 1; early_stopping "never"/true/false only; lengths >= 0) and the
//     processors' own checks (repetition_penalty > 0; when sampling temperature > 0 and top_p
//     in [0, 1]), each naming the field.
//   - ToJson(): to_json_string(use_diff=True): the fields that differ from the defaults plus
//     transformers_version (and _from_model_config when set), json.dumps(indent=2,
//     sort_keys=True) + "\n".
//
// Example:
//   GenerationConfig g = model.generation_config();
//   RETURN_IF_ERROR(g.Set("num_beams", 4));
//   RETURN_IF_ERROR(g.Validate());
#ifndef LOOM_MODELING_GENERATION_CONFIG_H_
#define LOOM_MODELING_GENERATION_CONFIG_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace loom::modeling {

enum class EarlyStopping { kFalse, kTrue, kNever };

// The model config's token ids generation starts from (GenerationConfig.from_model_config).
struct GenerationTokens {
  std::optional<int64_t> decoder_start_token_id;
  std::optional<int64_t> eos_token_id;
  std::optional<int64_t> pad_token_id;
};

struct GenerationConfig {
  int64_t max_length = 20;
  std::optional<int64_t> max_new_tokens;
  int64_t min_length = 0;
  int64_t num_beams = 1;
  double length_penalty = 1.0;
  EarlyStopping early_stopping = EarlyStopping::kFalse;
  int64_t no_repeat_ngram_size = 0;
  int64_t num_return_sequences = 1;
  bool use_cache = true;  // false: the decoder reruns over the whole prefix every step
  bool do_sample = false;
  double temperature = 1.0;
  int64_t top_k = 50;  // used when sampling; 0: no top-k filtering
  double top_p = 1.0;
  double repetition_penalty = 1.0;
  std::optional<int64_t> decoder_start_token_id;
  std::vector<int64_t> eos_token_id;  // empty: none
  std::optional<int64_t> pad_token_id;
  std::optional<int64_t> bos_token_id;  // carried; encoder-decoder generation does not use it
  std::optional<int64_t> forced_bos_token_id;
  std::optional<int64_t> forced_eos_token_id;
  bool from_model_config = false;
  nlohmann::json extra = nlohmann::json::object();

  static GenerationConfig FromModel(const GenerationTokens& tokens);
  static absl::StatusOr<GenerationConfig> FromJson(absl::string_view text,
                                                   absl::string_view source);
  static absl::StatusOr<GenerationConfig> FromFile(const std::string& path);

  absl::Status Set(const std::string& key, const nlohmann::json& value);
  absl::Status Validate() const;
  absl::Status ValidateSampling() const;
  std::string ToJson() const;
};

}  // namespace loom::modeling

#endif  // LOOM_MODELING_GENERATION_CONFIG_H_
