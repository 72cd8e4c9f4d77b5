// TrainSentencePieceModel: trains a SentencePiece model with Google's trainer (Debian's
// libsentencepiece 0.1.97, libsentencepiece_train — the trainer python3-sentencepiece's
// SentencePieceTrainer.train wraps), in memory, with T5's id layout. The embedded run_translation
// demo builds its tokenizer this way from the generated corpus. The trainer runs inside
// libloom_sentencepiece.so (sentencepiece_backend.h says why).
//
// Contract:
//   - TrainSentencePieceModel(sentences, options, &model, &error) trains a model on `sentences`
//     (one per element) in options.layout (T5's or Llama's, below), character_coverage 1.0,
//     one thread and unshuffled input,
//     so the same sentences and options give the same model bytes on every run. vocab_size is
//     a soft limit (hard_vocab_limit false): a corpus with fewer pieces gives a smaller model.
//     On success *model holds the spiece.model bytes; false with SentencePiece's message in
//     *error otherwise (an empty corpus, a vocab_size below the special pieces, the shim not
//     found, ...).
//
// Example:
//   std::string bytes, error;
//   if (!TrainSentencePieceModel(corpus, {.vocab_size = 160}, &bytes, &error)) { ... }
//   ASSIGN_OR_RETURN(T5Tokenizer tokenizer, T5Tokenizer::Create(bytes));
#ifndef LOOM_TEXT_SENTENCEPIECE_TRAINER_H_
#define LOOM_TEXT_SENTENCEPIECE_TRAINER_H_

#include <string>
#include <vector>

namespace loom::text {

// The id layout and algorithm of the model trained.
enum class SentencePieceLayout {
  // T5's spiece.model: unigram, pad 0, eos 1, unk 2, no bos, nmt_nfkc normalisation.
  kT5,
  // Llama 1/2's tokenizer.model: BPE, unk 0, bos 1, eos 2, no pad, byte fallback (<0x00>..
  // <0xFF> pieces), digits split, identity normalisation, whitespace kept as written.
  kLlama,
};

struct SentencePieceTrainOptions {
  int vocab_size = 8000;
  SentencePieceLayout layout = SentencePieceLayout::kT5;
};

bool TrainSentencePieceModel(const std::vector<std::string>& sentences,
                             const SentencePieceTrainOptions& options, std::string* model,
                             std::string* error);

}  // namespace loom::text

#endif  // LOOM_TEXT_SENTENCEPIECE_TRAINER_H_
