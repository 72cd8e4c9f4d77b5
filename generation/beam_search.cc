#include "generation/beam_search.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <utility>

#include "absl/strings/str_cat.h"

namespace loom::generation {

BeamHypotheses::BeamHypotheses(int64_t num_beams, double length_penalty,
                               EarlyStopping early_stopping, int64_t max_length,
                               int64_t prompt_length)
    : num_beams_(num_beams),
      length_penalty_(length_penalty),
      early_stopping_(early_stopping),
      max_length_(max_length),
      prompt_length_(prompt_length) {}

void BeamHypotheses::Add(std::vector<int64_t> hyp, double sum_logprobs, int64_t generated_len) {
  const double score = sum_logprobs / std::pow(static_cast<double>(generated_len), length_penalty_);
  if (static_cast<int64_t>(beams_.size()) < num_beams_ || score > worst_score_) {
    beams_.push_back({score, std::move(hyp)});
    if (static_cast<int64_t>(beams_.size()) > num_beams_) {
      // sorted((score, index)): the worst, the earliest of equal ones, goes.
      std::vector<std::pair<double, size_t>> order;
      for (size_t i = 0; i < beams_.size(); ++i) order.emplace_back(beams_[i].score, i);
      std::sort(order.begin(), order.end());
      beams_.erase(beams_.begin() + order[0].second);
      worst_score_ = order[1].first;
    } else {
      worst_score_ = std::min(score, worst_score_);
    }
  }
}

bool BeamHypotheses::IsDone(double best_sum_logprobs, int64_t generated_len) const {
  if (static_cast<int64_t>(beams_.size()) < num_beams_) return false;
  if (early_stopping_ == EarlyStopping::kTrue) return true;
  int64_t len = generated_len;
  if (early_stopping_ == EarlyStopping::kNever && length_penalty_ > 0.0) {
    len = max_length_ - prompt_length_;
  }
  return worst_score_ >= best_sum_logprobs / std::pow(static_cast<double>(len), length_penalty_);
}

BeamScorer::BeamScorer(int64_t batch_size, const GenerationConfig& config, int64_t max_length,
                       int64_t prompt_length)
    : batch_size_(batch_size),
      num_beams_(config.num_beams),
      max_length_(max_length),
      prompt_length_(prompt_length),
      config_(config),
      done_(batch_size, false) {
  for (int64_t b = 0; b < batch_size; ++b) {
    hyps_.emplace_back(num_beams_, config.length_penalty, config.early_stopping, max_length,
                       prompt_length);
  }
}

bool BeamScorer::IsDone() const {
  return std::all_of(done_.begin(), done_.end(), [](bool d) { return d; });
}

namespace {

bool IsEos(const GenerationConfig& config, int64_t token) {
  return std::find(config.eos_token_id.begin(), config.eos_token_id.end(), token) !=
         config.eos_token_id.end();
}

std::vector<int64_t> Row(const at::Tensor& ids, int64_t row) {
  const at::Tensor r = ids[row].contiguous();
  return std::vector<int64_t>(r.data_ptr<int64_t>(), r.data_ptr<int64_t>() + r.numel());
}

}  // namespace

absl::StatusOr<BeamStep> BeamScorer::Process(const at::Tensor& input_ids,
                                             const at::Tensor& next_scores,
                                             const at::Tensor& next_tokens,
                                             const at::Tensor& next_indices) {
  // cur_len (with the new token) - decoder_prompt_len
  const int64_t generated_len = input_ids.size(-1) + 1 - prompt_length_;
  const int64_t k = num_beams_;
  at::Tensor scores = at::zeros({batch_size_, k}, next_scores.options());
  at::Tensor tokens = at::zeros({batch_size_, k}, at::kLong);
  at::Tensor indices = at::zeros({batch_size_, k}, at::kLong);
  const at::Tensor s = next_scores.to(at::kCPU), t = next_tokens.to(at::kCPU),
                   ix = next_indices.to(at::kCPU);
  for (int64_t b = 0; b < batch_size_; ++b) {
    if (done_[b]) {
      if (config_.eos_token_id.empty() || !config_.pad_token_id.has_value()) {
        return absl::InvalidArgumentError(
            "Generated beams >= num_beams -> eos_token_id and pad_token have to be defined");
      }
      tokens[b].fill_(*config_.pad_token_id);
      continue;
    }
    int64_t beam = 0;
    for (int64_t rank = 0; rank < s.size(1) && beam < k; ++rank) {
      const int64_t token = t[b][rank].item<int64_t>();
      const int64_t row = b * k + ix[b][rank].item<int64_t>();
      if (IsEos(config_, token)) {
        if (rank >= k) continue;
        hyps_[b].Add(Row(input_ids, row), s[b][rank].item<double>(), generated_len);
      } else {
        scores[b][beam] = s[b][rank];
        tokens[b][beam] = token;
        indices[b][beam] = row;
        ++beam;
      }
    }
    if (beam < k) {
      return absl::InvalidArgumentError(absl::StrCat(
          "At most ", k, " tokens in the candidates of batch ", b,
          " can be equal to `eos_token_id`; make sure the candidates are corrected"));
    }
    done_[b] = done_[b] || hyps_[b].IsDone(s[b].max().item<double>(), generated_len);
  }
  return BeamStep{scores.view(-1), tokens.view(-1), indices.view(-1)};
}

absl::StatusOr<at::Tensor> BeamScorer::Finalize(const at::Tensor& input_ids,
                                                const at::Tensor& beam_scores) {
  const at::Tensor final_scores = beam_scores.to(at::kCPU);
  for (int64_t b = 0; b < batch_size_; ++b) {
    if (done_[b]) continue;
    for (int64_t j = 0; j < num_beams_; ++j) {
      const int64_t row = b * num_beams_ + j;
      hyps_[b].Add(Row(input_ids, row), final_scores[row].item<double>(),
                    input_ids.size(-1) - prompt_length_);
    }
  }
  const int64_t keep = config_.num_return_sequences;
  std::vector<std::vector<int64_t>> best;
  for (int64_t b = 0; b < batch_size_; ++b) {
    std::vector<BeamHypotheses::Beam> sorted = hyps_[b].beams();
    std::stable_sort(sorted.begin(), sorted.end(),
                     [](const auto& x, const auto& y) { return x.score < y.score; });
    for (int64_t j = 0; j < keep; ++j) {
      best.push_back(sorted.back().tokens);
      sorted.pop_back();
    }
  }
  size_t longest = 0, shortest = SIZE_MAX;
  for (const auto& h : best) {
    longest = std::max(longest, h.size());
    shortest = std::min(shortest, h.size());
  }
  const int64_t width = std::min<int64_t>(static_cast<int64_t>(longest) + 1, max_length_);
  if (shortest != longest && !config_.pad_token_id.has_value()) {
    return absl::InvalidArgumentError("`pad_token_id` has to be defined");
  }
  if (config_.eos_token_id.empty() && shortest < static_cast<size_t>(width)) {
    return absl::InvalidArgumentError("beam search needs an eos_token_id to end its sequences");
  }
  at::Tensor decoded = at::full({static_cast<int64_t>(best.size()), width},
                                config_.pad_token_id.value_or(0), at::kLong);
  for (size_t i = 0; i < best.size(); ++i) {
    const int64_t len = static_cast<int64_t>(best[i].size());
    decoded[i].narrow(0, 0, len).copy_(at::tensor(best[i], at::kLong));
    if (len < width) decoded[i][len] = config_.eos_token_id.at(0);
  }
  return decoded.to(input_ids.device());
}

}  // namespace loom::generation
