// Values HF's TrainingArguments derives on demand (properties and helpers of transformers
// 4.41 TrainingArguments, e.g. get_warmup_steps), separate from PostInit so that libraries PostInit
// itself uses (the DeepSpeed config resolution) can call them.
//
// Example:
//   int64_t warmup = GetWarmupSteps(args, /*num_training_steps=*/1000);
#ifndef LOOM_ARGS_DERIVED_H_
#define LOOM_ARGS_DERIVED_H_

#include <cstdint>
#include <string>

#include "args/training_args.pb.h"

namespace loom::args {

// HF's get_warmup_steps: warmup_steps if > 0, else ceil(num_training_steps * warmup_ratio).
int64_t GetWarmupSteps(const TrainingArguments& args, int64_t num_training_steps);

// HF's train_batch_size / eval_batch_size per device: the deprecated per_gpu_* value when set
// (with `warning` filled), else per_device_*. (n_gpu scaling is the caller's: loom runs one
// device per process.)
int64_t TrainBatchSizePerDevice(const TrainingArguments& args, std::string* warning = nullptr);
int64_t EvalBatchSizePerDevice(const TrainingArguments& args, std::string* warning = nullptr);

}  // namespace loom::args

#endif  // LOOM_ARGS_DERIVED_H_
