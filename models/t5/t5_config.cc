#include "models/t5/t5_config.h"

#include <map>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "base/file_util.h"
#include "base/python_json.h"
#include "base/status_macros.h"
#include "modeling/config_json.h"
#include "modeling/layers.h"

namespace loom::models::t5 {
namespace {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;
using modeling::KeyError;
using modeling::ReadBool;
using modeling::ReadDouble;
using modeling::ReadInt;
using modeling::ReadOptionalInt;
using modeling::ReadString;

// "ACT" or "gated-ACT" split as T5Config.__init__ does; nullopt when malformed.
std::optional<std::pair<bool, std::string>> SplitFeedForwardProj(const std::string& proj) {
  std::vector<std::string> parts = absl::StrSplit(proj, '-');
  if (parts.size() > 2 || (parts.size() == 2 && parts[0] != "gated")) return std::nullopt;
  return std::make_pair(parts.size() == 2, parts.back());
}

absl::Status ReadSizes(const json& j, absl::string_view source, T5Config& c) {
  RETURN_IF_ERROR(ReadInt(j, source, "vocab_size", &c.vocab_size));
  RETURN_IF_ERROR(ReadInt(j, source, "d_model", &c.d_model));
  RETURN_IF_ERROR(ReadInt(j, source, "d_kv", &c.d_kv));
  RETURN_IF_ERROR(ReadInt(j, source, "d_ff", &c.d_ff));
  RETURN_IF_ERROR(ReadInt(j, source, "num_layers", &c.num_layers));
  RETURN_IF_ERROR(ReadOptionalInt(j, source, "num_decoder_layers", &c.num_decoder_layers));
  RETURN_IF_ERROR(ReadInt(j, source, "num_heads", &c.num_heads));
  RETURN_IF_ERROR(
      ReadInt(j, source, "relative_attention_num_buckets", &c.relative_attention_num_buckets));
  RETURN_IF_ERROR(
      ReadInt(j, source, "relative_attention_max_distance", &c.relative_attention_max_distance));
  RETURN_IF_ERROR(ReadDouble(j, source, "dropout_rate", &c.dropout_rate));
  RETURN_IF_ERROR(ReadDouble(j, source, "classifier_dropout", &c.classifier_dropout));
  RETURN_IF_ERROR(ReadDouble(j, source, "layer_norm_epsilon", &c.layer_norm_epsilon));
  RETURN_IF_ERROR(ReadDouble(j, source, "initializer_factor", &c.initializer_factor));
  return ReadString(j, source, "feed_forward_proj", &c.feed_forward_proj);
}

absl::Status ReadFlagsAndIds(const json& j, absl::string_view source, T5Config& c) {
  RETURN_IF_ERROR(ReadBool(j, source, "use_cache", &c.use_cache));
  RETURN_IF_ERROR(ReadBool(j, source, "tie_word_embeddings", &c.tie_word_embeddings));
  bool encoder_decoder = true;
  RETURN_IF_ERROR(ReadBool(j, source, "is_encoder_decoder", &encoder_decoder));
  if (!encoder_decoder) {
    return KeyError(source, "is_encoder_decoder",
                    "is false; loom's T5 is T5ForConditionalGeneration (encoder-decoder)");
  }
  RETURN_IF_ERROR(ReadOptionalInt(j, source, "pad_token_id", &c.pad_token_id));
  RETURN_IF_ERROR(ReadOptionalInt(j, source, "eos_token_id", &c.eos_token_id));
  RETURN_IF_ERROR(ReadOptionalInt(j, source, "decoder_start_token_id", &c.decoder_start_token_id));
  RETURN_IF_ERROR(modeling::ReadArchitectures(j, source, &c.architectures));
  if (auto it = j.find("torch_dtype"); it != j.end() && it->is_string()) {
    c.torch_dtype = it->get<std::string>();
  }
  if (auto it = j.find("_attn_implementation"); it != j.end() && !it->is_null()) {
    if (*it != "eager") {
      return absl::UnimplementedError(absl::StrCat(
          source, ": key \"_attn_implementation\" is ", it->dump(),
          "; T5 has only the eager attention (as in transformers 4.41): remove the key or set "
          "\"eager\""));
    }
  }
  return absl::OkStatus();
}

const std::set<std::string>& KnownKeys() {
  static const auto* keys = new std::set<std::string>{
      "vocab_size", "d_model", "d_kv", "d_ff", "num_layers", "num_decoder_layers", "num_heads",
      "relative_attention_num_buckets", "relative_attention_max_distance", "dropout_rate",
      "classifier_dropout", "layer_norm_epsilon", "initializer_factor", "feed_forward_proj",
      "use_cache", "tie_word_embeddings", "is_encoder_decoder", "pad_token_id", "eos_token_id",
      "decoder_start_token_id", "architectures", "torch_dtype", "_attn_implementation",
      "model_type", "transformers_version", "dense_act_fn", "is_gated_act"};
  return *keys;
}

}  // namespace

std::string T5Config::DenseActFn() const {
  if (feed_forward_proj == "gated-gelu") return "gelu_new";  // HF's backwards compatibility
  auto split = SplitFeedForwardProj(feed_forward_proj);
  return split.has_value() ? split->second : feed_forward_proj;
}

bool T5Config::IsGatedAct() const {
  auto split = SplitFeedForwardProj(feed_forward_proj);
  return split.has_value() && split->first;
}

absl::StatusOr<T5Config> T5Config::FromJson(absl::string_view text, absl::string_view source) {
  ASSIGN_OR_RETURN(const json j, modeling::ParseConfigObject(text, source, "t5"));
  T5Config c;
  RETURN_IF_ERROR(ReadSizes(j, source, c));
  RETURN_IF_ERROR(ReadFlagsAndIds(j, source, c));
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (!KnownKeys().count(it.key())) c.extra[it.key()] = it.value();
  }
  RETURN_IF_ERROR(c.Validate(source));
  return c;
}

absl::StatusOr<T5Config> T5Config::FromFile(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, base::ReadFile(path));
  return FromJson(text, path);
}

absl::Status T5Config::Validate(absl::string_view source) const {
  for (const auto& [key, value] : {std::pair<const char*, int64_t>{"vocab_size", vocab_size},
                                   {"d_model", d_model},
                                   {"d_kv", d_kv},
                                   {"d_ff", d_ff},
                                   {"num_heads", num_heads},
                                   {"relative_attention_num_buckets",
                                    relative_attention_num_buckets},
                                   {"relative_attention_max_distance",
                                    relative_attention_max_distance}}) {
    if (value < 1) return KeyError(source, key, absl::StrCat("must be >= 1, got ", value));
  }
  if (num_layers < 0 || DecoderLayers() < 0) {
    return KeyError(source, "num_layers", "and num_decoder_layers must be >= 0");
  }
  for (const auto& [key, p] : {std::pair<const char*, double>{"dropout_rate", dropout_rate},
                               {"classifier_dropout", classifier_dropout}}) {
    if (!(p >= 0 && p <= 1)) {
      return KeyError(source, key, absl::StrCat("must be a probability in [0, 1], got ", p));
    }
  }
  if (!(layer_norm_epsilon >= 0)) {
    return KeyError(source, "layer_norm_epsilon", "must be >= 0");
  }
  if (!SplitFeedForwardProj(feed_forward_proj).has_value()) {
    return KeyError(source, "feed_forward_proj",
                    absl::StrCat("is \"", feed_forward_proj,
                                 "\"; use the format \"gated-{ACT_FN}\" or \"{ACT_FN}\", e.g. "
                                 "\"gated-gelu\" or \"relu\" (HF's rule)"));
  }
  if (!modeling::SupportedActivations().count(DenseActFn())) {
    return KeyError(source, "feed_forward_proj",
                    absl::StrCat("names the activation \"", DenseActFn(), "\"; loom implements ",
                                 absl::StrJoin(modeling::SupportedActivations(), ", ")));
  }
  for (const auto& [key, id] : {std::pair<const char*, std::optional<int64_t>>{
                                    "pad_token_id", pad_token_id},
                                {"eos_token_id", eos_token_id},
                                {"decoder_start_token_id", decoder_start_token_id}}) {
    if (id.has_value() && (*id < 0 || *id >= vocab_size)) {
      return KeyError(source, key,
                      absl::StrCat("(", *id, ") must be null or in [0, vocab_size = ",
                                   vocab_size, ")"));
    }
  }
  return absl::OkStatus();
}

std::string T5Config::ToJson() const {
  std::map<std::string, ojson> out;
  for (auto it = extra.begin(); it != extra.end(); ++it) {
    out[it.key()] = modeling::Sorted(it.value());
  }
  auto id = [](std::optional<int64_t> v) { return v.has_value() ? ojson(*v) : ojson(nullptr); };
  out["vocab_size"] = vocab_size;
  out["d_model"] = d_model;
  out["d_kv"] = d_kv;
  out["d_ff"] = d_ff;
  out["num_layers"] = num_layers;
  out["num_decoder_layers"] = DecoderLayers();
  out["num_heads"] = num_heads;
  out["relative_attention_num_buckets"] = relative_attention_num_buckets;
  out["relative_attention_max_distance"] = relative_attention_max_distance;
  out["dropout_rate"] = dropout_rate;
  out["classifier_dropout"] = classifier_dropout;
  out["layer_norm_epsilon"] = layer_norm_epsilon;
  out["initializer_factor"] = initializer_factor;
  out["feed_forward_proj"] = feed_forward_proj;
  out["use_cache"] = use_cache;
  out["dense_act_fn"] = DenseActFn();
  out["is_gated_act"] = IsGatedAct();
  out["is_encoder_decoder"] = true;
  out["pad_token_id"] = id(pad_token_id);
  out["eos_token_id"] = id(eos_token_id);
  // PretrainedConfig keys, written when they differ from PretrainedConfig's defaults.
  if (decoder_start_token_id.has_value()) out["decoder_start_token_id"] = *decoder_start_token_id;
  if (!tie_word_embeddings) out["tie_word_embeddings"] = false;
  if (architectures.has_value()) out["architectures"] = *architectures;
  if (torch_dtype.has_value()) out["torch_dtype"] = *torch_dtype;
  out["model_type"] = "t5";
  out["transformers_version"] = std::string(modeling::kTransformersVersion);
  ojson result = ojson::object();
  for (auto& [key, value] : out) result[key] = std::move(value);
  return base::PyJsonDumps(result, /*indent=*/2, /*sort_keys=*/false) + "\n";
}

}  // namespace loom::models::t5
