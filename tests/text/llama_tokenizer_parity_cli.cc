// The C++ side of //tests/text:llama_tokenizer_parity_test: trains a tokenizer.model in Llama's
// layout (TrainSentencePieceModel, SentencePieceLayout::kLlama) on DIR/cases.json's texts, saves
// it as a legacy and a non-legacy LlamaTokenizer folder (DIR/loom_legacy, DIR/loom_nonlegacy),
// reloads each with LlamaTokenizer::FromPretrained and writes DIR/loom_<mode>.json: per text
// the tokens, the ids (bos added) and the decodes with and without skip_special_tokens.
//   usage: llama_tokenizer_parity_cli DIR
#include <iostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/file_util.h"
#include "base/status_macros.h"
#include "logging/process_logging.h"
#include "nlohmann/json.hpp"
#include "text/llama_tokenizer.h"
#include "text/sentencepiece_trainer.h"

namespace loom::text {
namespace {

using Json = nlohmann::json;

absl::StatusOr<Json> Results(const LlamaTokenizer& tok, const std::vector<std::string>& texts) {
  Json out = Json::array();
  for (const std::string& text : texts) {
    ASSIGN_OR_RETURN(std::vector<std::string> tokens, tok.Tokenize(text));
    EncodeOptions options;
    options.return_token_type_ids = false;
    ASSIGN_OR_RETURN(Encoding enc, tok.Encode(text, options));
    ASSIGN_OR_RETURN(std::string decoded, tok.Decode(enc.input_ids));
    ASSIGN_OR_RETURN(std::string skipped, tok.Decode(enc.input_ids, {.skip_special_tokens = true}));
    out.push_back({{"tokens", tokens}, {"input_ids", enc.input_ids}, {"decoded", decoded},
                   {"decoded_skip", skipped}});
  }
  return out;
}

absl::Status Run(const std::string& dir) {
  ASSIGN_OR_RETURN(std::string cases_text, base::ReadFile(dir + "/cases.json"));
  const std::vector<std::string> texts =
      Json::parse(cases_text)["texts"].get<std::vector<std::string>>();
  std::vector<std::string> training;
  for (const std::string& t : texts) {
    if (!t.empty()) training.push_back(t);
  }
  std::string model, error;
  if (!TrainSentencePieceModel(training, {.vocab_size = 400, .layout = SentencePieceLayout::kLlama},
                               &model, &error)) {
    return absl::InternalError("training: " + error);
  }
  for (bool legacy : {true, false}) {
    const std::string folder = dir + (legacy ? "/loom_legacy" : "/loom_nonlegacy");
    LlamaTokenizerOptions options;
    options.legacy = legacy;
    ASSIGN_OR_RETURN(LlamaTokenizer made, LlamaTokenizer::Create(model, options));
    RETURN_IF_ERROR(made.SavePretrained(folder));
    ASSIGN_OR_RETURN(LlamaTokenizer tok, LlamaTokenizer::FromPretrained(folder));
    ASSIGN_OR_RETURN(Json results, Results(tok, texts));
    RETURN_IF_ERROR(base::WriteFileAtomically(folder + ".json", results.dump(1)));
  }
  return absl::OkStatus();
}

}  // namespace
}  // namespace loom::text

int main(int argc, char** argv) {
  loom::logging::InitProcessLogging(argv[0]);
  if (argc != 2) {
    std::cerr << "usage: llama_tokenizer_parity_cli DIR\n";
    return 2;
  }
  const absl::Status status = loom::text::Run(argv[1]);
  if (!status.ok()) {
    std::cerr << "llama_tokenizer_parity_cli: " << status << "\n";
    return 1;
  }
  return 0;
}
