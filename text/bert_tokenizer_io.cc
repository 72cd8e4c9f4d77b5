// BertTokenizer::FromPretrained / SavePretrained: HF tokenizer folders.
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/file_util.h"
#include "base/status_macros.h"
#include "nlohmann/json.hpp"
#include "text/bert_tokenizer.h"
#include "text/tokenizer_json.h"

namespace loom::text {
namespace {

using Json = nlohmann::json;

absl::Status ReadSpecialTokens(const Json& j, const std::string& path, SpecialTokens* sp) {
  RETURN_IF_ERROR(ReadToken(j, path, "unk_token", &sp->unk));
  RETURN_IF_ERROR(ReadToken(j, path, "sep_token", &sp->sep));
  RETURN_IF_ERROR(ReadToken(j, path, "pad_token", &sp->pad));
  RETURN_IF_ERROR(ReadToken(j, path, "cls_token", &sp->cls));
  return ReadToken(j, path, "mask_token", &sp->mask);
}

// tokenizer_config.json; `present` records which normalizer keys it sets, since those
// override tokenizer.json's BertNormalizer.
struct ConfigKeys {
  bool do_lower_case = false, strip_accents = false, tokenize_chinese_chars = false;
};

absl::Status ReadTokenizerConfig(const Json& j, const std::string& path, BertTokenizerOptions* o,
                                 ConfigKeys* present) {
  present->do_lower_case = j.contains("do_lower_case") && !j["do_lower_case"].is_null();
  present->strip_accents = j.contains("strip_accents");
  present->tokenize_chinese_chars =
      j.contains("tokenize_chinese_chars") && !j["tokenize_chinese_chars"].is_null();
  RETURN_IF_ERROR(ReadBool(j, path, "do_lower_case", &o->do_lower_case));
  RETURN_IF_ERROR(ReadBool(j, path, "do_basic_tokenize", &o->do_basic_tokenize));
  RETURN_IF_ERROR(ReadBool(j, path, "tokenize_chinese_chars", &o->tokenize_chinese_chars));
  RETURN_IF_ERROR(ReadOptionalBool(j, path, "strip_accents", &o->strip_accents));
  if (auto it = j.find("never_split"); it != j.end() && !it->is_null()) {
    if (!it->is_array()) return JsonTypeError(path, "never_split", "a list of strings or null");
    o->never_split.clear();
    for (const Json& v : *it) {
      if (!v.is_string()) return JsonTypeError(path, "never_split", "a list of strings or null");
      o->never_split.push_back(v.get<std::string>());
    }
  }
  RETURN_IF_ERROR(ReadModelMaxLength(j, path, &o->model_max_length));
  return ReadSpecialTokens(j, path, &o->special_tokens);
}

// tokenizer.json of the `tokenizers` library: WordPiece model + BertNormalizer.
using VocabPairs = std::vector<std::pair<std::string, int64_t>>;

// tokenizer.json's "model": a WordPiece vocabulary and its options.
absl::StatusOr<VocabPairs> ReadWordPieceModel(const Json& j, const std::string& path,
                                              BertTokenizerOptions* o) {
  auto model = j.find("model");
  if (model == j.end() || !model->is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(path, " has no \"model\" object"));
  }
  const std::string type = model->value("type", std::string());
  if (type != "WordPiece") {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": model.type is \"", type,
        "\" but BertTokenizer supports only \"WordPiece\" models; load a WordPiece (BERT) "
        "tokenizer or pass use_fast=false to read vocab.txt"));
  }
  auto vocab_json = model->find("vocab");
  if (vocab_json == model->end() || !vocab_json->is_object()) {
    return JsonTypeError(path, "model.vocab", "an object mapping tokens to ids");
  }
  VocabPairs pairs;
  pairs.reserve(vocab_json->size());
  for (auto it = vocab_json->begin(); it != vocab_json->end(); ++it) {
    if (!it.value().is_number_integer()) {
      return JsonTypeError(path, "model.vocab[\"" + it.key() + "\"]", "an integer id");
    }
    pairs.emplace_back(it.key(), it.value().get<int64_t>());
  }
  RETURN_IF_ERROR(ReadToken(*model, path, "unk_token", &o->special_tokens.unk));
  if (auto it = model->find("continuing_subword_prefix"); it != model->end() && !it->is_null()) {
    if (!it->is_string()) return JsonTypeError(path, "model.continuing_subword_prefix", "a string");
    o->continuing_subword_prefix = it->get<std::string>();
  }
  if (auto it = model->find("max_input_chars_per_word"); it != model->end() && !it->is_null()) {
    if (!it->is_number_unsigned() || it->get<uint64_t>() > 1000000000) {
      return JsonTypeError(path, "model.max_input_chars_per_word", "a non-negative integer");
    }
    o->max_input_chars_per_word = static_cast<int>(it->get<uint64_t>());
  }
  return pairs;
}

// tokenizer.json's "normalizer" (null or BertNormalizer); tokenizer_config.json's entries
// (`config`) win, as in HF's BertTokenizerFast.
absl::Status ReadNormalizer(const Json& j, const std::string& path, const ConfigKeys& config,
                            BertTokenizerOptions* o) {
  o->nfc = false;
  auto norm = j.find("normalizer");
  if (norm == j.end() || norm->is_null()) {
    o->clean_text = false;
    if (!config.tokenize_chinese_chars) o->tokenize_chinese_chars = false;
    if (!config.do_lower_case) o->do_lower_case = false;
    if (!config.strip_accents) o->strip_accents = false;
  } else {
    if (!norm->is_object() || norm->value("type", std::string()) != "BertNormalizer") {
      return absl::InvalidArgumentError(
          absl::StrCat(path,
                       ": normalizer must be null or {\"type\": \"BertNormalizer\", ...}; other "
                       "normalizers are not supported"));
    }
    BertTokenizerOptions n = *o;
    RETURN_IF_ERROR(ReadBool(*norm, path, "clean_text", &o->clean_text));
    RETURN_IF_ERROR(ReadBool(*norm, path, "handle_chinese_chars", &n.tokenize_chinese_chars));
    RETURN_IF_ERROR(ReadOptionalBool(*norm, path, "strip_accents", &n.strip_accents));
    RETURN_IF_ERROR(ReadBool(*norm, path, "lowercase", &n.do_lower_case));
    if (!config.tokenize_chinese_chars) o->tokenize_chinese_chars = n.tokenize_chinese_chars;
    if (!config.strip_accents) o->strip_accents = n.strip_accents;
    if (!config.do_lower_case) o->do_lower_case = n.do_lower_case;
  }
  return absl::OkStatus();
}

absl::Status CheckPreTokenizer(const Json& j, const std::string& path) {
  if (auto pre = j.find("pre_tokenizer"); pre == j.end() || !pre->is_object() ||
                                          pre->value("type", std::string()) != "BertPreTokenizer") {
    return absl::InvalidArgumentError(absl::StrCat(
        path,
        ": pre_tokenizer must be {\"type\": \"BertPreTokenizer\"}; other pre-tokenizers "
        "are not supported"));
  }
  return absl::OkStatus();
}

// tokenizer.json's "added_tokens": tokens the vocabulary lacks join it.
absl::Status ReadAddedTokens(const Json& j, const std::string& path, VocabPairs& pairs,
                             BertTokenizerOptions* o) {
  if (auto added = j.find("added_tokens"); added != j.end() && !added->is_null()) {
    if (!added->is_array()) return JsonTypeError(path, "added_tokens", "a list");
    for (const Json& t : *added) {
      if (!t.is_object() || !t.contains("content") || !t["content"].is_string() ||
          !t.contains("id") || !t["id"].is_number_integer()) {
        return JsonTypeError(path, "added_tokens", "a list of {\"id\": int, \"content\": str, ...}");
      }
      const std::string content = t["content"].get<std::string>();
      if (t.value("normalized", false)) {
        return absl::InvalidArgumentError(
            absl::StrCat(path, ": added token \"", content,
                         "\" has normalized=true, which BertTokenizer does not support"));
      }
      bool known = false;
      for (const auto& [token, id] : pairs) known = known || token == content;
      if (!known) pairs.emplace_back(content, t["id"].get<int64_t>());
      o->extra_added_tokens.push_back(content);
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<Vocab> ReadTokenizerJson(const Json& j, const std::string& path,
                                        const ConfigKeys& config, BertTokenizerOptions* o) {
  ASSIGN_OR_RETURN(VocabPairs pairs, ReadWordPieceModel(j, path, o));
  RETURN_IF_ERROR(ReadNormalizer(j, path, config, o));
  RETURN_IF_ERROR(CheckPreTokenizer(j, path));
  RETURN_IF_ERROR(ReadAddedTokens(j, path, pairs, o));
  return Vocab::FromPairs(pairs, path + " model.vocab");
}

Json SpecialTokensJson(const SpecialTokens& sp) {
  Json j = Json::object();
  if (!sp.cls.empty()) j["cls_token"] = sp.cls;
  if (!sp.mask.empty()) j["mask_token"] = sp.mask;
  if (!sp.pad.empty()) j["pad_token"] = sp.pad;
  if (!sp.sep.empty()) j["sep_token"] = sp.sep;
  if (!sp.unk.empty()) j["unk_token"] = sp.unk;
  return j;
}

}  // namespace

absl::StatusOr<BertTokenizer> BertTokenizer::FromPretrained(const std::string& dir, bool use_fast) {
  const std::string config_path = dir + "/tokenizer_config.json";
  const std::string map_path = dir + "/special_tokens_map.json";
  const std::string json_path = dir + "/tokenizer.json";
  const std::string vocab_path = dir + "/vocab.txt";
  BertTokenizerOptions options;
  ConfigKeys present;
  if (RegularFileExists(config_path)) {
    ASSIGN_OR_RETURN(Json config, ReadJsonObject(config_path));
    RETURN_IF_ERROR(ReadTokenizerConfig(config, config_path, &options, &present));
  }
  const bool fast = use_fast && RegularFileExists(json_path);
  Vocab vocab;
  if (fast) {
    ASSIGN_OR_RETURN(Json tj, ReadJsonObject(json_path));
    ASSIGN_OR_RETURN(vocab, ReadTokenizerJson(tj, json_path, present, &options));
  } else if (RegularFileExists(vocab_path)) {
    ASSIGN_OR_RETURN(vocab, Vocab::FromFile(vocab_path));
  } else {
    return absl::NotFoundError(absl::StrCat(dir, " holds neither vocab.txt nor tokenizer.json",
                                            use_fast ? ""
                                                     : " (use_fast=false "
                                                       "needs vocab.txt)",
                                            "; point to a folder saved by a BERT tokenizer"));
  }
  if (RegularFileExists(map_path)) {
    ASSIGN_OR_RETURN(Json map, ReadJsonObject(map_path));
    RETURN_IF_ERROR(ReadSpecialTokens(map, map_path, &options.special_tokens));
  }
  ASSIGN_OR_RETURN(BertTokenizer tok, Create(std::move(vocab), std::move(options)),
                   "loading tokenizer from " + dir);
  return tok;
}

absl::Status BertTokenizer::SavePretrained(const std::string& dir) const {
  const SpecialTokens& sp = options_.special_tokens;
  bool extra_added = false;
  for (const std::string& token : options_.extra_added_tokens) {
    extra_added = extra_added || (token != sp.unk && token != sp.sep && token != sp.pad &&
                                  token != sp.cls && token != sp.mask);
  }
  if (options_.continuing_subword_prefix != "##" || options_.max_input_chars_per_word != 100 ||
      !options_.clean_text || extra_added) {
    return absl::FailedPreconditionError(absl::StrCat(
        "cannot save to ", dir,
        ": this tokenizer (from a tokenizer.json) uses settings HF's BertTokenizer files "
        "cannot express (continuing_subword_prefix \"##\", max_input_chars_per_word 100, "
        "clean_text and no added tokens besides the special ones are required)"));
  }
  RETURN_IF_ERROR(base::MakeDirs(dir));
  RETURN_IF_ERROR(vocab_->Write(dir + "/vocab.txt"));

  Json added = Json::object();
  for (const std::string& token : {sp.pad, sp.unk, sp.cls, sp.sep, sp.mask}) {
    if (token.empty()) continue;
    added[std::to_string(*vocab_->TokenToId(token))] = {{"content", token},     {"lstrip", false},
                                                        {"normalized", false},  {"rstrip", false},
                                                        {"single_word", false}, {"special", true}};
  }
  Json config = SpecialTokensJson(sp);
  config["added_tokens_decoder"] = added;
  config["clean_up_tokenization_spaces"] = true;
  config["do_basic_tokenize"] = options_.do_basic_tokenize;
  config["do_lower_case"] = options_.do_lower_case;
  if (options_.model_max_length.has_value())
    config["model_max_length"] = *options_.model_max_length;
  config["never_split"] = options_.never_split.empty() ? Json(nullptr) : Json(options_.never_split);
  config["strip_accents"] =
      options_.strip_accents.has_value() ? Json(*options_.strip_accents) : Json(nullptr);
  config["tokenize_chinese_chars"] = options_.tokenize_chinese_chars;
  config["tokenizer_class"] = "BertTokenizer";
  RETURN_IF_ERROR(base::WriteFileAtomically(dir + "/tokenizer_config.json", config.dump(2) + "\n"));
  return base::WriteFileAtomically(dir + "/special_tokens_map.json",
                                   SpecialTokensJson(sp).dump(2) + "\n");
}

}  // namespace loom::text
