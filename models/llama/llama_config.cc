#include "models/llama/llama_config.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/file_util.h"
#include "base/python_json.h"
#include "base/status_macros.h"
#include "modeling/config_json.h"
#include "modeling/layers.h"

namespace loom::models::llama {
namespace {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;
using modeling::KeyError;
using modeling::ReadBool;
using modeling::ReadDouble;
using modeling::ReadInt;
using modeling::ReadOptionalInt;
using modeling::ReadString;

absl::Status ReadSizes(const json& j, absl::string_view source, LlamaConfig& c) {
  RETURN_IF_ERROR(ReadInt(j, source, "vocab_size", &c.vocab_size));
  RETURN_IF_ERROR(ReadInt(j, source, "hidden_size", &c.hidden_size));
  RETURN_IF_ERROR(ReadInt(j, source, "intermediate_size", &c.intermediate_size));
  RETURN_IF_ERROR(ReadInt(j, source, "num_hidden_layers", &c.num_hidden_layers));
  RETURN_IF_ERROR(ReadInt(j, source, "num_attention_heads", &c.num_attention_heads));
  RETURN_IF_ERROR(ReadOptionalInt(j, source, "num_key_value_heads", &c.num_key_value_heads));
  RETURN_IF_ERROR(ReadString(j, source, "hidden_act", &c.hidden_act));
  RETURN_IF_ERROR(ReadInt(j, source, "max_position_embeddings", &c.max_position_embeddings));
  RETURN_IF_ERROR(ReadDouble(j, source, "initializer_range", &c.initializer_range));
  RETURN_IF_ERROR(ReadDouble(j, source, "rms_norm_eps", &c.rms_norm_eps));
  RETURN_IF_ERROR(ReadInt(j, source, "pretraining_tp", &c.pretraining_tp));
  RETURN_IF_ERROR(ReadDouble(j, source, "rope_theta", &c.rope_theta));
  RETURN_IF_ERROR(ReadDouble(j, source, "attention_dropout", &c.attention_dropout));
  RETURN_IF_ERROR(ReadBool(j, source, "attention_bias", &c.attention_bias));
  return ReadBool(j, source, "mlp_bias", &c.mlp_bias);
}

absl::Status RopeError(absl::string_view source, absl::string_view what) {
  return KeyError(source, "rope_scaling", what);
}

// A number field of rope_scaling; `required` ones must be present.
absl::Status ReadRopeNumber(const json& rope, absl::string_view source, const char* key,
                            bool required, double* out) {
  auto it = rope.find(key);
  if (it == rope.end() || it->is_null()) {
    if (!required) return absl::OkStatus();
    return RopeError(source, absl::StrCat("needs the field \"", key, "\" for this type, got ",
                                          rope.dump()));
  }
  if (!it->is_number()) {
    return RopeError(source, absl::StrCat("field \"", key, "\" must be a number, got ",
                                          it->dump()));
  }
  *out = it->get<double>();
  return absl::OkStatus();
}

absl::StatusOr<RopeScaling> ReadRopeScaling(const json& rope, absl::string_view source) {
  if (!rope.is_object()) {
    return RopeError(source, absl::StrCat("must be null or an object with the fields `type` and "
                                          "`factor`, got ", rope.dump()));
  }
  RopeScaling r;
  r.json = rope;
  auto type = rope.find("type");
  if (type == rope.end()) type = rope.find("rope_type");
  const std::string name = type != rope.end() && type->is_string() ? type->get<std::string>() : "";
  const std::map<std::string, RopeScalingType> known = {{"linear", RopeScalingType::kLinear},
                                                        {"dynamic", RopeScalingType::kDynamic},
                                                        {"llama3", RopeScalingType::kLlama3}};
  auto it = known.find(name);
  if (it == known.end()) {
    return absl::UnimplementedError(absl::StrCat(
        source, ": key \"rope_scaling\" has the type ",
        type == rope.end() ? std::string("(none)") : type->dump(),
        "; loom implements the rope_scaling types \"linear\", \"dynamic\" and \"llama3\""));
  }
  r.type = it->second;
  RETURN_IF_ERROR(ReadRopeNumber(rope, source, "factor", true, &r.factor));
  if (r.type != RopeScalingType::kLlama3 && !(r.factor > 1)) {
    return RopeError(source, absl::StrCat("`rope_scaling`'s factor field must be a float > 1, "
                                          "got ", r.factor));
  }
  if (r.type == RopeScalingType::kLlama3) {
    double original = 0;
    RETURN_IF_ERROR(ReadRopeNumber(rope, source, "low_freq_factor", true, &r.low_freq_factor));
    RETURN_IF_ERROR(ReadRopeNumber(rope, source, "high_freq_factor", true, &r.high_freq_factor));
    RETURN_IF_ERROR(
        ReadRopeNumber(rope, source, "original_max_position_embeddings", true, &original));
    r.original_max_position_embeddings = static_cast<int64_t>(original);
    if (!(r.high_freq_factor > r.low_freq_factor) || r.original_max_position_embeddings < 1 ||
        !(r.factor > 0)) {
      return RopeError(source, "llama3 needs high_freq_factor > low_freq_factor, factor > 0 and "
                               "original_max_position_embeddings >= 1");
    }
  }
  return r;
}

absl::StatusOr<std::vector<int64_t>> ReadEos(const json& value, absl::string_view source,
                                             bool* is_list) {
  *is_list = value.is_array();
  if (value.is_null()) return std::vector<int64_t>();
  if (value.is_number_integer()) return std::vector<int64_t>{value.get<int64_t>()};
  std::vector<int64_t> ids;
  if (value.is_array()) {
    for (const json& v : value) {
      if (!v.is_number_integer()) break;
      ids.push_back(v.get<int64_t>());
    }
    if (ids.size() == value.size()) return ids;
  }
  return KeyError(source, "eos_token_id",
                  absl::StrCat("must be null, an int or a list of ints, got ", value.dump()));
}

absl::Status ReadFlagsAndIds(const json& j, absl::string_view source, LlamaConfig& c) {
  RETURN_IF_ERROR(ReadBool(j, source, "use_cache", &c.use_cache));
  RETURN_IF_ERROR(ReadBool(j, source, "tie_word_embeddings", &c.tie_word_embeddings));
  RETURN_IF_ERROR(ReadOptionalInt(j, source, "pad_token_id", &c.pad_token_id));
  RETURN_IF_ERROR(ReadOptionalInt(j, source, "bos_token_id", &c.bos_token_id));
  if (auto it = j.find("eos_token_id"); it != j.end()) {
    ASSIGN_OR_RETURN(c.eos_token_id, ReadEos(*it, source, &c.eos_is_list));
  }
  if (auto it = j.find("rope_scaling"); it != j.end() && !it->is_null()) {
    ASSIGN_OR_RETURN(c.rope_scaling, ReadRopeScaling(*it, source));
  }
  RETURN_IF_ERROR(modeling::ReadArchitectures(j, source, &c.architectures));
  if (auto it = j.find("torch_dtype"); it != j.end() && it->is_string()) {
    c.torch_dtype = it->get<std::string>();
  }
  if (auto it = j.find("_attn_implementation"); it != j.end() && !it->is_null()) {
    if (*it != "eager" && *it != "sdpa") {
      return absl::UnimplementedError(absl::StrCat(
          source, ": key \"_attn_implementation\" is ", it->dump(),
          "; loom's Llama computes eager attention (\"sdpa\" is the same function): remove the "
          "key or set \"eager\""));
    }
  }
  return absl::OkStatus();
}

const std::set<std::string>& KnownKeys() {
  static const auto* keys = new std::set<std::string>{
      "vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers",
      "num_attention_heads", "num_key_value_heads", "hidden_act", "max_position_embeddings",
      "initializer_range", "rms_norm_eps", "pretraining_tp", "use_cache", "rope_theta",
      "rope_scaling", "attention_bias", "attention_dropout", "mlp_bias", "pad_token_id",
      "bos_token_id", "eos_token_id", "tie_word_embeddings", "architectures", "torch_dtype",
      "_attn_implementation", "model_type", "transformers_version"};
  return *keys;
}

absl::Status ValidateSizes(const LlamaConfig& c, absl::string_view source) {
  for (const auto& [key, value] :
       {std::pair<const char*, int64_t>{"vocab_size", c.vocab_size},
        {"hidden_size", c.hidden_size},
        {"intermediate_size", c.intermediate_size},
        {"num_attention_heads", c.num_attention_heads},
        {"num_key_value_heads", c.KeyValueHeads()},
        {"max_position_embeddings", c.max_position_embeddings}}) {
    if (value < 1) return KeyError(source, key, absl::StrCat("must be >= 1, got ", value));
  }
  if (c.num_hidden_layers < 0) return KeyError(source, "num_hidden_layers", "must be >= 0");
  if (c.hidden_size % c.num_attention_heads != 0) {
    return KeyError(source, "hidden_size",
                    absl::StrCat("must be divisible by num_heads (got `hidden_size`: ",
                                 c.hidden_size, " and `num_heads`: ", c.num_attention_heads,
                                 ")."));
  }
  if (c.num_attention_heads % c.KeyValueHeads() != 0) {
    return KeyError(source, "num_attention_heads",
                    absl::StrCat("(", c.num_attention_heads,
                                 ") must be divisible by num_key_value_heads (",
                                 c.KeyValueHeads(),
                                 "): grouped-query attention shares each key/value head among "
                                 "num_attention_heads / num_key_value_heads query heads"));
  }
  if (c.HeadDim() % 2 != 0) {
    return KeyError(source, "hidden_size",
                    absl::StrCat("/ num_attention_heads (", c.HeadDim(),
                                 ") must be even for rotary position embeddings"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<LlamaConfig> LlamaConfig::FromJson(absl::string_view text,
                                                  absl::string_view source) {
  ASSIGN_OR_RETURN(const json j, modeling::ParseConfigObject(text, source, "llama"));
  LlamaConfig c;
  RETURN_IF_ERROR(ReadSizes(j, source, c));
  RETURN_IF_ERROR(ReadFlagsAndIds(j, source, c));
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (!KnownKeys().count(it.key())) c.extra[it.key()] = it.value();
  }
  RETURN_IF_ERROR(c.Validate(source));
  return c;
}

absl::StatusOr<LlamaConfig> LlamaConfig::FromFile(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, base::ReadFile(path));
  return FromJson(text, path);
}

absl::Status LlamaConfig::Validate(absl::string_view source) const {
  RETURN_IF_ERROR(ValidateSizes(*this, source));
  if (!(attention_dropout >= 0 && attention_dropout <= 1)) {
    return KeyError(source, "attention_dropout",
                    absl::StrCat("must be a probability in [0, 1], got ", attention_dropout));
  }
  if (!(rms_norm_eps >= 0)) return KeyError(source, "rms_norm_eps", "must be >= 0");
  if (!(rope_theta > 0)) return KeyError(source, "rope_theta", "must be > 0");
  if (pretraining_tp != 1) {
    return KeyError(source, "pretraining_tp",
                    absl::StrCat("is ", pretraining_tp,
                                 "; set it to 1 (the same function: values > 1 only split the "
                                 "projections to reproduce pretraining's rounding, which loom "
                                 "does not do)"));
  }
  if (!modeling::SupportedActivations().count(hidden_act)) {
    return KeyError(source, "hidden_act",
                    absl::StrCat("is \"", hidden_act, "\"; loom implements ",
                                 absl::StrJoin(modeling::SupportedActivations(), ", ")));
  }
  std::vector<std::pair<std::string, int64_t>> ids;
  if (pad_token_id.has_value()) ids.push_back({"pad_token_id", *pad_token_id});
  if (bos_token_id.has_value()) ids.push_back({"bos_token_id", *bos_token_id});
  for (int64_t eos : eos_token_id) ids.push_back({"eos_token_id", eos});
  for (const auto& [key, id] : ids) {
    if (id < 0 || id >= vocab_size) {
      return KeyError(source, key,
                      absl::StrCat("(", id, ") must be null or in [0, vocab_size = ", vocab_size,
                                   ")"));
    }
  }
  return absl::OkStatus();
}

std::string LlamaConfig::ToJson() const {
  std::map<std::string, ojson> out;
  for (auto it = extra.begin(); it != extra.end(); ++it) {
    out[it.key()] = modeling::Sorted(it.value());
  }
  out["vocab_size"] = vocab_size;
  out["max_position_embeddings"] = max_position_embeddings;
  out["hidden_size"] = hidden_size;
  out["intermediate_size"] = intermediate_size;
  out["num_hidden_layers"] = num_hidden_layers;
  out["num_attention_heads"] = num_attention_heads;
  out["num_key_value_heads"] = KeyValueHeads();
  out["hidden_act"] = hidden_act;
  out["initializer_range"] = initializer_range;
  out["rms_norm_eps"] = rms_norm_eps;
  out["pretraining_tp"] = pretraining_tp;
  out["use_cache"] = use_cache;
  out["rope_theta"] = rope_theta;
  out["rope_scaling"] =
      rope_scaling.has_value() ? modeling::Sorted(rope_scaling->json) : ojson(nullptr);
  out["attention_bias"] = attention_bias;
  out["attention_dropout"] = attention_dropout;
  out["mlp_bias"] = mlp_bias;
  // PretrainedConfig keys: written when they differ from PretrainedConfig's or LlamaConfig's
  // defaults (to_diff_dict), which for tie_word_embeddings is always.
  if (pad_token_id.has_value()) out["pad_token_id"] = *pad_token_id;
  // bos and eos differ from LlamaConfig's defaults when null: written as null then.
  out["bos_token_id"] = bos_token_id.has_value() ? ojson(*bos_token_id) : ojson(nullptr);
  if (eos_is_list || eos_token_id.size() > 1) {
    out["eos_token_id"] = eos_token_id;
  } else {
    out["eos_token_id"] = eos_token_id.empty() ? ojson(nullptr) : ojson(eos_token_id[0]);
  }
  out["tie_word_embeddings"] = tie_word_embeddings;
  if (architectures.has_value()) out["architectures"] = *architectures;
  if (torch_dtype.has_value()) out["torch_dtype"] = *torch_dtype;
  out["model_type"] = "llama";
  out["transformers_version"] = std::string(modeling::kTransformersVersion);
  ojson result = ojson::object();
  for (auto& [key, value] : out) result[key] = std::move(value);
  return base::PyJsonDumps(result, /*indent=*/2, /*sort_keys=*/false) + "\n";
}

}  // namespace loom::models::llama
