// Corpus BLEU as sacreBLEU 2.4 computes it with its defaults (what HF's run_translation reports
// as `bleu` through evaluate.load("sacrebleu")): the 13a tokenizer, n-grams up to 4, exponential
// smoothing ("exp"), brevity penalty against the closest reference length. Written here
// because no packaged C++ library computes sacreBLEU's exact score.
//
// Contract:
//   - Tokenize13a(line) is sacrebleu's Tokenizer13a on the line (after rstrip, as BLEU's
//     preprocessing does): <skipped> dropped, "-\n" joined, newlines to spaces, &quot; &amp;
//     &lt; &gt; unescaped, then TokenizerRegexp's four rules (ASCII punctuation and symbols
//     split off; "." and "," split unless between digits; "-" after a digit split), whitespace
//     runs (Python's str.split) collapsed to one space. Text must be valid UTF-8.
//   - CorpusBleu(hypotheses, references): references[i] holds hypothesis i's references (the
//     same count for every hypothesis, as evaluate's sacrebleu requires). Per segment: clipped
//     n-gram matches against the per-n-gram maximum over the references, the closest reference
//     length (the shorter on a tie); summed over the corpus; score = BP * exp(mean log p_n),
//     p_n = 100 * correct / total, an order with no match gets 100 / (2^k * total) (k counting
//     such orders), no match at all scores 0. Double arithmetic in Python's order, so scores
//     equal sacreBLEU's to the last bit on the same libm.
//
// Example:
//   ASSIGN_OR_RETURN(text::BleuScore bleu, text::CorpusBleu(predictions, {{ref0}, {ref1}}));
//   double score = bleu.score;  // 0..100
#ifndef LOOM_TEXT_SACREBLEU_H_
#define LOOM_TEXT_SACREBLEU_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace loom::text {

struct BleuScore {
  double score = 0;
  std::vector<int64_t> correct;  // per order 1..4
  std::vector<int64_t> total;
  std::vector<double> precisions;
  double brevity_penalty = 0;
  int64_t sys_len = 0;
  int64_t ref_len = 0;
};

absl::StatusOr<std::string> Tokenize13a(absl::string_view line);

absl::StatusOr<BleuScore> CorpusBleu(const std::vector<std::string>& hypotheses,
                                     const std::vector<std::vector<std::string>>& references);

}  // namespace loom::text

#endif  // LOOM_TEXT_SACREBLEU_H_
