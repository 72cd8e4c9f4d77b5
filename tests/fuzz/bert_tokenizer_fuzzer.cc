// libFuzzer target for BertTokenizer::FromPretrained (text/bert_tokenizer.h): the tokenizer
// folder files users hand to run_glue. The input is cut at "\n#next_file\n" into vocab.txt,
// tokenizer_config.json, special_tokens_map.json and tokenizer.json (a missing or empty part: no
// such file), written to a scratch folder that is loaded with use_fast true and false. A loaded
// tokenizer must tokenize and encode a fixed text into ids inside its vocabulary, and one that
// saves (SavePretrained) must load back from the saved folder and tokenize that text the same.
// Any crash, sanitizer report, leak or uncaught exception is a finding.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tests/fuzz/fuzz_check.h"
#include "text/bert_tokenizer.h"

namespace {

using fuzz::Check;
using loom::text::BertTokenizer;

constexpr const char* kFiles[] = {"vocab.txt", "tokenizer_config.json", "special_tokens_map.json",
                                  "tokenizer.json"};
constexpr const char* kText = "[CLS] Hello, World! unaffable CAF\xC3\x89 \xE6\x97\xA5 [MASK] s";

void CheckIds(const BertTokenizer& tok, const std::vector<int64_t>& ids) {
  for (int64_t id : ids) {
    Check(id >= 0 && id < tok.vocab().id_limit(), "ids are inside the vocabulary");
  }
}

void Exercise(const BertTokenizer& tok) {
  absl::StatusOr<std::vector<std::string>> tokens = tok.Tokenize(kText);
  if (tokens.ok()) CheckIds(tok, tok.ConvertTokensToIds(*tokens));
  loom::text::EncodeOptions options;
  options.max_length = 12;
  options.truncation = loom::text::Truncation::kOnlyFirst;
  options.padding = loom::text::Padding::kMaxLength;
  absl::StatusOr<loom::text::Encoding> enc = tok.Encode(kText, "the cat", options);
  if (enc.ok()) CheckIds(tok, enc->input_ids);
  const std::string saved = fuzz::ScratchFile("saved");
  if (!tok.SavePretrained(saved).ok()) return;
  absl::StatusOr<BertTokenizer> back = BertTokenizer::FromPretrained(saved, /*use_fast=*/false);
  Check(back.ok(), "a saved tokenizer loads back");
  absl::StatusOr<std::vector<std::string>> again = back->Tokenize(kText);
  Check(again.ok() == tokens.ok(), "a saved tokenizer tokenizes as the original");
  if (tokens.ok()) Check(*again == *tokens, "a saved tokenizer gives the same tokens");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  const std::vector<std::string> parts = fuzz::SplitParts(input, "\n#next_file\n");
  static const std::string dir = fuzz::ScratchFile("tokenizer");
  mkdir(dir.c_str(), 0700);
  for (size_t i = 0; i < 4; ++i) {
    const std::string path = dir + "/" + kFiles[i];
    if (i < parts.size() && !parts[i].empty()) {
      fuzz::WriteFileOrDie(path, parts[i]);
    } else {
      unlink(path.c_str());
    }
  }
  for (bool use_fast : {true, false}) {
    absl::StatusOr<BertTokenizer> tok = BertTokenizer::FromPretrained(dir, use_fast);
    if (tok.ok()) {
      Exercise(*tok);
    } else {
      Check(!tok.status().message().empty(), "errors say what is wrong");
    }
  }
  return 0;
}
