#include "modeling/generation_config.h"

#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/file_util.h"
#include "base/python_json.h"
#include "base/status_macros.h"
#include "modeling/config_json.h"

namespace loom::modeling {
namespace {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

// Keys whose non-default values change the result of greedy / beam search, with HF's default.
const std::map<std::string, json>& UnimplementedKeys() {
  static const auto* keys = new std::map<std::string, json>{
      {"bad_words_ids", nullptr},
      {"min_new_tokens", nullptr},
      {"num_beam_groups", 1},
      {"diversity_penalty", 0.0},
      {"suppress_tokens", nullptr},
      {"begin_suppress_tokens", nullptr},
      {"forced_decoder_ids", nullptr},
      {"sequence_bias", nullptr},
      {"encoder_no_repeat_ngram_size", 0},
      {"exponential_decay_length_penalty", nullptr},
      {"renormalize_logits", false},
      {"remove_invalid_values", false},
      {"guidance_scale", nullptr},
      {"penalty_alpha", nullptr},
      {"constraints", nullptr},
      {"force_words_ids", nullptr},
      {"encoder_repetition_penalty", 1.0},
  };
  return *keys;
}

absl::Status TypeError(const std::string& key, const json& value, absl::string_view want) {
  return absl::InvalidArgumentError(
      absl::StrCat("generation config \"", key, "\" must be ", want, ", got ", value.dump()));
}

absl::StatusOr<int64_t> NonNegativeInt(const std::string& key, const json& value) {
  if (!value.is_number_integer() || value.get<int64_t>() < 0) {
    return TypeError(key, value, "a non-negative integer");
  }
  return value.get<int64_t>();
}

absl::StatusOr<std::optional<int64_t>> OptionalId(const std::string& key, const json& value) {
  if (value.is_null()) return std::optional<int64_t>();
  ASSIGN_OR_RETURN(int64_t id, NonNegativeInt(key, value));
  return std::optional<int64_t>(id);
}

absl::StatusOr<std::vector<int64_t>> EosIds(const json& value) {
  if (value.is_null()) return std::vector<int64_t>();
  if (value.is_number_integer()) return std::vector<int64_t>{value.get<int64_t>()};
  std::vector<int64_t> ids;
  if (value.is_array()) {
    for (const json& v : value) {
      if (!v.is_number_integer()) return TypeError("eos_token_id", value, "an int or a list of ints");
      ids.push_back(v.get<int64_t>());
    }
    return ids;
  }
  return TypeError("eos_token_id", value, "an int or a list of ints");
}

absl::StatusOr<EarlyStopping> ParseEarlyStopping(const json& value) {
  if (value.is_boolean()) return value.get<bool>() ? EarlyStopping::kTrue : EarlyStopping::kFalse;
  if (value == "never") return EarlyStopping::kNever;
  return absl::InvalidArgumentError(absl::StrCat(
      "`early_stopping` must be a boolean or 'never', but is ", value.dump(), " (generation config)"));
}

json EarlyStoppingJson(EarlyStopping e) {
  return e == EarlyStopping::kNever ? json("never") : json(e == EarlyStopping::kTrue);
}

// Sets the integer and id fields; false when `key` is none of them.
absl::StatusOr<bool> SetIntField(GenerationConfig& g, const std::string& key, const json& value) {
  const std::map<std::string, int64_t*> ints = {
      {"max_length", &g.max_length},
      {"min_length", &g.min_length},
      {"num_beams", &g.num_beams},
      {"no_repeat_ngram_size", &g.no_repeat_ngram_size},
      {"num_return_sequences", &g.num_return_sequences}};
  if (auto it = ints.find(key); it != ints.end()) {
    ASSIGN_OR_RETURN(*it->second, NonNegativeInt(key, value));
    return true;
  }
  const std::map<std::string, std::optional<int64_t>*> ids = {
      {"max_new_tokens", &g.max_new_tokens},
      {"decoder_start_token_id", &g.decoder_start_token_id},
      {"pad_token_id", &g.pad_token_id},
      {"bos_token_id", &g.bos_token_id},
      {"forced_bos_token_id", &g.forced_bos_token_id},
      {"forced_eos_token_id", &g.forced_eos_token_id}};
  if (auto it = ids.find(key); it != ids.end()) {
    ASSIGN_OR_RETURN(*it->second, OptionalId(key, value));
    return true;
  }
  return false;
}

// Sets do_sample and the sampling / penalty numbers; false when `key` is none of them.
absl::StatusOr<bool> SetSamplingField(GenerationConfig& g, const std::string& key,
                                      const json& value) {
  if (key == "do_sample") {
    if (!value.is_boolean()) return TypeError(key, value, "true or false");
    g.do_sample = value.get<bool>();
    return true;
  }
  if (key == "top_k") {
    if (value.is_null()) {
      g.top_k = 0;  // None: no top-k warper
    } else {
      ASSIGN_OR_RETURN(g.top_k, NonNegativeInt(key, value));
    }
    return true;
  }
  const std::map<std::string, double*> numbers = {{"temperature", &g.temperature},
                                                  {"top_p", &g.top_p},
                                                  {"repetition_penalty", &g.repetition_penalty}};
  auto it = numbers.find(key);
  if (it == numbers.end()) return false;
  if (!value.is_number()) return TypeError(key, value, "a number");
  *it->second = value.get<double>();
  return true;
}

}  // namespace

GenerationConfig GenerationConfig::FromModel(const GenerationTokens& tokens) {
  GenerationConfig g;
  g.decoder_start_token_id = tokens.decoder_start_token_id;
  if (tokens.eos_token_id.has_value()) g.eos_token_id = {*tokens.eos_token_id};
  g.pad_token_id = tokens.pad_token_id;
  g.from_model_config = true;
  return g;
}

absl::Status GenerationConfig::Set(const std::string& key, const json& value) {
  ASSIGN_OR_RETURN(bool done, SetIntField(*this, key, value));
  if (done) return absl::OkStatus();
  ASSIGN_OR_RETURN(done, SetSamplingField(*this, key, value));
  if (done) return absl::OkStatus();
  if (key == "length_penalty") {
    if (!value.is_number()) return TypeError(key, value, "a number");
    length_penalty = value.get<double>();
  } else if (key == "use_cache") {
    if (!value.is_boolean()) return TypeError(key, value, "true or false");
    use_cache = value.get<bool>();
  } else if (key == "early_stopping") {
    ASSIGN_OR_RETURN(early_stopping, ParseEarlyStopping(value));
  } else if (key == "eos_token_id") {
    ASSIGN_OR_RETURN(eos_token_id, EosIds(value));
  } else if (key == "_from_model_config") {
    from_model_config = value.is_boolean() && value.get<bool>();
  } else if (key == "transformers_version") {
    // written afresh by ToJson
  } else if (auto it = UnimplementedKeys().find(key); it != UnimplementedKeys().end()) {
    if (value != it->second && !(value.is_number() && it->second.is_number() &&
                                 value.get<double>() == it->second.get<double>())) {
      return absl::UnimplementedError(absl::StrCat(
          "generation config \"", key, "\" = ", value.dump(),
          " is not implemented by loom's generate (greedy and beam search); remove it or set "
          "HF's default ", it->second.dump()));
    }
  } else {
    extra[key] = value;
  }
  return absl::OkStatus();
}

absl::StatusOr<GenerationConfig> GenerationConfig::FromJson(absl::string_view text,
                                                            absl::string_view source) {
  const json j = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": expected a JSON object (an HF generation_config.json)"));
  }
  GenerationConfig g;
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (absl::Status s = g.Set(it.key(), it.value()); !s.ok()) {
      return absl::Status(s.code(), absl::StrCat(source, ": ", s.message()));
    }
  }
  return g;
}

absl::StatusOr<GenerationConfig> GenerationConfig::FromFile(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, base::ReadFile(path));
  return FromJson(text, path);
}

absl::Status GenerationConfig::Validate() const {
  if (num_beams < 1) {
    return absl::InvalidArgumentError(absl::StrCat("`num_beams` must be >= 1, got ", num_beams));
  }
  if (num_beams == 1 && !do_sample && num_return_sequences != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Greedy methods without beam search do not support `num_return_sequences` different "
        "than 1 (got ", num_return_sequences, ")."));
  }
  if (num_beams > 1 && num_return_sequences > num_beams) {
    return absl::InvalidArgumentError(absl::StrCat("`num_return_sequences` (", num_return_sequences,
                                                   ") has to be smaller or equal to `num_beams` (",
                                                   num_beams, ")."));
  }
  if (num_return_sequences < 1) {
    return absl::InvalidArgumentError("`num_return_sequences` must be >= 1");
  }
  return ValidateSampling();
}

// The checks of transformers 4.41's RepetitionPenaltyLogitsProcessor, TemperatureLogitsWarper
// and TopPLogitsWarper constructors, with their words.
absl::Status GenerationConfig::ValidateSampling() const {
  if (!(repetition_penalty > 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "`penalty` has to be a strictly positive float, but is ", repetition_penalty,
        " (generation config \"repetition_penalty\")"));
  }
  if (!do_sample) return absl::OkStatus();
  if (!(temperature > 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "`temperature` (=", temperature,
        ") has to be a strictly positive float, otherwise your next token scores will be "
        "invalid."));
  }
  if (!(top_p >= 0 && top_p <= 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("`top_p` has to be a float > 0 and < 1, but is ", top_p));
  }
  return absl::OkStatus();
}

std::string GenerationConfig::ToJson() const {
  std::map<std::string, ojson> out;
  for (auto it = extra.begin(); it != extra.end(); ++it) out[it.key()] = Sorted(it.value());
  const GenerationConfig d;
  auto id = [&](const char* key, const std::optional<int64_t>& v) {
    if (v.has_value()) out[key] = *v;
  };
  if (max_length != d.max_length) out["max_length"] = max_length;
  id("max_new_tokens", max_new_tokens);
  if (min_length != d.min_length) out["min_length"] = min_length;
  if (num_beams != d.num_beams) out["num_beams"] = num_beams;
  if (length_penalty != d.length_penalty) out["length_penalty"] = length_penalty;
  if (early_stopping != d.early_stopping) out["early_stopping"] = EarlyStoppingJson(early_stopping);
  if (no_repeat_ngram_size != 0) out["no_repeat_ngram_size"] = no_repeat_ngram_size;
  if (num_return_sequences != 1) out["num_return_sequences"] = num_return_sequences;
  if (!use_cache) out["use_cache"] = false;
  if (do_sample) out["do_sample"] = true;
  if (temperature != d.temperature) out["temperature"] = temperature;
  if (top_k != d.top_k) out["top_k"] = top_k;
  if (top_p != d.top_p) out["top_p"] = top_p;
  if (repetition_penalty != d.repetition_penalty) out["repetition_penalty"] = repetition_penalty;
  id("decoder_start_token_id", decoder_start_token_id);
  if (eos_token_id.size() == 1) out["eos_token_id"] = eos_token_id[0];
  if (eos_token_id.size() > 1) out["eos_token_id"] = eos_token_id;
  id("pad_token_id", pad_token_id);
  id("bos_token_id", bos_token_id);
  id("forced_bos_token_id", forced_bos_token_id);
  id("forced_eos_token_id", forced_eos_token_id);
  if (from_model_config) out["_from_model_config"] = true;
  out["transformers_version"] = std::string(kTransformersVersion);
  ojson result = ojson::object();
  for (auto& [key, value] : out) result[key] = std::move(value);
  return base::PyJsonDumps(result, /*indent=*/2, /*sort_keys=*/false) + "\n";
}

}  // namespace loom::modeling
