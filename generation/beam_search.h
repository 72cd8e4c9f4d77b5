// Beam search bookkeeping of transformers 4.41 (generation/beam_search.py): BeamHypotheses and
// BeamSearchScorer's process / finalize, for one beam group.
//
// Contract:
//   - BeamHypotheses keeps the num_beams best finished hypotheses, scored
//     sum_logprobs / generated_len ** length_penalty (generated_len: the tokens generated after
//     the prompt — the decoder start token, or a decoder-only model's input ids — the eos
//     included); a new one replaces the worst when better
//     (of equal worst scores, the first added goes). IsDone follows
//     early_stopping: true -> done once num_beams are kept; false -> when the best running
//     score / generated_len ** length_penalty cannot beat the worst kept; "never" -> the same
//     bound at max_length - prompt_length generated tokens when length_penalty > 0.
//   - BeamScorer::Process(input_ids [B*K, L], scores/tokens/indices [B, 2K]) moves eos
//     candidates among the top K of each batch into its hypotheses and returns the next K
//     (score, token, source row) per batch; finished batches get (0, pad, 0). Scores are
//     float32 tensors as in HF; hypothesis scores are computed in double as Python does.
//   - Finalize(...) adds the still-open beams, picks num_return_sequences best per batch
//     (ties: the one added last, as Python's stable sort then pop()), pads with pad_token_id
//     and puts eos after every sequence shorter than the padded length (capped at max_length).
//   Errors: HF's ValueErrors become InvalidArgument.
//
// Example:
//   BeamScorer scorer(batch, num_beams, config, max_length);
//   ASSIGN_OR_RETURN(BeamStep step, scorer.Process(ids, top_scores, top_tokens, top_indices));
#ifndef LOOM_GENERATION_BEAM_SEARCH_H_
#define LOOM_GENERATION_BEAM_SEARCH_H_

#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "modeling/generation_config.h"

namespace loom::generation {

using modeling::EarlyStopping;
using modeling::GenerationConfig;

class BeamHypotheses {
 public:
  BeamHypotheses(int64_t num_beams, double length_penalty, EarlyStopping early_stopping,
                 int64_t max_length, int64_t prompt_length = 1);
  void Add(std::vector<int64_t> hyp, double sum_logprobs, int64_t generated_len);
  bool IsDone(double best_sum_logprobs, int64_t cur_len) const;
  size_t size() const { return beams_.size(); }

  struct Beam {
    double score;
    std::vector<int64_t> tokens;
  };
  const std::vector<Beam>& beams() const { return beams_; }

 private:
  int64_t num_beams_;
  double length_penalty_;
  EarlyStopping early_stopping_;
  int64_t max_length_;
  int64_t prompt_length_;
  std::vector<Beam> beams_;
  double worst_score_ = 1e9;
};

struct BeamStep {
  at::Tensor scores;   // [B*K] float
  at::Tensor tokens;   // [B*K] long
  at::Tensor indices;  // [B*K] long: the source row of each beam
};

class BeamScorer {
 public:
  // prompt_length: 1 (the decoder start token) for encoder-decoder models, the input length
  // for decoder-only ones.
  BeamScorer(int64_t batch_size, const GenerationConfig& config, int64_t max_length,
             int64_t prompt_length = 1);

  absl::StatusOr<BeamStep> Process(const at::Tensor& input_ids, const at::Tensor& next_scores,
                                   const at::Tensor& next_tokens, const at::Tensor& next_indices);
  bool IsDone() const;
  absl::StatusOr<at::Tensor> Finalize(const at::Tensor& input_ids, const at::Tensor& beam_scores);

 private:
  int64_t batch_size_, num_beams_, max_length_, prompt_length_;
  const GenerationConfig& config_;
  std::vector<BeamHypotheses> hyps_;
  std::vector<bool> done_;
};

}  // namespace loom::generation

#endif  // LOOM_GENERATION_BEAM_SEARCH_H_
