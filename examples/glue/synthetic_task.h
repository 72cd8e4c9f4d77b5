// The embedded demo of run_glue: what `./bazelw run //examples/glue:run_glue` uses when neither a
// model nor data is given, so loom shows itself working with nothing downloaded.
//
// Contract:
//   - BuiltinTokenizer(): an in-memory, lower-casing BERT WordPiece tokenizer whose vocabulary
//     is [PAD] [UNK] [CLS] [SEP] [MASK] (ids 0..4), then punctuation and every word the
//     synthetic task uses (a few hundred), sorted; model_max_length 64.
//   - BuiltinBertConfig(vocab_size): a tiny BERT (hidden 64, 2 layers, 2 heads, intermediate
//     128, 64 positions, dropout 0.1, gelu).
//   - MakeSyntheticSst2(options): an SST-2-format sentiment task generated from word lists by a
//     fixed-seed generator (independent of --seed): sentences such as
//       "the soundtrack was really not dull , but the ending seemed long ."
//     with one sentiment adjective (positive or negative), optionally preceded directly by "not"
//     or "never" (which flips it), and distractor clauses with neutral adjectives. The label is 1
//     (positive) when the adjective's polarity, flipped by a negation, is positive. Train and
//     validation are independent draws; the test split is the validation sentences without
//     labels (as GLUE's test.tsv files have none).
//   - WriteSst2Tsv(dir, data) writes train.tsv / dev.tsv ("sentence\tlabel") and test.tsv
//     ("index\tsentence"), the GLUE distribution's SST-2 layout that glue::LoadGlueTaskData
//     reads; each file replaced atomically (ranks of a multi-process run may all write).
#ifndef LOOM_EXAMPLES_GLUE_SYNTHETIC_TASK_H_
#define LOOM_EXAMPLES_GLUE_SYNTHETIC_TASK_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "models/bert/bert_config.h"
#include "text/bert_tokenizer.h"

namespace loom::examples::glue_script {

struct SyntheticOptions {
  int64_t num_train = 2000;
  int64_t num_validation = 500;
  double negation_rate = 0.1;  // share of sentences whose sentiment word is negated
  uint64_t seed = 20240601;    // fixed: the data does not follow --seed
};

struct SyntheticSst2 {
  // (sentence, label) pairs.
  std::vector<std::pair<std::string, int>> train;
  std::vector<std::pair<std::string, int>> validation;
};

absl::StatusOr<text::BertTokenizer> BuiltinTokenizer();
models::bert::BertConfig BuiltinBertConfig(int64_t vocab_size);
SyntheticSst2 MakeSyntheticSst2(const SyntheticOptions& options = {});
absl::Status WriteSst2Tsv(const std::string& dir, const SyntheticSst2& data);

}  // namespace loom::examples::glue_script

#endif  // LOOM_EXAMPLES_GLUE_SYNTHETIC_TASK_H_
