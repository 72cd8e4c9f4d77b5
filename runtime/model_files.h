// The files of a model that both front ends write and read — HF's save_pretrained folder: the
// weights (checkpoint/model_weights.h: model.safetensors or pytorch_model.bin, sharded past the
// shard size with an index, as transformers 4.38 `PreTrainedModel.save_pretrained` does),
// config.json when the model has one, and the Trainer's training_args.bin when arguments are
// given; and the loss scaler's scaler.pt (torch's GradScaler.state_dict(), the file accelerate
// 0.27 `save_accelerator_state` writes).
//
// Contract:
//   - WriteModelFiles is modeling::SavePretrained (config.json, generation_config.json, the
//     weights; each file atomically) plus training_args.bin; weights=false writes the JSON files
//     (and training_args.bin) only — ZeRO-3 without 16-bit weights on save.
//   - LoadModelFiles: the Trainer's lookup (model.safetensors, pytorch_model.bin, or a sharded
//     index); errors name the file and list missing / unexpected keys and shape mismatches.
//   - LoadGradScalerFile: a folder without scaler.pt (HF's, or saved without --fp16) leaves the
//     scaler as it is, with a warning.
//
// Example:
//   RETURN_IF_ERROR(WriteModelFiles(dir, model, {.args = &args}));
//   RETURN_IF_ERROR(LoadModelFiles(dir, &model));
#ifndef LOOM_RUNTIME_MODEL_FILES_H_
#define LOOM_RUNTIME_MODEL_FILES_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "args/training_args.pb.h"
#include "modeling/model.h"
#include "precision/grad_scaler.h"

namespace loom::runtime {

inline constexpr char kConfigFile[] = "config.json";
inline constexpr char kTrainingArgsFile[] = "training_args.bin";
inline constexpr char kScalerFile[] = "scaler.pt";

struct ModelFilesOptions {
  bool weights = true;
  bool safe_serialization = true;                   // model.safetensors, else pytorch_model.bin
  uint64_t max_shard_size = 5'000'000'000;  // save_pretrained's "5GB"
  const args::TrainingArguments* args = nullptr;     // training_args.bin when set
};

// The Trainer's save_model files: safe_serialization from --save_safetensors, training_args.bin.
ModelFilesOptions TrainerModelFiles(const args::TrainingArguments& args, bool weights = true);

absl::Status WriteModelFiles(const std::string& dir, const modeling::Model& model,
                             const ModelFilesOptions& options);
absl::Status LoadModelFiles(const std::string& dir, modeling::Model* model);

absl::Status SaveGradScalerFile(const std::string& dir, const precision::GradScaler& scaler);
absl::Status LoadGradScalerFile(const std::string& dir, precision::GradScaler* scaler);

}  // namespace loom::runtime

#endif  // LOOM_RUNTIME_MODEL_FILES_H_
