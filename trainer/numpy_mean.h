// The mean numpy computes for a float32 array (`np.ndarray.mean()` on dtype float32), bit for
// bit: the HF Trainer reports `eval_loss` as `all_losses.mean().item()`, where all_losses is
// the float32 array of every evaluated example's batch loss (transformers 4.38
// `Trainer.evaluation_loop`).
//
// Contract:
//   - NumpyFloat32Mean(values): numpy 1.24's float32 mean: the values summed in float32 in
//     chunks of 8192 (its iterator's buffer size), each chunk by numpy's pairwise summation
//     (8 running sums over blocks of at most 128 values, halved recursively above that), the
//     total divided by the count in float32. NaN for no values (numpy's warning case).
//
// Usage:
//   std::vector<float> losses = {0.7f, 0.7f, 0.65f};
//   double eval_loss = NumpyFloat32Mean(losses);  // == np.array(losses, np.float32).mean().item()
#ifndef LOOM_TRAINER_NUMPY_MEAN_H_
#define LOOM_TRAINER_NUMPY_MEAN_H_

#include "absl/types/span.h"

namespace loom::trainer {

float NumpyFloat32Mean(absl::Span<const float> values);

}  // namespace loom::trainer

#endif  // LOOM_TRAINER_NUMPY_MEAN_H_
