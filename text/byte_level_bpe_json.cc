// ByteLevelBpeTokenizer's reading of tokenizer.json (and tokenizer_config.json) and its
// SavePretrained: which sections and types it accepts, checked and turned into the state
// byte_level_bpe.cc tokenizes with.
#include <unicode/regex.h>
#include <unicode/unistr.h>

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "base/file_util.h"
#include "base/status_macros.h"
#include "nlohmann/json.hpp"
#include "text/byte_level_bpe.h"
#include "text/byte_level_bpe_internal.h"
#include "text/tokenizer_json.h"
#include "text/unicode.h"

namespace loom::text {
namespace bpe_internal {

// GPT-2's bytes_to_unicode: printable bytes map to themselves, the others to 256 + n.
std::vector<std::string> ByteToChar() {
  std::vector<bool> printable(256, false);
  for (int b = '!'; b <= '~'; ++b) printable[b] = true;
  for (int b = 0xA1; b <= 0xAC; ++b) printable[b] = true;
  for (int b = 0xAE; b <= 0xFF; ++b) printable[b] = true;
  std::vector<std::string> out(256);
  int n = 0;
  for (int b = 0; b < 256; ++b) {
    const char32_t cp = printable[b] ? static_cast<char32_t>(b) : static_cast<char32_t>(256 + n++);
    out[b] = EncodeUtf8(std::u32string(1, cp));
  }
  return out;
}


}  // namespace bpe_internal

namespace {

using Json = nlohmann::json;
using bpe_internal::AddedToken;
using bpe_internal::Stage;

// tokenizers' ByteLevel regex (GPT-2's).
constexpr char kGpt2Pattern[] =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

absl::Status Unsupported(const std::string& source, absl::string_view what) {
  return absl::UnimplementedError(
      absl::StrCat(source, ": ", what, "; loom's byte-level BPE tokenizer does not implement it"));
}


// Oniguruma's \s and \S (Unicode White_Space), which ICU spells as a property.
std::string OnigurumaToIcu(const std::string& pattern) {
  return absl::StrReplaceAll(pattern, {{"\\s", "\\p{White_Space}"}, {"\\S", "\\P{White_Space}"}});
}

std::string TypeOf(const Json& j) {
  auto it = j.find("type");
  return it != j.end() && it->is_string() ? it->get<std::string>() : "(none)";
}

absl::Status ReadModel(const Json& model, const std::string& source,
                       ByteLevelBpeTokenizer::State* s) {
  if (!model.is_object() || TypeOf(model) != "BPE") {
    return Unsupported(source, absl::StrCat("model type \"", TypeOf(model), "\""));
  }
  for (const char* key : {"dropout", "continuing_subword_prefix", "end_of_word_suffix"}) {
    auto it = model.find(key);
    if (it != model.end() && !it->is_null() && !(it->is_string() && it->get<std::string>().empty())) {
      return Unsupported(source, absl::StrCat("model.", key, " = ", it->dump()));
    }
  }
  if (model.value("byte_fallback", false)) return Unsupported(source, "model.byte_fallback true");
  s->ignore_merges = model.value("ignore_merges", false);
  auto vocab = model.find("vocab");
  if (vocab == model.end() || !vocab->is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": model.vocab must be an object"));
  }
  for (auto it = vocab->begin(); it != vocab->end(); ++it) {
    if (!it.value().is_number_integer() || it.value().get<int64_t>() < 0 ||
        it.value().get<int64_t>() > (1 << 24)) {
      return absl::InvalidArgumentError(
          absl::StrCat(source, ": model.vocab[", it.key(), "] must be an id in 0..2^24"));
    }
    s->vocab[it.key()] = it.value().get<int64_t>();
  }
  auto merges = model.find("merges");
  if (merges == model.end() || !merges->is_array()) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": model.merges must be a list"));
  }
  int64_t rank = 0;
  for (const Json& m : *merges) {
    std::pair<std::string, std::string> pair;
    if (m.is_string()) {
      const std::vector<std::string> parts = absl::StrSplit(m.get<std::string>(), ' ');
      if (parts.size() != 2) {
        return absl::InvalidArgumentError(absl::StrCat(source, ": merge ", m.dump(), " is not \"a b\""));
      }
      pair = {parts[0], parts[1]};
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      pair = {m[0].get<std::string>(), m[1].get<std::string>()};
    } else {
      return absl::InvalidArgumentError(absl::StrCat(source, ": merge ", m.dump(), " is not a pair"));
    }
    if (s->vocab.find(pair.first + pair.second) == s->vocab.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          source, ": merge ", m.dump(), " makes a token that is not in model.vocab"));
    }
    s->ranks[std::move(pair)] = rank++;  // a repeated merge keeps its last rank, as tokenizers'

  }
  return absl::OkStatus();
}

absl::StatusOr<Stage> ByteLevelStage(const Json& j) {
  Stage stage;
  stage.byte_level = true;
  stage.add_prefix_space = j.value("add_prefix_space", true);
  if (j.value("use_regex", true)) {
    UErrorCode status = U_ZERO_ERROR;
    stage.regex.reset(icu::RegexPattern::compile(
        icu::UnicodeString::fromUTF8(OnigurumaToIcu(kGpt2Pattern)), 0, status));
    if (U_FAILURE(status)) return absl::InternalError("compiling GPT-2's pattern in ICU");
  }
  return stage;
}

absl::StatusOr<Stage> SplitStage(const Json& j, const std::string& source) {
  auto pattern = j.find("pattern");
  if (pattern == j.end() || !pattern->is_object() || !pattern->contains("Regex") ||
      !(*pattern)["Regex"].is_string()) {
    return Unsupported(source, "pre_tokenizer Split without a \"Regex\" pattern");
  }
  if (j.value("behavior", "") != "Isolated" || j.value("invert", false)) {
    return Unsupported(source, absl::StrCat("pre_tokenizer Split with behavior ",
                                            j.value("behavior", "(none)"),
                                            j.value("invert", false) ? ", inverted" : ""));
  }
  Stage stage;
  UErrorCode status = U_ZERO_ERROR;
  UParseError where;
  stage.regex.reset(icu::RegexPattern::compile(
      icu::UnicodeString::fromUTF8(OnigurumaToIcu((*pattern)["Regex"].get<std::string>())), where,
      status));
  if (U_FAILURE(status)) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": the Split regex does not compile (",
                                                   u_errorName(status), " at offset ",
                                                   where.offset, ")"));
  }
  return stage;
}

absl::Status ReadPreTokenizer(const Json& j, const std::string& source,
                              ByteLevelBpeTokenizer::State* s) {
  const std::string type = TypeOf(j);
  if (type == "ByteLevel") {
    ASSIGN_OR_RETURN(Stage stage, ByteLevelStage(j));
    s->stages.push_back(std::move(stage));
    return absl::OkStatus();
  }
  if (type != "Sequence" || !j.contains("pretokenizers") || !j["pretokenizers"].is_array()) {
    return Unsupported(source, absl::StrCat("pre_tokenizer type \"", type, "\""));
  }
  for (const Json& p : j["pretokenizers"]) {
    const std::string t = TypeOf(p);
    if (t == "Split") {
      ASSIGN_OR_RETURN(Stage stage, SplitStage(p, source));
      s->stages.push_back(std::move(stage));
    } else if (t == "ByteLevel") {
      ASSIGN_OR_RETURN(Stage stage, ByteLevelStage(p));
      s->stages.push_back(std::move(stage));
    } else {
      return Unsupported(source, absl::StrCat("pre_tokenizer Sequence member \"", t, "\""));
    }
  }
  if (s->stages.empty() || !s->stages.back().byte_level) {
    return Unsupported(source, "a pre_tokenizer that does not end with ByteLevel");
  }
  return absl::OkStatus();
}

absl::Status ReadTemplate(const Json& j, const std::string& source,
                          ByteLevelBpeTokenizer::State* s) {
  const Json single = j.value("single", Json::array());
  const Json specials = j.value("special_tokens", Json::object());
  bool seen_sequence = false;
  for (const Json& item : single) {
    if (item.contains("Sequence")) {
      if (item["Sequence"].value("id", "") != "A") {
        return Unsupported(source, "a TemplateProcessing single template with sequence B");
      }
      seen_sequence = true;
      continue;
    }
    const std::string id = item.contains("SpecialToken") ? item["SpecialToken"].value("id", "") : "";
    auto it = specials.find(id);
    if (id.empty() || it == specials.end() || !it->contains("ids") || !(*it)["ids"].is_array()) {
      return Unsupported(source, absl::StrCat("TemplateProcessing item ", item.dump()));
    }
    for (const Json& v : (*it)["ids"]) {
      (seen_sequence ? s->suffix_ids : s->prefix_ids).push_back(v.get<int64_t>());
    }
  }
  if (!seen_sequence) return Unsupported(source, "a TemplateProcessing template without $A");
  return absl::OkStatus();
}

absl::Status ReadPostProcessor(const Json& j, const std::string& source,
                               ByteLevelBpeTokenizer::State* s) {
  if (j.is_null()) return absl::OkStatus();
  const std::string type = TypeOf(j);
  if (type == "ByteLevel") return absl::OkStatus();
  if (type == "TemplateProcessing") return ReadTemplate(j, source, s);
  if (type == "Sequence" && j.contains("processors") && j["processors"].is_array()) {
    for (const Json& p : j["processors"]) RETURN_IF_ERROR(ReadPostProcessor(p, source, s));
    return absl::OkStatus();
  }
  return Unsupported(source, absl::StrCat("post_processor type \"", type, "\""));
}

absl::Status ReadAddedTokens(const Json& j, const std::string& source,
                             ByteLevelBpeTokenizer::State* s) {
  if (j.is_null()) return absl::OkStatus();
  if (!j.is_array()) return absl::InvalidArgumentError(source + ": added_tokens must be a list");
  for (const Json& t : j) {
    if (!t.is_object() || !t.contains("content") || !t["content"].is_string() ||
        !t.contains("id") || !t["id"].is_number_integer()) {
      return absl::InvalidArgumentError(absl::StrCat(source, ": bad added token ", t.dump()));
    }
    if (t["id"].get<int64_t>() < 0 || t["id"].get<int64_t>() > (1 << 24)) {
      return absl::InvalidArgumentError(
          absl::StrCat(source, ": added token ", t["content"].dump(), " has an id outside 0..2^24"));
    }
    if (t.value("single_word", false)) {
      return Unsupported(source, absl::StrCat("added token ", t["content"].dump(), " with single_word"));
    }
    s->added.push_back({t["content"].get<std::string>(), t["id"].get<int64_t>(),
                        t.value("lstrip", false), t.value("rstrip", false),
                        t.value("special", false)});
  }
  std::stable_sort(s->added.begin(), s->added.end(), [](const AddedToken& a, const AddedToken& b) {
    return a.content.size() > b.content.size();
  });
  return absl::OkStatus();
}


}  // namespace

absl::StatusOr<ByteLevelBpeTokenizer> ByteLevelBpeTokenizer::FromTokenizerJson(
    const std::string& text, const std::string& source) {
  // The readers check the shapes they rely on; a value of another JSON type than a field's
  // (nlohmann's type_error) is reported here, whichever field it was.
  try {
    return Parse(text, source);
  } catch (const Json::exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": a field has the wrong JSON type (", e.what(), ")"));
  }
}

absl::StatusOr<ByteLevelBpeTokenizer> ByteLevelBpeTokenizer::Parse(const std::string& text,
                                                                  const std::string& source) {
  const Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": not a JSON object"));
  }
  ByteLevelBpeTokenizer tok;
  State* s = tok.state_.get();
  RETURN_IF_ERROR(ReadModel(j.value("model", Json()), source, s));
  if (auto n = j.find("normalizer"); n != j.end() && !n->is_null()) {
    return Unsupported(source, absl::StrCat("normalizer type \"", TypeOf(*n), "\""));
  }
  RETURN_IF_ERROR(ReadPreTokenizer(j.value("pre_tokenizer", Json::object()), source, s));
  RETURN_IF_ERROR(ReadPostProcessor(j.value("post_processor", Json()), source, s));
  if (auto d = j.find("decoder"); d != j.end() && !d->is_null() && TypeOf(*d) != "ByteLevel") {
    return Unsupported(source, absl::StrCat("decoder type \"", TypeOf(*d), "\""));
  }
  RETURN_IF_ERROR(ReadAddedTokens(j.value("added_tokens", Json()), source, s));
  int64_t size = 0;
  for (const auto& [token, id] : s->vocab) size = std::max(size, id + 1);
  for (const AddedToken& t : s->added) size = std::max(size, t.id + 1);
  s->id_to_token.assign(static_cast<size_t>(size), "");
  for (const auto& [token, id] : s->vocab) s->id_to_token[id] = token;
  for (const AddedToken& t : s->added) s->id_to_token[t.id] = t.content;
  for (const std::vector<int64_t>* ids : {&s->prefix_ids, &s->suffix_ids}) {
    for (int64_t id : *ids) {
      if (id < 0 || id >= size) {
        return absl::InvalidArgumentError(absl::StrCat(
            source, ": the post_processor's template names the id ", id,
            ", outside the vocabulary (size ", size, ")"));
      }
    }
  }
  for (int b = 0; b < 256; ++b) s->char_to_byte[s->byte_to_char[b]] = static_cast<uint8_t>(b);
  tok.json_text_ = text;
  return tok;
}

absl::StatusOr<ByteLevelBpeTokenizer> ByteLevelBpeTokenizer::FromPretrained(const std::string& dir) {
  const std::string path = dir + "/tokenizer.json";
  if (!RegularFileExists(path)) {
    return absl::NotFoundError(absl::StrCat(path, " not found"));
  }
  ASSIGN_OR_RETURN(std::string text, base::ReadFile(path));
  ASSIGN_OR_RETURN(ByteLevelBpeTokenizer tok, FromTokenizerJson(text, path));
  const std::string config_path = dir + "/tokenizer_config.json";
  if (RegularFileExists(config_path)) {
    ASSIGN_OR_RETURN(Json config, ReadJsonObject(config_path));
    RETURN_IF_ERROR(ReadModelMaxLength(config, config_path, &tok.model_max_length_));
    if (auto it = config.find("pad_token"); it != config.end() && !it->is_null()) {
      std::string pad;
      RETURN_IF_ERROR(ReadToken(config, config_path, "pad_token", &pad));
      tok.pad_id_ = tok.TokenToId(pad);
      if (!tok.pad_id_.has_value()) {
        return absl::InvalidArgumentError(
            absl::StrCat(config_path, ": pad_token \"", pad, "\" is not in the vocabulary"));
      }
    }
    RETURN_IF_ERROR(ReadBool(config, config_path, "clean_up_tokenization_spaces",
                             &tok.state_->clean_up));
    tok.config_text_ = config.dump(2) + "\n";
  }
  return tok;
}

absl::Status ByteLevelBpeTokenizer::SavePretrained(const std::string& dir) const {
  RETURN_IF_ERROR(base::MakeDirs(dir));
  RETURN_IF_ERROR(base::WriteFileAtomically(dir + "/tokenizer.json", json_text_));
  if (config_text_.empty()) return absl::OkStatus();
  return base::WriteFileAtomically(dir + "/tokenizer_config.json", config_text_);
}

}  // namespace loom::text
