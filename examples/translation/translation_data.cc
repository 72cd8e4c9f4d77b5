#include "examples/translation/translation_data.h"

#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "base/file_util.h"
#include "base/status_macros.h"
#include "nlohmann/json.hpp"

namespace loom::examples::translation {
namespace {

using Json = nlohmann::json;

absl::Status RecordError(const std::string& where, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(where, ": ", what));
}

// One record's pair; `where` is "FILE:LINE" (or "FILE record N") for errors.
absl::StatusOr<TranslationPair> ReadRecord(const Json& record, const std::string& where,
                                           const std::string& source_lang,
                                           const std::string& target_lang) {
  if (!record.is_object()) return RecordError(where, "expected a JSON object per line");
  auto t = record.find("translation");
  if (t == record.end() || !t->is_object()) {
    return RecordError(where, absl::StrCat("no \"translation\" object; run_translation reads "
                                           "{\"translation\": {\"", source_lang, "\": ..., \"",
                                           target_lang, "\": ...}} records"));
  }
  TranslationPair pair;
  for (const auto& [lang, flag, out] :
       {std::tuple{source_lang, "--source_lang", &pair.source},
        std::tuple{target_lang, "--target_lang", &pair.target}}) {
    auto text = t->find(lang);
    if (text == t->end()) {
      std::vector<std::string> have;
      for (auto it = t->begin(); it != t->end(); ++it) have.push_back(it.key());
      return RecordError(where, absl::StrCat("\"translation\" has no \"", lang, "\" (", flag,
                                             "); it has: ", absl::StrJoin(have, ", ")));
    }
    if (!text->is_string()) {
      return RecordError(where, absl::StrCat("translation \"", lang, "\" must be a string, got ",
                                             text->dump()));
    }
    *out = text->get<std::string>();
  }
  return pair;
}

}  // namespace

absl::StatusOr<std::vector<TranslationPair>> ReadTranslationFile(const std::string& path,
                                                                 const std::string& flag,
                                                                 const std::string& source_lang,
                                                                 const std::string& target_lang) {
  if (!absl::EndsWith(path, ".json") && !absl::EndsWith(path, ".jsonl")) {
    return absl::InvalidArgumentError(absl::StrCat(
        "`", flag.substr(2), "` should be a json file (.json or .jsonl): ", path));
  }
  ASSIGN_OR_RETURN(std::string text, base::ReadFile(path), flag);
  std::vector<TranslationPair> pairs;
  if (absl::StartsWith(absl::StripLeadingAsciiWhitespace(text), "[")) {
    const Json all = Json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (!all.is_array()) return RecordError(path, "not a valid JSON array");
    for (size_t i = 0; i < all.size(); ++i) {
      ASSIGN_OR_RETURN(TranslationPair p, ReadRecord(all[i], absl::StrCat(path, " record ", i + 1),
                                                     source_lang, target_lang));
      pairs.push_back(std::move(p));
    }
    return pairs;
  }
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    if (absl::StripAsciiWhitespace(line).empty()) continue;
    const std::string where = absl::StrCat(path, ":", line_number);
    const Json record = Json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (record.is_discarded()) return RecordError(where, "not valid JSON");
    ASSIGN_OR_RETURN(TranslationPair p, ReadRecord(record, where, source_lang, target_lang));
    pairs.push_back(std::move(p));
  }
  return pairs;
}

}  // namespace loom::examples::translation
