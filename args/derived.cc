#include "args/derived.h"

#include <cmath>

namespace loom::args {

int64_t GetWarmupSteps(const TrainingArguments& a, int64_t num_training_steps) {
  if (a.warmup_steps() > 0) return a.warmup_steps();
  return static_cast<int64_t>(
      std::ceil(static_cast<double>(num_training_steps) * a.warmup_ratio()));
}

int64_t TrainBatchSizePerDevice(const TrainingArguments& a, std::string* warning) {
  if (a.has_per_gpu_train_batch_size()) {
    if (warning) {
      *warning =
          "Using deprecated `--per_gpu_train_batch_size` argument which will be removed in "
          "a future version. Using `--per_device_train_batch_size` is preferred.";
    }
    return a.per_gpu_train_batch_size();
  }
  return a.per_device_train_batch_size();
}

int64_t EvalBatchSizePerDevice(const TrainingArguments& a, std::string* warning) {
  if (a.has_per_gpu_eval_batch_size()) {
    if (warning) {
      *warning =
          "Using deprecated `--per_gpu_eval_batch_size` argument which will be removed in "
          "a future version. Using `--per_device_eval_batch_size` is preferred.";
    }
    return a.per_gpu_eval_batch_size();
  }
  return a.per_device_eval_batch_size();
}

}  // namespace loom::args
