// libFuzzer target for BERT's vocab.txt (text/vocab.h Vocab::Parse) and the WordPiece
// BertTokenizer over the parsed vocabulary (text/bert_tokenizer.h). Any bytes as a vocab.txt
// must give an error or a vocabulary that
//   * serializes (when its ids have no gaps) to text that parses back to the same mapping;
//   * makes a BertTokenizer (when it holds the special tokens) that tokenizes a fixed text and
//     the first lines of the file itself into ids inside the vocabulary, and encodes pairs with
//     truncation and padding to the requested length.
// Any crash, sanitizer report, leak or uncaught exception is a finding.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tests/fuzz/fuzz_check.h"
#include "text/bert_tokenizer.h"
#include "text/vocab.h"

namespace {

using fuzz::Check;
using loom::text::BertTokenizer;
using loom::text::Vocab;

void CheckIds(const BertTokenizer& tok, const std::vector<int64_t>& ids) {
  for (int64_t id : ids) {
    Check(id >= 0 && id < tok.vocab().id_limit(), "ids are inside the vocabulary");
  }
}

void Exercise(const BertTokenizer& tok, const std::string& text, const std::string& pair) {
  absl::StatusOr<std::vector<std::string>> tokens = tok.Tokenize(text);
  if (tokens.ok()) CheckIds(tok, tok.ConvertTokensToIds(*tokens));
  loom::text::EncodeOptions options;
  options.max_length = 16;
  options.truncation = loom::text::Truncation::kLongestFirst;
  options.padding = loom::text::Padding::kMaxLength;
  absl::StatusOr<loom::text::Encoding> enc = tok.Encode(text, pair, options);
  if (!enc.ok()) return;
  CheckIds(tok, enc->input_ids);
  Check(enc->input_ids.size() == 16, "truncation and padding give max_length ids");
  Check(enc->attention_mask.size() == 16 && enc->token_type_ids.size() == 16,
        "masks are as long as the ids");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<Vocab> vocab = Vocab::Parse(text, "vocab.txt");
  if (!vocab.ok()) {
    Check(!vocab.status().message().empty(), "errors say what is wrong");
    return 0;
  }
  Check(vocab->size() <= vocab->id_limit(), "distinct tokens fit below id_limit");
  absl::StatusOr<std::string> serialized = vocab->Serialize();
  if (serialized.ok()) {
    absl::StatusOr<Vocab> back = Vocab::Parse(*serialized, "serialized");
    Check(back.ok(), "a serialized vocabulary parses");
    Check(back->size() == vocab->size() && back->id_limit() == vocab->id_limit(),
          "a serialized vocabulary has the same size");
    for (int64_t id = 0; id < vocab->id_limit(); ++id) {
      Check(back->IdToToken(id) == vocab->IdToToken(id), "a serialized vocabulary keeps each id");
    }
  }
  loom::text::BertTokenizerOptions options;
  options.do_lower_case = (size % 2) == 0;
  absl::StatusOr<BertTokenizer> tok = BertTokenizer::Create(*std::move(vocab), options);
  if (!tok.ok()) return 0;
  Exercise(*tok, "[CLS] Hello, World! unaffable caf\xC3\xA9 \xE6\x97\xA5\xE6\x9C\xAC [MASK]",
           "the cat sat");
  Exercise(*tok, text.substr(0, 256), text.size() > 256 ? text.substr(256, 256) : "");
  return 0;
}
