#include "trainer/label_smoother.h"

namespace loom::trainer {

at::Tensor LabelSmoothedLoss(const at::Tensor& logits_in, const at::Tensor& labels_in,
                             double epsilon, bool shift_labels, int64_t ignore_index) {
  at::Tensor logits = logits_in;
  at::Tensor labels = labels_in;
  if (shift_labels) {
    logits = logits.narrow(-2, 0, logits.size(-2) - 1).contiguous();
    labels = labels.narrow(-1, 1, labels.size(-1) - 1).contiguous();
  }
  at::Tensor log_probs = -at::log_softmax(logits, -1);
  if (labels.dim() == log_probs.dim() - 1) labels = labels.unsqueeze(-1);
  at::Tensor padding_mask = labels.eq(ignore_index);
  labels = at::clamp_min(labels, 0);
  at::Tensor nll_loss = log_probs.gather(-1, labels);
  at::Tensor smoothed_loss = log_probs.sum(-1, /*keepdim=*/true, at::kFloat);
  nll_loss.masked_fill_(padding_mask, 0.0);
  smoothed_loss.masked_fill_(padding_mask, 0.0);
  at::Tensor num_active = padding_mask.numel() - padding_mask.to(at::kLong).sum();
  nll_loss = nll_loss.sum() / num_active;
  smoothed_loss = smoothed_loss.sum() / (num_active * log_probs.size(-1));
  return (1 - epsilon) * nll_loss + epsilon * smoothed_loss;
}

}  // namespace loom::trainer
