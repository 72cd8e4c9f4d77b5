// The C++ side of //tests/text:t5_tokenizer_parity_test: loads HF's saved folder
// DIR/hf_folder with loom::text::T5Tokenizer::FromPretrained, runs every text and id list of
// DIR/cases.json (written by t5_tokenizer_reference.py) through it, writes DIR/loom.json in the
// reference's layout, and saves the tokenizer to DIR/loom_folder for HF to load.
//   usage: t5_tokenizer_parity_cli DIR
#include <iostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "base/file_util.h"
#include "base/status_macros.h"
#include "logging/process_logging.h"
#include "nlohmann/json.hpp"
#include "text/t5_tokenizer.h"

namespace loom::text {
namespace {

using Json = nlohmann::json;

absl::StatusOr<Json> Decodes(const T5Tokenizer& tok, const std::vector<int64_t>& ids) {
  Json out = Json::object();
  for (bool skip : {false, true}) {
    for (bool clean : {false, true}) {
      DecodeOptions options;
      options.skip_special_tokens = skip;
      options.clean_up_tokenization_spaces = clean;
      ASSIGN_OR_RETURN(std::string text, tok.Decode(ids, options));
      out[absl::StrCat("skip=", skip ? "True" : "False", ",clean=", clean ? "True" : "False")] =
          text;
    }
  }
  return out;
}

absl::StatusOr<std::vector<int64_t>> Ids(const T5Tokenizer& tok, const std::string& text,
                                         EncodeOptions options) {
  options.return_token_type_ids = false;
  ASSIGN_OR_RETURN(Encoding enc, tok.Encode(text, options));
  return enc.input_ids;
}

absl::StatusOr<Json> EncodeCase(const T5Tokenizer& tok, const std::string& text) {
  ASSIGN_OR_RETURN(std::vector<std::string> tokens, tok.Tokenize(text));
  ASSIGN_OR_RETURN(std::vector<int64_t> ids, Ids(tok, text, {}));
  EncodeOptions truncated;
  truncated.max_length = 8;
  truncated.truncation = Truncation::kLongestFirst;
  EncodeOptions no_special;
  no_special.add_special_tokens = false;
  Json out = {{"tokens", tokens}, {"input_ids", ids}};
  ASSIGN_OR_RETURN(out["truncated"], Ids(tok, text, truncated));
  ASSIGN_OR_RETURN(out["no_special"], Ids(tok, text, no_special));
  ASSIGN_OR_RETURN(out["decoded"], Decodes(tok, ids));
  return out;
}

absl::Status Run(const std::string& dir) {
  ASSIGN_OR_RETURN(T5Tokenizer tok, T5Tokenizer::FromPretrained(dir + "/hf_folder"));
  ASSIGN_OR_RETURN(std::string cases_text, base::ReadFile(dir + "/cases.json"));
  const Json cases = Json::parse(cases_text);
  Json result = {{"encode", Json::array()}, {"decode", Json::array()}};
  for (const Json& text : cases["texts"]) {
    ASSIGN_OR_RETURN(Json entry, EncodeCase(tok, text.get<std::string>()),
                     "text " + text.dump());
    result["encode"].push_back(std::move(entry));
  }
  for (const Json& ids : cases["id_lists"]) {
    ASSIGN_OR_RETURN(Json entry, Decodes(tok, ids.get<std::vector<int64_t>>()));
    result["decode"].push_back(std::move(entry));
  }
  RETURN_IF_ERROR(base::WriteFileAtomically(dir + "/loom.json", result.dump()));
  return tok.SavePretrained(dir + "/loom_folder");
}

}  // namespace
}  // namespace loom::text

int main(int argc, char** argv) {
  loom::logging::InitProcessLogging(argv[0]);
  if (argc != 2) {
    std::cerr << "usage: t5_tokenizer_parity_cli DIR\n";
    return 2;
  }
  const absl::Status status = loom::text::Run(argv[1]);
  if (!status.ok()) {
    std::cerr << "t5_tokenizer_parity_cli: " << status << "\n";
    return 1;
  }
  return 0;
}
