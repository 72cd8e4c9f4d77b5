#include "text/causal_lm_tokenizer.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "text/tokenizer_json.h"

namespace loom::text {

absl::StatusOr<CausalLmTokenizer> CausalLmTokenizer::FromPretrained(const std::string& dir) {
  if (RegularFileExists(dir + "/tokenizer.model")) {
    ASSIGN_OR_RETURN(LlamaTokenizer tok, LlamaTokenizer::FromPretrained(dir));
    return CausalLmTokenizer(std::move(tok));
  }
  if (RegularFileExists(dir + "/tokenizer.json")) {
    ASSIGN_OR_RETURN(ByteLevelBpeTokenizer tok, ByteLevelBpeTokenizer::FromPretrained(dir));
    return CausalLmTokenizer(std::move(tok));
  }
  return absl::NotFoundError(absl::StrCat(
      dir, " has neither tokenizer.model (a SentencePiece tokenizer, Llama 1/2) nor "
           "tokenizer.json (a byte-level BPE tokenizer, GPT-2 / Llama 3)"));
}

absl::StatusOr<Encoding> CausalLmTokenizer::Encode(absl::string_view text,
                                                   const EncodeOptions& options) const {
  return std::visit([&](const auto& tok) { return tok.Encode(text, options); }, impl_);
}

int64_t CausalLmTokenizer::size() const {
  return std::visit([](const auto& tok) { return tok.size(); }, impl_);
}

std::optional<int64_t> CausalLmTokenizer::model_max_length() const {
  if (const auto* llama = std::get_if<LlamaTokenizer>(&impl_)) {
    return llama->options().model_max_length;
  }
  return std::get<ByteLevelBpeTokenizer>(impl_).model_max_length();
}

absl::Status CausalLmTokenizer::SavePretrained(const std::string& dir) const {
  return std::visit([&](const auto& tok) { return tok.SavePretrained(dir); }, impl_);
}

}  // namespace loom::text
