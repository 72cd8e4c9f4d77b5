// The embedded run_clm demo's data and model: a generated English corpus with learnable
// structure (templated sentences, counting runs, small sums), a SentencePiece tokenizer in
// Llama's layout trained on it, and a tiny Llama config sized to it.
//
// Contract:
//   - MakeSyntheticCorpus(lines, seed): `lines` sentences, the same for the same arguments on
//     every machine (a std::mt19937_64 stream reduced by modulo, not a distribution whose
//     algorithm the standard library may change).
//   - WriteCorpus(path, lines): the lines joined with "\n" plus a final "\n", atomically.
//   - BuiltinTokenizer(corpus): a LlamaTokenizer over TrainSentencePieceModel(kLlama, vocab
//     512) of `corpus`; InternalError with SentencePiece's message when training fails.
//   - BuiltinLlamaConfig(vocab_size): hidden 128, 2 layers, 4 heads with 2 key/value heads,
//     intermediate 344, 256 positions, tied embeddings, bos 1 / eos 2 (the tokenizer's).
//
// Example:
//   const std::vector<std::string> train = MakeSyntheticCorpus(2000, 1);
//   ASSIGN_OR_RETURN(text::LlamaTokenizer tok, BuiltinTokenizer(train));
#ifndef LOOM_EXAMPLES_CLM_SYNTHETIC_CORPUS_H_
#define LOOM_EXAMPLES_CLM_SYNTHETIC_CORPUS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "models/llama/llama_config.h"
#include "text/llama_tokenizer.h"

namespace loom::examples::clm {

std::vector<std::string> MakeSyntheticCorpus(int lines, uint64_t seed);
absl::Status WriteCorpus(const std::string& path, const std::vector<std::string>& lines);
absl::StatusOr<text::LlamaTokenizer> BuiltinTokenizer(const std::vector<std::string>& corpus);
models::llama::LlamaConfig BuiltinLlamaConfig(int64_t vocab_size);

}  // namespace loom::examples::clm

#endif  // LOOM_EXAMPLES_CLM_SYNTHETIC_CORPUS_H_
