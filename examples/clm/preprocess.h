// run_clm's data steps between the text examples and the Trainer (HF run_clm.py, transformers
// 4.41): tokenize_function, the block size, group_texts, and the accuracy metric.
//
// Contract:
//   - TokenizeTexts(tokenizer, texts, path): `tokenizer(texts)`'s input_ids (with the special
//     tokens the tokenizer adds: Llama's bos); errors name the file and the 1-based example.
//   - ResolveBlockSize(requested, model_max_length, max_position_embeddings): run_clm's rule —
//     unset: the tokenizer's model_max_length, or min(1024, max_position_embeddings) with HF's
//     warning when that is larger (no model_max_length counts as larger); set: clamped to
//     model_max_length with HF's warning. loom adds one more clamp, with a warning in the same
//     words: a block longer than max_position_embeddings would give the model positions it was
//     not built for, so block_size never exceeds it.
//   - GroupTexts(ids, block_size, max_examples, path): group_texts as datasets' map(batched=True)
//     runs it: the examples are taken 1000 at a time; each batch's ids are concatenated, the
//     remainder after the last whole block dropped, and cut into blocks. Each block becomes an
//     example {input_ids, attention_mask (ones), labels (= input_ids)}, int64 [block_size].
//     max_examples >= 0 keeps the first max_examples blocks (select(range(N))). No block at all
//     is InvalidArgument naming the file, its token count and --block_size.
//   - ArgmaxLogits(): preprocess_logits_for_metrics (logits.argmax(-1)).
//     ClmAccuracy(): compute_metrics: accuracy of predictions[:, :-1] against labels[:, 1:]
//     (evaluate's "accuracy": the fraction equal, a Python float).
//
// Example:
//   ASSIGN_OR_RETURN(auto ids, TokenizeTexts(tokenizer, texts, "train.txt"));
//   ASSIGN_OR_RETURN(auto train, GroupTexts(ids, 128, -1, "train.txt"));
#ifndef LOOM_EXAMPLES_CLM_PREPROCESS_H_
#define LOOM_EXAMPLES_CLM_PREPROCESS_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "data/dataset.h"
#include "text/causal_lm_tokenizer.h"
#include "trainer/trainer.h"

namespace loom::examples::clm {

absl::StatusOr<std::vector<std::vector<int64_t>>> TokenizeTexts(
    const text::CausalLmTokenizer& tokenizer, const std::vector<std::string>& texts,
    const std::string& path);

struct BlockSize {
  int64_t block_size = 0;
  std::vector<std::string> warnings;
};

BlockSize ResolveBlockSize(std::optional<int64_t> requested,
                           std::optional<int64_t> model_max_length,
                           int64_t max_position_embeddings);

absl::StatusOr<std::shared_ptr<data::ExampleListDataset>> GroupTexts(
    const std::vector<std::vector<int64_t>>& ids, int64_t block_size, int64_t max_examples,
    const std::string& path);

trainer::PreprocessLogitsFn ArgmaxLogits();
trainer::ComputeMetricsFn ClmAccuracy();

}  // namespace loom::examples::clm

#endif  // LOOM_EXAMPLES_CLM_PREPROCESS_H_
