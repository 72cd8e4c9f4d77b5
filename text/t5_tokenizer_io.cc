// T5Tokenizer::FromPretrained / SavePretrained: HF's slow T5Tokenizer folders
// (transformers 4.41 `T5Tokenizer.save_pretrained`).
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/file_util.h"
#include "base/status_macros.h"
#include "nlohmann/json.hpp"
#include "text/t5_tokenizer.h"
#include "text/tokenizer_json.h"

namespace loom::text {
namespace {

using Json = nlohmann::json;

absl::Status Unsupported(const std::string& path, absl::string_view key, absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat(path, ": \"", key, "\" ", why, "; loom's T5Tokenizer does not implement it"));
}

// additional_special_tokens must be exactly the sentinels <extra_id_0>.. (T5's own list), as
// many as extra_ids says (HF's T5Tokenizer raises ValueError otherwise); an empty list means
// the extra_ids sentinels.
absl::Status ReadSentinels(const Json& j, const std::string& path, T5TokenizerOptions* o) {
  auto it = j.find("additional_special_tokens");
  if (it == j.end() || it->is_null()) return absl::OkStatus();
  if (!it->is_array()) return JsonTypeError(path, "additional_special_tokens", "a list");
  for (size_t i = 0; i < it->size(); ++i) {
    std::string token;
    RETURN_IF_ERROR(ReadToken(Json{{"t", (*it)[i]}}, path, "t", &token));
    if (token != absl::StrCat("<extra_id_", i, ">")) {
      return Unsupported(path, "additional_special_tokens",
                         absl::StrCat("holds \"", token, "\" at position ", i,
                                      "; only T5's sentinels <extra_id_0>, <extra_id_1>, ... in "
                                      "order are supported"));
    }
  }
  if (!it->empty() && static_cast<int64_t>(it->size()) != o->extra_ids) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": \"additional_special_tokens\" lists ", it->size(), " sentinels but extra_ids is ",
        o->extra_ids, " (100 unless tokenizer_config.json says otherwise); make them agree"));
  }
  return absl::OkStatus();
}

absl::Status ReadSpecialTokens(const Json& j, const std::string& path, T5TokenizerOptions* o) {
  RETURN_IF_ERROR(ReadToken(j, path, "eos_token", &o->eos_token));
  RETURN_IF_ERROR(ReadToken(j, path, "unk_token", &o->unk_token));
  RETURN_IF_ERROR(ReadToken(j, path, "pad_token", &o->pad_token));
  return ReadSentinels(j, path, o);
}

absl::Status ReadTokenizerConfig(const Json& j, const std::string& path, T5TokenizerOptions* o) {
  if (auto it = j.find("extra_ids"); it != j.end() && !it->is_null()) {
    if (!it->is_number_unsigned()) return JsonTypeError(path, "extra_ids", "a non-negative integer");
    o->extra_ids = it->get<int64_t>();
  }
  if (auto it = j.find("legacy"); it != j.end() && it->is_boolean() && !it->get<bool>()) {
    return Unsupported(path, "legacy", "is false (the non-legacy handling of text after special "
                                       "tokens); remove it or set it to true");
  }
  if (auto it = j.find("sp_model_kwargs");
      it != j.end() && !it->is_null() && !(it->is_object() && it->empty())) {
    return Unsupported(path, "sp_model_kwargs", "sets SentencePiece options (e.g. sampling)");
  }
  RETURN_IF_ERROR(ReadBool(j, path, "clean_up_tokenization_spaces",
                           &o->clean_up_tokenization_spaces));
  RETURN_IF_ERROR(ReadBool(j, path, "add_prefix_space", &o->add_prefix_space));
  RETURN_IF_ERROR(ReadModelMaxLength(j, path, &o->model_max_length));
  return ReadSpecialTokens(j, path, o);
}

// added_tokens_decoder (tokenizer_config.json) and added_tokens.json may only restate the
// tokens T5Tokenizer adds itself, at the ids it gives them.
absl::Status CheckAddedTokens(const T5Tokenizer& tok, const Json& added, const std::string& path,
                              bool by_id) {
  if (!added.is_object()) return JsonTypeError(path, by_id ? "added_tokens_decoder" : "", "an object");
  for (auto it = added.begin(); it != added.end(); ++it) {
    std::string content;
    int64_t id = -1;
    if (by_id) {
      RETURN_IF_ERROR(ReadToken(Json{{"t", it.value()}}, path, "t", &content));
      id = std::strtoll(it.key().c_str(), nullptr, 10);
    } else {
      content = it.key();
      if (it.value().is_number_integer()) id = it.value().get<int64_t>();
    }
    const std::vector<int64_t> want = tok.ConvertTokensToIds({content});
    const bool known = tok.IsSpecialId(want[0]) && want[0] == id;
    if (!known) {
      return Unsupported(path, by_id ? "added_tokens_decoder" : content,
                         absl::StrCat("adds \"", content, "\" as id ", id,
                                      "; only T5's special tokens and sentinels at their usual "
                                      "ids are supported"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadSpieceModel(const std::string& dir) {
  const std::string path = dir + "/spiece.model";
  if (RegularFileExists(path)) return base::ReadFile(path);
  if (RegularFileExists(dir + "/tokenizer.json")) {
    return absl::FailedPreconditionError(absl::StrCat(
        dir, " has tokenizer.json but no spiece.model; loom's T5Tokenizer reads the "
             "SentencePiece model file spiece.model (HF's slow T5Tokenizer files): copy it from "
             "the original model folder or save the tokenizer with T5Tokenizer.save_pretrained"));
  }
  return absl::NotFoundError(absl::StrCat(
      path, " not found; a T5 tokenizer folder needs its SentencePiece model spiece.model"));
}

Json AddedTokenJson(const std::string& content, bool strips, bool with_special) {
  Json j = {{"content", content},   {"lstrip", strips},       {"normalized", false},
            {"rstrip", strips},     {"single_word", false}};
  if (with_special) j["special"] = true;
  return j;
}

}  // namespace

absl::StatusOr<T5Tokenizer> T5Tokenizer::FromPretrained(const std::string& dir) {
  ASSIGN_OR_RETURN(std::string model, ReadSpieceModel(dir));
  T5TokenizerOptions options;
  Json config = Json::object();
  const std::string config_path = dir + "/tokenizer_config.json";
  if (RegularFileExists(config_path)) {
    ASSIGN_OR_RETURN(config, ReadJsonObject(config_path));
    RETURN_IF_ERROR(ReadTokenizerConfig(config, config_path, &options));
  }
  const std::string map_path = dir + "/special_tokens_map.json";
  if (RegularFileExists(map_path)) {
    ASSIGN_OR_RETURN(Json map, ReadJsonObject(map_path));
    RETURN_IF_ERROR(ReadSpecialTokens(map, map_path, &options));
  }
  ASSIGN_OR_RETURN(T5Tokenizer tok, Create(std::move(model), std::move(options)),
                   "loading tokenizer from " + dir);
  if (auto it = config.find("added_tokens_decoder"); it != config.end() && !it->is_null()) {
    RETURN_IF_ERROR(CheckAddedTokens(tok, *it, config_path, /*by_id=*/true));
  }
  const std::string added_path = dir + "/added_tokens.json";
  if (RegularFileExists(added_path)) {
    ASSIGN_OR_RETURN(Json added, ReadJsonObject(added_path));
    RETURN_IF_ERROR(CheckAddedTokens(tok, added, added_path, /*by_id=*/false));
  }
  return tok;
}

absl::Status T5Tokenizer::SavePretrained(const std::string& dir) const {
  RETURN_IF_ERROR(base::MakeDirs(dir));
  RETURN_IF_ERROR(base::WriteFileAtomically(dir + "/spiece.model", *model_bytes_));
  const std::vector<std::string> sentinels = SentinelTokens();
  Json decoder = Json::object(), added = Json::object();
  for (const std::string& token : {options_.pad_token, options_.eos_token, options_.unk_token}) {
    decoder[std::to_string(ConvertTokensToIds({token})[0])] = AddedTokenJson(token, false, true);
  }
  for (const std::string& token : sentinels) {
    const int64_t id = ConvertTokensToIds({token})[0];
    decoder[std::to_string(id)] = AddedTokenJson(token, true, true);
    added[token] = id;
  }
  Json map = {{"additional_special_tokens", sentinels},
              {"eos_token", AddedTokenJson(options_.eos_token, false, false)},
              {"pad_token", AddedTokenJson(options_.pad_token, false, false)},
              {"unk_token", AddedTokenJson(options_.unk_token, false, false)}};
  Json config = {{"add_prefix_space", options_.add_prefix_space},
                 {"added_tokens_decoder", decoder},
                 {"additional_special_tokens", sentinels},
                 {"clean_up_tokenization_spaces", options_.clean_up_tokenization_spaces},
                 {"eos_token", options_.eos_token},
                 {"extra_ids", options_.extra_ids},
                 {"legacy", true},
                 {"pad_token", options_.pad_token},
                 {"sp_model_kwargs", Json::object()},
                 {"tokenizer_class", "T5Tokenizer"},
                 {"unk_token", options_.unk_token}};
  if (options_.model_max_length.has_value()) config["model_max_length"] = *options_.model_max_length;
  RETURN_IF_ERROR(base::WriteFileAtomically(dir + "/tokenizer_config.json", config.dump(2) + "\n"));
  RETURN_IF_ERROR(
      base::WriteFileAtomically(dir + "/special_tokens_map.json", map.dump(2) + "\n"));
  if (sentinels.empty()) return absl::OkStatus();
  return base::WriteFileAtomically(dir + "/added_tokens.json", added.dump(2) + "\n");
}

}  // namespace loom::text
