// The logits processors and warpers of transformers 4.41 (generation/logits_process.py) that
// loom's generate applies, in HF's order: the processors of _get_logits_processor
// (RepetitionPenalty, NoRepeatNGram, MinLength, ForcedBOSToken, ForcedEOSToken), then, when
// sampling, the warpers of _get_logits_warper (Temperature, TopK, TopP).
//
// Contract:
//   ProcessLogits(config, input_ids [N, cur_len], scores [N, vocab]) returns the processed
//   scores (a new tensor):
//     - repetition_penalty p != 1: every token id present in the row has its score s replaced
//       by s * p when s < 0, else s / p;
//     - no_repeat_ngram_size n > 0: for each row, every token that would complete an n-gram
//       already in that row gets -inf (fairseq's rule as HF copies it; nothing before n - 1
//       tokens exist);
//     - min_length > 0 with eos ids: while cur_len < min_length every eos id gets -inf;
//     - forced_bos_token_id: at cur_len == 1 every token but it gets -inf (it gets 0);
//     - forced_eos_token_id: at cur_len == max_length - 1 likewise for it.
//   `max_length` is the resolved one (max_new_tokens applied).
//   WarpLogits(config, scores) returns the warped scores (min_tokens_to_keep is 2 with beams,
//   else 1):
//     - temperature t != 1: scores / t;
//     - top_k k != 0: scores below the min(max(k, keep), vocab)-th largest become -inf;
//     - top_p p < 1: sorting ascending, the tokens whose cumulative softmax is <= 1 - p become
//       -inf, never the `keep` most likely.
//
// Example:
//   at::Tensor processed = ProcessLogits(config, max_length, input_ids, scores);
#ifndef LOOM_GENERATION_LOGITS_PROCESS_H_
#define LOOM_GENERATION_LOGITS_PROCESS_H_

#include <ATen/ATen.h>

#include <cstdint>

#include "modeling/generation_config.h"

namespace loom::generation {

using modeling::EarlyStopping;
using modeling::GenerationConfig;

at::Tensor ProcessLogits(const GenerationConfig& config, int64_t max_length,
                         const at::Tensor& input_ids, const at::Tensor& scores);
at::Tensor WarpLogits(const GenerationConfig& config, const at::Tensor& scores);

}  // namespace loom::generation

#endif  // LOOM_GENERATION_LOGITS_PROCESS_H_
