// The C++ side of //tests/text:tokenizer_parity_test: runs every case of cases.json (written
// by tokenizer_reference.py) through loom::text::BertTokenizer and writes actual.json in the
// reference's layout; tokenizer_reference.py compares the two.
//   usage: tokenizer_parity_cli DIR   (reads DIR/cases.json, writes DIR/actual.json)
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "base/file_util.h"
#include "base/status_macros.h"
#include "logging/process_logging.h"
#include "nlohmann/json.hpp"
#include "text/bert_tokenizer.h"

namespace loom::text {
namespace {

using Json = nlohmann::json;

Json EncodingJson(const Encoding& enc) {
  return {{"input_ids", enc.input_ids},
          {"token_type_ids", enc.token_type_ids},
          {"attention_mask", enc.attention_mask}};
}

absl::StatusOr<EncodeOptions> ParseOptions(const Json& j) {
  EncodeOptions opts;
  if (!j["max_length"].is_null()) opts.max_length = j["max_length"].get<int64_t>();
  ASSIGN_OR_RETURN(opts.truncation, ParseTruncation(j["truncation"].get<std::string>()));
  ASSIGN_OR_RETURN(opts.padding, ParsePadding(j["padding"].get<std::string>()));
  opts.add_special_tokens = j["add_special_tokens"].get<bool>();
  return opts;
}

// A case's result; a tokenizer error becomes {"error": true} like the reference's
// CannotTruncate, and the error text goes to stderr for the log.
absl::StatusOr<Json> RunCase(const Json& c, const BertTokenizer& tok) {
  const std::string kind = c["kind"].get<std::string>();
  auto error = [](const absl::Status& s) {
    std::cerr << "tokenizer error (expected when the reference says error): " << s << "\n";
    return Json{{"error", true}};
  };
  if (kind == "tokenize") {
    absl::StatusOr<std::vector<std::string>> tokens = tok.Tokenize(c["text"].get<std::string>());
    if (!tokens.ok()) return error(tokens.status());
    return Json{{"tokens", *tokens}};
  }
  ASSIGN_OR_RETURN(EncodeOptions opts, ParseOptions(c["options"]));
  if (kind == "encode") {
    std::optional<std::string> pair;
    if (c.contains("pair") && !c["pair"].is_null()) pair = c["pair"].get<std::string>();
    absl::StatusOr<Encoding> enc =
        tok.Encode(c["text"].get<std::string>(),
                   pair.has_value() ? std::optional<absl::string_view>(*pair) : std::nullopt, opts);
    if (!enc.ok()) return error(enc.status());
    return EncodingJson(*enc);
  }
  if (kind != "batch") return absl::InvalidArgumentError("unknown case kind " + kind);
  const auto texts = c["texts"].get<std::vector<std::string>>();
  std::optional<std::vector<std::string>> pairs;
  if (c.contains("pairs")) pairs = c["pairs"].get<std::vector<std::string>>();
  absl::StatusOr<std::vector<Encoding>> batch =
      tok.EncodeBatch(texts, pairs.has_value() ? &*pairs : nullptr, opts);
  if (!batch.ok()) return error(batch.status());
  Json out = Json::array();
  for (const Encoding& enc : *batch) out.push_back(EncodingJson(enc));
  return Json{{"batch", out}};
}

absl::Status Run(const std::string& dir) {
  ASSIGN_OR_RETURN(std::string text, base::ReadFile(dir + "/cases.json"));
  const Json cases = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (cases.is_discarded()) return absl::InvalidArgumentError(dir + "/cases.json is not JSON");
  std::vector<BertTokenizer> tokenizers;
  for (const Json& folder : cases["configs"]) {
    ASSIGN_OR_RETURN(BertTokenizer tok,
                     BertTokenizer::FromPretrained(folder.get<std::string>(), /*use_fast=*/false));
    tokenizers.push_back(std::move(tok));
  }
  Json results = Json::array();
  int index = 0;
  for (const Json& c : cases["cases"]) {
    ASSIGN_OR_RETURN(Json result, RunCase(c, tokenizers.at(c["config"].get<size_t>())),
                     absl::StrCat("case ", index));
    results.push_back(std::move(result));
    ++index;
  }
  return base::WriteFileAtomically(dir + "/actual.json", Json{{"results", results}}.dump());
}

}  // namespace
}  // namespace loom::text

int main(int argc, char** argv) {
  loom::logging::InitProcessLogging(argv[0]);
  if (argc != 2) {
    std::cerr << "usage: tokenizer_parity_cli DIR\n";
    return 2;
  }
  absl::Status status = loom::text::Run(argv[1]);
  if (!status.ok()) {
    std::cerr << "tokenizer_parity_cli: " << status << "\n";
    return 1;
  }
  return 0;
}
