// The C++ side of //tests/text:sacrebleu_parity_test: every corpus of DIR/cases.json (written
// by sacrebleu_reference.py) through loom::text::CorpusBleu and Tokenize13a, into
// DIR/loom.json in the reference's layout.
//   usage: sacrebleu_parity_cli DIR
#include <iostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/file_util.h"
#include "base/status_macros.h"
#include "logging/process_logging.h"
#include "nlohmann/json.hpp"
#include "text/sacrebleu.h"

namespace loom::text {
namespace {

using Json = nlohmann::json;

absl::StatusOr<Json> RunCase(const Json& c) {
  const auto hyps = c["hyps"].get<std::vector<std::string>>();
  const auto streams = c["refs"].get<std::vector<std::vector<std::string>>>();
  std::vector<std::vector<std::string>> refs(hyps.size());  // per hypothesis
  for (const auto& stream : streams) {
    for (size_t i = 0; i < hyps.size(); ++i) refs[i].push_back(stream.at(i));
  }
  ASSIGN_OR_RETURN(BleuScore bleu, CorpusBleu(hyps, refs));
  Json tokenized = Json::array();
  std::vector<std::string> lines = hyps;
  for (const auto& stream : streams) lines.insert(lines.end(), stream.begin(), stream.end());
  for (std::string line : lines) {
    while (!line.empty() && (line.back() == ' ' || line.back() == '\t' || line.back() == '\n')) {
      line.pop_back();
    }
    ASSIGN_OR_RETURN(std::string t, Tokenize13a(line));
    tokenized.push_back(t);
  }
  return Json{{"score", bleu.score},     {"counts", bleu.correct},   {"totals", bleu.total},
              {"sys_len", bleu.sys_len}, {"ref_len", bleu.ref_len}, {"tokenized", tokenized}};
}

absl::Status Run(const std::string& dir) {
  ASSIGN_OR_RETURN(std::string text, base::ReadFile(dir + "/cases.json"));
  const Json cases = Json::parse(text);
  Json out = Json::array();
  for (size_t i = 0; i < cases.size(); ++i) {
    ASSIGN_OR_RETURN(Json r, RunCase(cases[i]), absl::StrCat("corpus ", i));
    out.push_back(std::move(r));
  }
  return base::WriteFileAtomically(dir + "/loom.json", out.dump());
}

}  // namespace
}  // namespace loom::text

int main(int argc, char** argv) {
  loom::logging::InitProcessLogging(argv[0]);
  if (argc != 2) {
    std::cerr << "usage: sacrebleu_parity_cli DIR\n";
    return 2;
  }
  if (absl::Status s = loom::text::Run(argv[1]); !s.ok()) {
    std::cerr << "sacrebleu_parity_cli: " << s << "\n";
    return 1;
  }
  return 0;
}
