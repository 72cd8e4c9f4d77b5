// The embedded demo of run_translation: what `./bazelw run //examples:run_translation` uses when
// neither a model nor data is given, so loom shows T5 training and generation with nothing
// downloaded.
//
// Contract:
//   - MakeSyntheticTranslation(options): an English -> "Romanian" task generated from word lists
//     by a fixed-seed generator (independent of --seed). A sentence is a noun phrase, a verb, an
//     optional prepositional phrase and an optional time word:
//       "the red cat sleeps under the old table today ."
//       -> "pisica roșu doarme sub masa veche astăzi ."
//     The translation maps every word through a dictionary, drops "the" and puts each
//     adjective after its noun (so word order changes, not only words). Train, validation and
//     test are independent draws.
//   - WriteTranslationJsonLines(dir, data): train.json, validation.json and test.json, one
//     {"translation": {"en": ..., "ro": ...}} object per line (HF's WMT16 layout), each replaced
//     atomically (ranks of a multi-process run may all write).
//   - BuiltinT5Config(vocab_size): a tiny T5 v1.0 (d_model 64, d_kv 16, 4 heads, d_ff 128, 2
//     encoder and 2 decoder blocks, relu, tied embeddings, dropout 0.1), decoder start = pad = 0,
//     eos = 1.
//   - BuiltinTokenizer(corpus): a T5Tokenizer over a SentencePiece model trained on `corpus`
//     (text/sentencepiece_trainer.h, vocabulary of at most 200 pieces, plus T5's 100 sentinels).
#ifndef LOOM_EXAMPLES_TRANSLATION_SYNTHETIC_TASK_H_
#define LOOM_EXAMPLES_TRANSLATION_SYNTHETIC_TASK_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "examples/translation/translation_data.h"
#include "models/t5/t5_config.h"
#include "text/t5_tokenizer.h"

namespace loom::examples::translation {

struct SyntheticTranslationOptions {
  int64_t num_train = 2000;
  int64_t num_validation = 200;
  int64_t num_test = 100;
  uint64_t seed = 20241127;  // fixed: the data does not follow --seed
};

struct SyntheticTranslation {
  std::vector<TranslationPair> train, validation, test;  // source "en", target "ro"
};

SyntheticTranslation MakeSyntheticTranslation(const SyntheticTranslationOptions& options = {});
absl::Status WriteTranslationJsonLines(const std::string& dir, const SyntheticTranslation& data);
models::t5::T5Config BuiltinT5Config(int64_t vocab_size);
absl::StatusOr<text::T5Tokenizer> BuiltinTokenizer(const std::vector<std::string>& corpus);

}  // namespace loom::examples::translation

#endif  // LOOM_EXAMPLES_TRANSLATION_SYNTHETIC_TASK_H_
