#include "models/bert/bert_config.h"

#include <algorithm>
#include <set>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/file_util.h"
#include "base/status_macros.h"
#include "base/python_json.h"
#include "modeling/config_json.h"
#include "modeling/layers.h"

namespace loom::models::bert {
namespace {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

using modeling::KeyError;
using modeling::ReadDouble;
using modeling::ReadInt;
using modeling::ReadOptionalString;
using modeling::ReadString;
using modeling::Sorted;

std::map<int64_t, std::string> DefaultId2Label(int64_t n) {
  std::map<int64_t, std::string> m;
  for (int64_t i = 0; i < n; ++i) m[i] = absl::StrCat("LABEL_", i);
  return m;
}

std::map<std::string, int64_t> Inverse(const std::map<int64_t, std::string>& id2label) {
  std::map<std::string, int64_t> m;
  for (const auto& [id, label] : id2label) m[label] = id;
  return m;
}

}  // namespace

absl::string_view AttnImplementationName(AttnImplementation implementation) {
  return implementation == AttnImplementation::kSdpa ? "sdpa" : "eager";
}

absl::StatusOr<AttnImplementation> ParseAttnImplementation(absl::string_view name) {
  if (name == "eager") return AttnImplementation::kEager;
  if (name == "sdpa") return AttnImplementation::kSdpa;
  if (name == "flash_attention_2") {
    return absl::UnimplementedError(
        "attn_implementation=\"flash_attention_2\" is not implemented in loom's BERT (nor in "
        "transformers 4.41's); use \"eager\" or \"sdpa\"");
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "attn_implementation=\"", name,
      "\" is not supported; the possible values are \"eager\" (the manual attention) and "
      "\"sdpa\" (torch.nn.functional.scaled_dot_product_attention)"));
}

void BertConfig::set_num_labels(int64_t n) {
  if (num_labels() == n) return;
  id2label = DefaultId2Label(n);
  label2id = Inverse(id2label);
}

absl::Status BertConfig::set_labels(const std::map<int64_t, std::string>& new_id2label,
                                    const std::map<std::string, int64_t>& new_label2id) {
  int64_t expected = 0;
  for (const auto& [id, label] : new_id2label) {
    if (id != expected++) {
      return absl::InvalidArgumentError(
          absl::StrCat("id2label must map the ids 0..", new_id2label.size() - 1, ", got id ", id));
    }
    auto it = new_label2id.find(label);
    if (it == new_label2id.end() || it->second != id) {
      return absl::InvalidArgumentError(
          absl::StrCat("label2id must map \"", label, "\" to ", id, " as id2label does"));
    }
  }
  if (new_label2id.size() != new_id2label.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "label2id has ", new_label2id.size(), " labels but id2label has ", new_id2label.size()));
  }
  id2label = new_id2label;
  label2id = new_label2id;
  return absl::OkStatus();
}

absl::Status BertConfig::set_problem_type(std::optional<std::string> value) {
  if (value.has_value() && *value != kRegression && *value != kSingleLabelClassification &&
      *value != kMultiLabelClassification) {
    return absl::InvalidArgumentError(absl::StrCat(
        "problem_type must be null, \"", kRegression, "\", \"", kSingleLabelClassification,
        "\" or \"", kMultiLabelClassification, "\", got \"", *value, "\""));
  }
  problem_type = std::move(value);
  return absl::OkStatus();
}

absl::StatusOr<BertConfig> BertConfig::FromFile(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, base::ReadFile(path));
  return FromJson(text, path);
}

namespace {

// The architecture's sizes, activation, dropouts and initialisation.
absl::Status ReadArchitecture(const json& j, absl::string_view source, BertConfig& c) {
  RETURN_IF_ERROR(ReadInt(j, source, "vocab_size", &c.vocab_size));
  RETURN_IF_ERROR(ReadInt(j, source, "hidden_size", &c.hidden_size));
  RETURN_IF_ERROR(ReadInt(j, source, "num_hidden_layers", &c.num_hidden_layers));
  RETURN_IF_ERROR(ReadInt(j, source, "num_attention_heads", &c.num_attention_heads));
  RETURN_IF_ERROR(ReadInt(j, source, "intermediate_size", &c.intermediate_size));
  RETURN_IF_ERROR(ReadString(j, source, "hidden_act", &c.hidden_act));
  RETURN_IF_ERROR(ReadDouble(j, source, "hidden_dropout_prob", &c.hidden_dropout_prob));
  RETURN_IF_ERROR(
      ReadDouble(j, source, "attention_probs_dropout_prob", &c.attention_probs_dropout_prob));
  RETURN_IF_ERROR(ReadInt(j, source, "max_position_embeddings", &c.max_position_embeddings));
  RETURN_IF_ERROR(ReadInt(j, source, "type_vocab_size", &c.type_vocab_size));
  RETURN_IF_ERROR(ReadDouble(j, source, "initializer_range", &c.initializer_range));
  RETURN_IF_ERROR(ReadDouble(j, source, "layer_norm_eps", &c.layer_norm_eps));
  RETURN_IF_ERROR(ReadString(j, source, "position_embedding_type", &c.position_embedding_type));
  return absl::OkStatus();
}

// pad_token_id, use_cache, classifier_dropout, problem_type, finetuning_task, architectures,
// _attn_implementation.
absl::Status ReadOptionalKeys(const json& j, absl::string_view source, BertConfig& c) {
  if (auto it = j.find("pad_token_id"); it != j.end()) {
    if (it->is_null()) {
      c.pad_token_id.reset();
    } else {
      int64_t pad = 0;
      RETURN_IF_ERROR(ReadInt(j, source, "pad_token_id", &pad));
      c.pad_token_id = pad;
    }
  }
  if (auto it = j.find("use_cache"); it != j.end()) {
    if (!it->is_boolean()) {
      return KeyError(source, "use_cache", absl::StrCat("must be true or false, got ", it->dump()));
    }
    c.use_cache = it->get<bool>();
  }
  if (auto it = j.find("classifier_dropout"); it != j.end() && !it->is_null()) {
    double p = 0;
    RETURN_IF_ERROR(ReadDouble(j, source, "classifier_dropout", &p));
    c.classifier_dropout = p;
  }
  std::optional<std::string> problem_type;
  RETURN_IF_ERROR(ReadOptionalString(j, source, "problem_type", &problem_type));
  if (absl::Status s = c.set_problem_type(problem_type); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": ", s.message()));
  }
  RETURN_IF_ERROR(ReadOptionalString(j, source, "finetuning_task", &c.finetuning_task));
  RETURN_IF_ERROR(modeling::ReadArchitectures(j, source, &c.architectures));
  // transformers 4.41 sets unknown config.json keys as attributes: "_attn_implementation" goes
  // through the property's setter and becomes the requested implementation.
  if (auto it = j.find("_attn_implementation"); it != j.end() && !it->is_null()) {
    if (!it->is_string()) {
      return KeyError(source, "_attn_implementation",
                      absl::StrCat("must be \"eager\", \"sdpa\" or null, got ", it->dump()));
    }
    absl::StatusOr<AttnImplementation> parsed = ParseAttnImplementation(it->get<std::string>());
    if (!parsed.ok()) {
      return absl::Status(
          parsed.status().code(),
          absl::StrCat(source, ": key \"_attn_implementation\": ", parsed.status().message()));
    }
    c.attn_implementation = *parsed;
  }
  return absl::OkStatus();
}

// Labels, as PretrainedConfig.__init__: id2label wins over num_labels; label2id, when given,
// replaces the inverse of id2label.
absl::Status ReadLabels(const json& j, absl::string_view source, BertConfig& c) {
  if (auto it = j.find("id2label"); it != j.end() && !it->is_null()) {
    if (!it->is_object()) {
      return KeyError(source, "id2label",
                      absl::StrCat("must be an object {\"0\": \"label\", ...}, got ", it->dump()));
    }
    c.id2label.clear();
    for (auto e = it->begin(); e != it->end(); ++e) {
      int64_t id = 0;
      if (!absl::SimpleAtoi(e.key(), &id) || !e.value().is_string()) {
        return KeyError(source, "id2label",
                        absl::StrCat("must map integer ids to label names; bad entry \"", e.key(),
                                     "\": ", e.value().dump()));
      }
      c.id2label[id] = e.value().get<std::string>();
    }
    c.label2id = Inverse(c.id2label);
  } else if (auto n = j.find("num_labels"); n != j.end()) {
    if (!n->is_number_integer() || n->get<int64_t>() < 1) {
      return KeyError(source, "num_labels",
                      absl::StrCat("must be a positive integer, got ", n->dump()));
    }
    c.set_num_labels(n->get<int64_t>());
  }
  if (auto it = j.find("label2id"); it != j.end() && !it->is_null()) {
    if (!it->is_object()) {
      return KeyError(source, "label2id",
                      absl::StrCat("must be an object {\"label\": 0, ...}, got ", it->dump()));
    }
    c.label2id.clear();
    for (auto e = it->begin(); e != it->end(); ++e) {
      if (!e.value().is_number_integer()) {
        return KeyError(source, "label2id",
                        absl::StrCat("must map label names to integer ids; bad entry \"", e.key(),
                                     "\": ", e.value().dump()));
      }
      c.label2id[e.key()] = e.value().get<int64_t>();
    }
  }
  return absl::OkStatus();
}

// Keys this file does not model, kept so that saving writes them back.
void KeepExtraKeys(const json& j, BertConfig& c) {
  static const auto* known = new std::set<std::string>{"vocab_size",
                                                       "hidden_size",
                                                       "num_hidden_layers",
                                                       "num_attention_heads",
                                                       "intermediate_size",
                                                       "hidden_act",
                                                       "hidden_dropout_prob",
                                                       "attention_probs_dropout_prob",
                                                       "max_position_embeddings",
                                                       "type_vocab_size",
                                                       "initializer_range",
                                                       "layer_norm_eps",
                                                       "pad_token_id",
                                                       "position_embedding_type",
                                                       "use_cache",
                                                       "classifier_dropout",
                                                       "id2label",
                                                       "label2id",
                                                       "num_labels",
                                                       "problem_type",
                                                       "finetuning_task",
                                                       "architectures",
                                                       "_attn_implementation",
                                                       "model_type",
                                                       "transformers_version"};
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (!known->count(it.key())) c.extra[it.key()] = it.value();
  }
}

}  // namespace

absl::StatusOr<BertConfig> BertConfig::FromJson(absl::string_view text, absl::string_view source) {
  ASSIGN_OR_RETURN(const json j, modeling::ParseConfigObject(text, source, "bert"));
  BertConfig c;
  RETURN_IF_ERROR(ReadArchitecture(j, source, c));
  RETURN_IF_ERROR(ReadOptionalKeys(j, source, c));
  RETURN_IF_ERROR(ReadLabels(j, source, c));
  KeepExtraKeys(j, c);
  RETURN_IF_ERROR(c.Validate(source));
  return c;
}

absl::Status BertConfig::Validate(absl::string_view source) const {
  for (const auto& [key, value] : {std::pair<const char*, int64_t>{"vocab_size", vocab_size},
                                   {"hidden_size", hidden_size},
                                   {"num_hidden_layers", num_hidden_layers},
                                   {"num_attention_heads", num_attention_heads},
                                   {"intermediate_size", intermediate_size},
                                   {"max_position_embeddings", max_position_embeddings},
                                   {"type_vocab_size", type_vocab_size},
                                   {"num_labels", num_labels()}}) {
    // num_hidden_layers may be 0 (an encoder-less model is still well defined).
    const int64_t min = std::string(key) == "num_hidden_layers" ? 0 : 1;
    if (value < min) {
      return KeyError(source, key, absl::StrCat("must be >= ", min, ", got ", value));
    }
  }
  if (hidden_size % num_attention_heads != 0) {
    return KeyError(source, "hidden_size",
                    absl::StrCat("(", hidden_size, ") is not a multiple of num_attention_heads (",
                                 num_attention_heads, ")"));
  }
  if (pad_token_id.has_value() && (*pad_token_id < 0 || *pad_token_id >= vocab_size)) {
    return KeyError(source, "pad_token_id",
                    absl::StrCat("(", *pad_token_id,
                                 ") must be null or in [0, vocab_size = ", vocab_size, ")"));
  }
  for (const auto& [key, p] :
       {std::pair<const char*, double>{"hidden_dropout_prob", hidden_dropout_prob},
        {"attention_probs_dropout_prob", attention_probs_dropout_prob},
        {"classifier_dropout", ClassifierDropout()}}) {
    if (!(p >= 0 && p <= 1)) {
      return KeyError(source, key, absl::StrCat("must be a probability in [0, 1], got ", p));
    }
  }
  if (!(initializer_range >= 0)) {
    return KeyError(source, "initializer_range",
                    absl::StrCat("must be >= 0, got ", initializer_range));
  }
  if (!(layer_norm_eps >= 0)) {
    return KeyError(source, "layer_norm_eps", absl::StrCat("must be >= 0, got ", layer_norm_eps));
  }
  if (position_embedding_type != "absolute") {
    return absl::UnimplementedError(absl::StrCat(
        source, ": key \"position_embedding_type\" is \"", position_embedding_type,
        "\"; loom's BERT implements only \"absolute\" (relative_key and relative_key_query "
        "are not supported)"));
  }
  if (!modeling::SupportedActivations().count(hidden_act)) {
    return absl::UnimplementedError(absl::StrCat(source, ": key \"hidden_act\" is \"", hidden_act,
                                                 "\"; loom implements ",
                                                 absl::StrJoin(modeling::SupportedActivations(), ", ")));
  }
  int64_t expected = 0;
  for (const auto& [id, label] : id2label) {
    if (id != expected++) {
      return KeyError(source, "id2label",
                      absl::StrCat("must have the ids 0..", id2label.size() - 1, ", got ", id));
    }
  }
  return absl::OkStatus();
}

nlohmann::ordered_json BertConfig::ToJsonValue() const {
  // to_diff_dict: all of BertConfig's keys, plus PretrainedConfig's that differ from defaults.
  std::map<std::string, ojson> out;
  for (auto it = extra.begin(); it != extra.end(); ++it) out[it.key()] = Sorted(it.value());
  out["vocab_size"] = vocab_size;
  out["hidden_size"] = hidden_size;
  out["num_hidden_layers"] = num_hidden_layers;
  out["num_attention_heads"] = num_attention_heads;
  out["intermediate_size"] = intermediate_size;
  out["hidden_act"] = hidden_act;
  out["hidden_dropout_prob"] = hidden_dropout_prob;
  out["attention_probs_dropout_prob"] = attention_probs_dropout_prob;
  out["max_position_embeddings"] = max_position_embeddings;
  out["type_vocab_size"] = type_vocab_size;
  out["initializer_range"] = initializer_range;
  out["layer_norm_eps"] = layer_norm_eps;
  out["pad_token_id"] = pad_token_id.has_value() ? ojson(*pad_token_id) : ojson(nullptr);
  out["position_embedding_type"] = position_embedding_type;
  out["use_cache"] = use_cache;
  out["classifier_dropout"] =
      classifier_dropout.has_value() ? ojson(*classifier_dropout) : ojson(nullptr);
  out["model_type"] = "bert";
  out["transformers_version"] = std::string(kTransformersVersion);
  if (architectures.has_value()) out["architectures"] = *architectures;
  if (finetuning_task.has_value()) out["finetuning_task"] = *finetuning_task;
  if (problem_type.has_value()) out["problem_type"] = *problem_type;
  const std::map<int64_t, std::string> default_id2label = DefaultId2Label(2);
  if (id2label != default_id2label) {
    ojson m = ojson::object();
    for (const auto& [id, label] : id2label) m[absl::StrCat(id)] = label;  // numeric order
    out["id2label"] = std::move(m);
  }
  if (label2id != Inverse(default_id2label)) {
    ojson m = ojson::object();
    for (const auto& [label, id] : label2id) m[label] = id;
    out["label2id"] = std::move(m);
  }
  ojson result = ojson::object();
  for (auto& [key, value] : out) result[key] = std::move(value);
  return result;
}

std::string BertConfig::ToJson() const {
  return base::PyJsonDumps(ToJsonValue(), /*indent=*/2, /*sort_keys=*/false) + "\n";
}

}  // namespace loom::models::bert
