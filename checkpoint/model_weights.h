// A model's weights in an HF checkpoint folder, with save_pretrained's file choices and the
// lookup of Trainer._load_from_checkpoint (transformers 4.38-4.41).
//
// Contract:
//   SaveModelWeights(dir, state_dict, {safe_serialization, max_shard_size}) writes
//     model.safetensors (metadata {"format": "pt"}) or, with safe_serialization = false,
//     pytorch_model.bin (a torch pickle); sharded into model-00001-of-0000N.safetensors /
//     pytorch_model-00001-of-0000N.bin plus model.safetensors.index.json /
//     pytorch_model.bin.index.json when the tensors exceed max_shard_size (HF's plan, names,
//     index text and clean-up; see safetensors_sharded.h). Returns the files written.
//   LoadModelWeights(dir, prefer_safetensors) finds the weights as the Trainer does on resume:
//     a single file first (model.safetensors when prefer_safetensors and present, else
//     pytorch_model.bin, else model.safetensors), then an index (the safetensors one when
//     prefer_safetensors or there is no .bin index). Neither: NotFound "Can't find a valid
//     checkpoint at <dir>" (HF's words). Safetensors are memory-mapped (safetensors.h);
//     pytorch_model.bin files go through LibTorch's unpickler (torch_pickle.h).
//   LoadModelWeightsInto(module, dir, options) = LoadModelWeights + LoadStateDict
//     (module_state.h): strict by default, so a missing, unexpected or mis-shaped key is an
//     error listing them all, prefixed with the file read. (HF's Trainer loads with
//     strict=False and warns; pass {.strict = false} and report the result's keys for that.)
//
// Example:
//   RETURN_IF_ERROR(SaveModelWeights(dir, ModuleStateDict(*model)).status());
//   ASSIGN_OR_RETURN(LoadStateDictResult r, LoadModelWeightsInto(*model, dir));
#ifndef LOOM_CHECKPOINT_MODEL_WEIGHTS_H_
#define LOOM_CHECKPOINT_MODEL_WEIGHTS_H_

#include <torch/nn/module.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "checkpoint/module_state.h"
#include "checkpoint/named_tensors.h"

namespace loom::checkpoint {

inline constexpr absl::string_view kTorchWeightsName = "pytorch_model.bin";
inline constexpr absl::string_view kTorchIndexName = "pytorch_model.bin.index.json";

struct SaveModelWeightsOptions {
  bool safe_serialization = true;           // TrainingArguments.save_safetensors
  uint64_t max_shard_size = 5'000'000'000;  // save_pretrained's default "5GB"
};

absl::StatusOr<std::vector<std::string>> SaveModelWeights(
    const std::string& dir, const NamedTensors& state_dict,
    const SaveModelWeightsOptions& options = {});

struct LoadedWeights {
  NamedTensors tensors;
  std::string source;  // the file read: a weights file or an index
};

absl::StatusOr<LoadedWeights> LoadModelWeights(const std::string& dir,
                                               bool prefer_safetensors = true);

absl::StatusOr<LoadStateDictResult> LoadModelWeightsInto(torch::nn::Module& module,
                                                         const std::string& dir,
                                                         LoadStateDictOptions options = {},
                                                         bool prefer_safetensors = true);

}  // namespace loom::checkpoint

#endif  // LOOM_CHECKPOINT_MODEL_WEIGHTS_H_
