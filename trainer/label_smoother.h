// HF's LabelSmoother (transformers 4.41 trainer_pt_utils.py): the loss the Trainer
// computes from the logits when label_smoothing_factor > 0.
//
//   loss = (1 - eps) * nll + eps * smoothed, with log_probs = log_softmax(logits, -1),
//   nll = mean over non-ignored positions of -log_probs[label],
//   smoothed = sum over non-ignored positions of -sum(log_probs) / (count * num_classes);
//   positions whose label is `ignore_index` (-100) count for neither. With shift_labels the
//   logits drop their last position and the labels their first (causal LM).
//
// Example:
//   at::Tensor loss = LabelSmoothedLoss(logits, labels, /*epsilon=*/0.1);
#ifndef LOOM_TRAINER_LABEL_SMOOTHER_H_
#define LOOM_TRAINER_LABEL_SMOOTHER_H_

#include <ATen/ATen.h>

namespace loom::trainer {

at::Tensor LabelSmoothedLoss(const at::Tensor& logits, const at::Tensor& labels, double epsilon,
                             bool shift_labels = false, int64_t ignore_index = -100);

}  // namespace loom::trainer

#endif  // LOOM_TRAINER_LABEL_SMOOTHER_H_
