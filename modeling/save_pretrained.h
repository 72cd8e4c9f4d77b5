// SavePretrained: the model part of transformers 4.41's PreTrainedModel.save_pretrained — what
// every model's folder holds: config.json (Model::ConfigJson, when the model has one),
// generation_config.json (Model::GenerationConfigJson, for models that generate) and the
// weights (checkpoint/model_weights.h: model.safetensors or pytorch_model.bin, sharded with an
// index past the shard size). The models' own Save* functions and the front ends'
// runtime::WriteModelFiles all write through it.
//
// Contract:
//   SavePretrained(model, dir, options) creates `dir` when missing, writes each file
//   atomically, and returns the names written, relative to `dir`, in that order. With
//   options.weights false only the JSON files are written (ZeRO-3 without 16-bit weights).
//
// Example:
//   ASSIGN_OR_RETURN(std::vector<std::string> files, modeling::SavePretrained(*model, dir));
#ifndef LOOM_MODELING_SAVE_PRETRAINED_H_
#define LOOM_MODELING_SAVE_PRETRAINED_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "checkpoint/model_weights.h"
#include "modeling/model.h"

namespace loom::modeling {

struct SavePretrainedOptions {
  bool weights = true;
  checkpoint::SaveModelWeightsOptions weights_options;
};

absl::StatusOr<std::vector<std::string>> SavePretrained(const Model& model,
                                                        const std::string& dir,
                                                        const SavePretrainedOptions& options = {});

}  // namespace loom::modeling

#endif  // LOOM_MODELING_SAVE_PRETRAINED_H_
