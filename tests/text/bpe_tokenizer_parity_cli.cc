// The C++ side of //tests/text:bpe_tokenizer_parity_test: loads DIR/<layout>/ (tokenizer.json +
// tokenizer_config.json, written by bpe_tokenizer_reference.py with HF `tokenizers`) with
// loom::text::ByteLevelBpeTokenizer::FromPretrained for the layouts gpt2 and llama3, and writes
// DIR/loom_<layout>.json: per text of DIR/cases.json the tokens (without special tokens), the
// ids (with them) and the decodes with and without skip_special_tokens.
//   usage: bpe_tokenizer_parity_cli DIR
#include <iostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/file_util.h"
#include "base/status_macros.h"
#include "logging/process_logging.h"
#include "nlohmann/json.hpp"
#include "text/byte_level_bpe.h"

namespace loom::text {
namespace {

using Json = nlohmann::json;

absl::StatusOr<Json> Results(const ByteLevelBpeTokenizer& tok,
                             const std::vector<std::string>& texts) {
  Json out = Json::array();
  for (const std::string& text : texts) {
    ASSIGN_OR_RETURN(std::vector<std::string> tokens, tok.Tokenize(text));
    EncodeOptions options;
    options.return_token_type_ids = false;
    ASSIGN_OR_RETURN(Encoding enc, tok.Encode(text, options));
    ASSIGN_OR_RETURN(std::string decoded, tok.Decode(enc.input_ids, false));
    ASSIGN_OR_RETURN(std::string skipped, tok.Decode(enc.input_ids, true));
    out.push_back({{"tokens", tokens}, {"input_ids", enc.input_ids}, {"decoded", decoded},
                   {"decoded_skip", skipped}});
  }
  return out;
}

absl::Status Run(const std::string& dir) {
  ASSIGN_OR_RETURN(std::string cases, base::ReadFile(dir + "/cases.json"));
  const std::vector<std::string> texts = Json::parse(cases)["texts"].get<std::vector<std::string>>();
  for (const char* layout : {"gpt2", "llama3"}) {
    ASSIGN_OR_RETURN(ByteLevelBpeTokenizer tok,
                     ByteLevelBpeTokenizer::FromPretrained(dir + "/" + layout));
    ASSIGN_OR_RETURN(Json results, Results(tok, texts));
    RETURN_IF_ERROR(base::WriteFileAtomically(dir + "/loom_" + layout + ".json", results.dump(1)));
  }
  return absl::OkStatus();
}

}  // namespace
}  // namespace loom::text

int main(int argc, char** argv) {
  loom::logging::InitProcessLogging(argv[0]);
  if (argc != 2) {
    std::cerr << "usage: bpe_tokenizer_parity_cli DIR\n";
    return 2;
  }
  const absl::Status status = loom::text::Run(argv[1]);
  if (!status.ok()) {
    std::cerr << "bpe_tokenizer_parity_cli: " << status << "\n";
    return 1;
  }
  return 0;
}
