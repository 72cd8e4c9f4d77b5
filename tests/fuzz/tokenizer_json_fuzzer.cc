// libFuzzer target for the tokenizer.json reader and the byte-level BPE tokenizer
// (text/byte_level_bpe.h): any bytes as a tokenizer.json must give an error or a tokenizer
// that tokenizes a fixed text (and the input itself, as text) into ids below size(), or fails
// with a Status — never crashes, hangs or reads out of bounds — and decodes them back.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "text/byte_level_bpe.h"

namespace {

void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "invariant violated: %s\n", what);
    std::abort();
  }
}

void Exercise(const loom::text::ByteLevelBpeTokenizer& tok, const std::string& text) {
  absl::StatusOr<loom::text::Encoding> enc = tok.Encode(text, {});
  if (!enc.ok()) return;
  for (int64_t id : enc->input_ids) Check(id >= 0 && id < tok.size(), "ids within the vocabulary");
  absl::StatusOr<std::string> back = tok.Decode(enc->input_ids);
  Check(back.ok(), "ids Encode gave decode");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string json(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<loom::text::ByteLevelBpeTokenizer> tok =
      loom::text::ByteLevelBpeTokenizer::FromTokenizerJson(json, "fuzz.json");
  if (!tok.ok()) return 0;
  Exercise(*tok, "Hello world, it's 2026! \xE6\x97\xA5\xE6\x9C\xAC  \n\tend");
  if (size < 512) Exercise(*tok, json);
  return 0;
}
