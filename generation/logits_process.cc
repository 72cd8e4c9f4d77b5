#include "generation/logits_process.h"

#include <algorithm>
#include <limits>
#include <tuple>
#include <map>
#include <vector>

namespace loom::generation {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// _calc_banned_ngram_tokens: the tokens that follow, somewhere earlier in the row, the row's
// last n - 1 tokens.
std::vector<int64_t> BannedTokens(const std::vector<int64_t>& row, int64_t n) {
  const int64_t cur_len = static_cast<int64_t>(row.size());
  if (cur_len + 1 < n) return {};
  std::map<std::vector<int64_t>, std::vector<int64_t>> followers;
  for (int64_t start = 0; start + n <= cur_len; ++start) {
    std::vector<int64_t> prefix(row.begin() + start, row.begin() + start + n - 1);
    followers[prefix].push_back(row[start + n - 1]);
  }
  const std::vector<int64_t> tail(row.begin() + (cur_len + 1 - n), row.end());
  auto it = followers.find(tail);
  return it == followers.end() ? std::vector<int64_t>() : it->second;
}

at::Tensor NoRepeatNGram(int64_t n, const at::Tensor& input_ids, at::Tensor scores) {
  const at::Tensor ids = input_ids.to(at::kCPU).contiguous();
  for (int64_t i = 0; i < ids.size(0); ++i) {
    const int64_t* p = ids[i].data_ptr<int64_t>();
    for (int64_t token : BannedTokens(std::vector<int64_t>(p, p + ids.size(1)), n)) {
      scores[i][token] = kNegInf;
    }
  }
  return scores;
}

at::Tensor ForceToken(const at::Tensor& scores, const std::vector<int64_t>& tokens) {
  at::Tensor forced = at::full_like(scores, kNegInf);
  for (int64_t t : tokens) forced.select(1, t).fill_(0);
  return forced;
}

// RepetitionPenaltyLogitsProcessor: every token already in the row is divided by the penalty
// when positive, multiplied when negative.
at::Tensor RepetitionPenalty(double penalty, const at::Tensor& input_ids, const at::Tensor& scores) {
  const at::Tensor ids = input_ids.to(scores.device()).to(at::kLong);
  const at::Tensor score = at::gather(scores, 1, ids);
  const at::Tensor penalised = at::where(score < 0, score * penalty, score / penalty);
  return scores.scatter(1, ids, penalised);
}

at::Tensor TopK(int64_t top_k, int64_t min_tokens_to_keep, const at::Tensor& scores) {
  const int64_t k = std::min(std::max(top_k, min_tokens_to_keep), scores.size(-1));
  const at::Tensor kth = std::get<0>(at::topk(scores, k)).narrow(-1, k - 1, 1);
  return scores.masked_fill(scores < kth, kNegInf);
}

at::Tensor TopP(double top_p, int64_t min_tokens_to_keep, const at::Tensor& scores) {
  auto [sorted, order] = at::sort(scores, /*dim=*/-1, /*descending=*/false);
  const at::Tensor cumulative = sorted.softmax(-1).cumsum(-1);
  at::Tensor remove_sorted = cumulative <= (1 - top_p);
  remove_sorted.narrow(-1, remove_sorted.size(-1) - min_tokens_to_keep, min_tokens_to_keep)
      .fill_(false);
  const at::Tensor remove = remove_sorted.scatter(1, order, remove_sorted);
  return scores.masked_fill(remove, kNegInf);
}

}  // namespace

at::Tensor WarpLogits(const GenerationConfig& config, const at::Tensor& scores) {
  const int64_t min_tokens_to_keep = config.num_beams > 1 ? 2 : 1;
  at::Tensor out = scores;
  if (config.temperature != 1.0) out = out / config.temperature;
  if (config.top_k != 0) out = TopK(config.top_k, min_tokens_to_keep, out);
  if (config.top_p < 1.0) out = TopP(config.top_p, min_tokens_to_keep, out);
  return out;
}

at::Tensor ProcessLogits(const GenerationConfig& config, int64_t max_length,
                         const at::Tensor& input_ids, const at::Tensor& scores) {
  const int64_t cur_len = input_ids.size(-1);
  at::Tensor out = scores;
  if (config.repetition_penalty != 1.0) {
    out = RepetitionPenalty(config.repetition_penalty, input_ids, out);
  }
  if (config.no_repeat_ngram_size > 0) {
    out = NoRepeatNGram(config.no_repeat_ngram_size, input_ids, out.clone());
  }
  if (config.min_length > 0 && !config.eos_token_id.empty() && cur_len < config.min_length) {
    out = out.clone();
    for (int64_t eos : config.eos_token_id) out.select(1, eos).fill_(kNegInf);
  }
  if (config.forced_bos_token_id.has_value() && cur_len == 1) {
    out = ForceToken(out, {*config.forced_bos_token_id});
  }
  if (config.forced_eos_token_id.has_value() && cur_len == max_length - 1) {
    out = ForceToken(out, {*config.forced_eos_token_id});
  }
  return out;
}

}  // namespace loom::generation
