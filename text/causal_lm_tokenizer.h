// CausalLmTokenizer: the tokenizer of a causal LM's folder, as transformers' AutoTokenizer picks
// it for the model families loom has: a SentencePiece tokenizer.model (Llama 1/2: the slow
// LlamaTokenizer) when the folder has one, else a byte-level BPE tokenizer.json (GPT-2,
// Llama 3). run_clm tokenizes through it.
//
// Contract:
//   - FromPretrained(dir): LlamaTokenizer::FromPretrained when dir/tokenizer.model exists, else
//     ByteLevelBpeTokenizer::FromPretrained when dir/tokenizer.json exists (its errors name an
//     unsupported type), else NotFound naming both files.
//   - Encode / size / model_max_length / SavePretrained forward to the tokenizer held.
//
// Example:
//   ASSIGN_OR_RETURN(text::CausalLmTokenizer tok, text::CausalLmTokenizer::FromPretrained(dir));
//   ASSIGN_OR_RETURN(text::Encoding enc, tok.Encode("Hello", {}));
#ifndef LOOM_TEXT_CAUSAL_LM_TOKENIZER_H_
#define LOOM_TEXT_CAUSAL_LM_TOKENIZER_H_

#include <cstdint>
#include <optional>
#include <string>
#include <variant>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "text/byte_level_bpe.h"
#include "text/encoding.h"
#include "text/llama_tokenizer.h"

namespace loom::text {

class CausalLmTokenizer {
 public:
  explicit CausalLmTokenizer(LlamaTokenizer tokenizer) : impl_(std::move(tokenizer)) {}
  explicit CausalLmTokenizer(ByteLevelBpeTokenizer tokenizer) : impl_(std::move(tokenizer)) {}
  static absl::StatusOr<CausalLmTokenizer> FromPretrained(const std::string& dir);

  absl::StatusOr<Encoding> Encode(absl::string_view text, const EncodeOptions& options) const;
  int64_t size() const;
  std::optional<int64_t> model_max_length() const;
  absl::Status SavePretrained(const std::string& dir) const;

 private:
  std::variant<LlamaTokenizer, ByteLevelBpeTokenizer> impl_;
};

}  // namespace loom::text

#endif  // LOOM_TEXT_CAUSAL_LM_TOKENIZER_H_
