// LlamaTokenizer::FromPretrained / SavePretrained: HF's slow LlamaTokenizer folders
// (transformers 4.41 `LlamaTokenizer.save_pretrained`).
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/file_util.h"
#include "base/status_macros.h"
#include "nlohmann/json.hpp"
#include "text/llama_tokenizer.h"
#include "text/tokenizer_json.h"

namespace loom::text {
namespace {

using Json = nlohmann::json;

absl::Status Unsupported(const std::string& path, absl::string_view key, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(
      path, ": \"", key, "\" ", why, "; loom's LlamaTokenizer does not implement it"));
}

absl::Status ReadSpecialTokens(const Json& j, const std::string& path, LlamaTokenizerOptions* o) {
  RETURN_IF_ERROR(ReadToken(j, path, "bos_token", &o->bos_token));
  RETURN_IF_ERROR(ReadToken(j, path, "eos_token", &o->eos_token));
  RETURN_IF_ERROR(ReadToken(j, path, "unk_token", &o->unk_token));
  if (auto it = j.find("pad_token"); it != j.end() && !it->is_null()) {
    std::string pad;
    RETURN_IF_ERROR(ReadToken(j, path, "pad_token", &pad));
    o->pad_token = pad;
  }
  return absl::OkStatus();
}

absl::Status ReadTokenizerConfig(const Json& j, const std::string& path,
                                 LlamaTokenizerOptions* o) {
  if (auto it = j.find("sp_model_kwargs");
      it != j.end() && !it->is_null() && !(it->is_object() && it->empty())) {
    return Unsupported(path, "sp_model_kwargs", "sets SentencePiece options (e.g. sampling)");
  }
  RETURN_IF_ERROR(ReadBool(j, path, "add_bos_token", &o->add_bos_token));
  RETURN_IF_ERROR(ReadBool(j, path, "add_eos_token", &o->add_eos_token));
  RETURN_IF_ERROR(ReadBool(j, path, "add_prefix_space", &o->add_prefix_space));
  RETURN_IF_ERROR(ReadBool(j, path, "clean_up_tokenization_spaces",
                           &o->clean_up_tokenization_spaces));
  std::optional<bool> legacy;  // null: 4.41's legacy behaviour (with its warning)
  RETURN_IF_ERROR(ReadOptionalBool(j, path, "legacy", &legacy));
  o->legacy = legacy.value_or(true);
  RETURN_IF_ERROR(ReadModelMaxLength(j, path, &o->model_max_length));
  return ReadSpecialTokens(j, path, o);
}

// added_tokens_decoder may only restate the special tokens at their piece ids.
absl::Status CheckAddedTokens(const LlamaTokenizer& tok, const Json& added,
                              const std::string& path) {
  if (!added.is_object()) return JsonTypeError(path, "added_tokens_decoder", "an object");
  for (auto it = added.begin(); it != added.end(); ++it) {
    std::string content;
    RETURN_IF_ERROR(ReadToken(Json{{"t", it.value()}}, path, "t", &content));
    const int64_t id = std::strtoll(it.key().c_str(), nullptr, 10);
    if (!tok.IsSpecialToken(content) || tok.ConvertTokensToIds({content})[0] != id) {
      return Unsupported(path, "added_tokens_decoder",
                         absl::StrCat("adds \"", content, "\" as id ", id,
                                      "; only the special tokens at their piece ids are "
                                      "supported"));
    }
  }
  return absl::OkStatus();
}

Json AddedTokenJson(const std::string& content, bool with_special) {
  Json j = {{"content", content}, {"lstrip", false}, {"normalized", false},
            {"rstrip", false},    {"single_word", false}};
  if (with_special) j["special"] = true;
  return j;
}

// What a tokenizer.json describes: its model type and, when it has one, its pre-tokenizer's.
std::string DescribeTokenizerJson(const std::string& path) {
  absl::StatusOr<Json> j = ReadJsonObject(path);
  if (!j.ok()) return "unreadable";
  std::string model = "unknown", pre;
  if (auto m = j->find("model"); m != j->end() && m->is_object()) {
    if (auto t = m->find("type"); t != m->end() && t->is_string()) model = t->get<std::string>();
  }
  if (auto p = j->find("pre_tokenizer"); p != j->end() && p->is_object()) {
    if (auto t = p->find("type"); t != p->end() && t->is_string()) pre = t->get<std::string>();
  }
  return absl::StrCat("model type \"", model, "\"", pre.empty() ? "" : ", pre-tokenizer \"" + pre + "\"");
}

}  // namespace

absl::StatusOr<LlamaTokenizer> LlamaTokenizer::FromPretrained(const std::string& dir) {
  const std::string model_path = dir + "/tokenizer.model";
  if (!RegularFileExists(model_path) && RegularFileExists(dir + "/tokenizer.json")) {
    return absl::UnimplementedError(absl::StrCat(
        dir, " has a tokenizer.json (", DescribeTokenizerJson(dir + "/tokenizer.json"),
        ") but no tokenizer.model: loom's Llama tokenizer reads SentencePiece tokenizer.model "
        "files (Llama 1/2 and their relatives); this tokenizer.json's type is not implemented"));
  }
  if (!RegularFileExists(model_path)) {
    return absl::NotFoundError(absl::StrCat(
        model_path, " not found; a Llama (SentencePiece) tokenizer folder needs tokenizer.model"));
  }
  ASSIGN_OR_RETURN(std::string model, base::ReadFile(model_path));
  LlamaTokenizerOptions options;
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
  ASSIGN_OR_RETURN(LlamaTokenizer tok, Create(std::move(model), std::move(options)),
                   "loading tokenizer from " + dir);
  if (auto it = config.find("added_tokens_decoder"); it != config.end() && !it->is_null()) {
    RETURN_IF_ERROR(CheckAddedTokens(tok, *it, config_path));
  }
  return tok;
}

absl::Status LlamaTokenizer::SavePretrained(const std::string& dir) const {
  RETURN_IF_ERROR(base::MakeDirs(dir));
  RETURN_IF_ERROR(base::WriteFileAtomically(dir + "/tokenizer.model", *model_bytes_));
  Json decoder = Json::object();
  for (const std::string& token : SpecialTokens()) {
    decoder[std::to_string(ConvertTokensToIds({token})[0])] = AddedTokenJson(token, true);
  }
  Json map = {{"bos_token", AddedTokenJson(options_.bos_token, false)},
              {"eos_token", AddedTokenJson(options_.eos_token, false)},
              {"unk_token", AddedTokenJson(options_.unk_token, false)}};
  Json config = {{"add_bos_token", options_.add_bos_token},
                 {"add_eos_token", options_.add_eos_token},
                 {"add_prefix_space", options_.add_prefix_space},
                 {"added_tokens_decoder", decoder},
                 {"bos_token", options_.bos_token},
                 {"clean_up_tokenization_spaces", options_.clean_up_tokenization_spaces},
                 {"eos_token", options_.eos_token},
                 {"legacy", options_.legacy},
                 {"pad_token", nullptr},
                 {"sp_model_kwargs", Json::object()},
                 {"tokenizer_class", "LlamaTokenizer"},
                 {"unk_token", options_.unk_token}};
  if (options_.pad_token.has_value()) {
    config["pad_token"] = *options_.pad_token;
    map["pad_token"] = AddedTokenJson(*options_.pad_token, false);
  }
  if (options_.model_max_length.has_value()) config["model_max_length"] = *options_.model_max_length;
  RETURN_IF_ERROR(base::WriteFileAtomically(dir + "/tokenizer_config.json", config.dump(2) + "\n"));
  return base::WriteFileAtomically(dir + "/special_tokens_map.json", map.dump(2) + "\n");
}

}  // namespace loom::text
