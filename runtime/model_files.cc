#include "runtime/model_files.h"

#include <filesystem>

#include "base/status_macros.h"
#include "checkpoint/model_weights.h"
#include "checkpoint/torch_pickle.h"
#include "checkpoint/training_args_file.h"
#include "glog/logging.h"
#include "modeling/save_pretrained.h"

namespace loom::runtime {

ModelFilesOptions TrainerModelFiles(const args::TrainingArguments& args, bool weights) {
  ModelFilesOptions options;
  options.weights = weights;
  options.safe_serialization = args.save_safetensors();
  options.args = &args;
  return options;
}

absl::Status WriteModelFiles(const std::string& dir, const modeling::Model& model,
                             const ModelFilesOptions& options) {
  modeling::SavePretrainedOptions save;
  save.weights = options.weights;
  save.weights_options.safe_serialization = options.safe_serialization;
  save.weights_options.max_shard_size = options.max_shard_size;
  RETURN_IF_ERROR(modeling::SavePretrained(model, dir, save).status());
  if (options.args == nullptr) return absl::OkStatus();
  return checkpoint::SaveTrainingArgs(*options.args, dir + "/" + kTrainingArgsFile);
}

absl::Status LoadModelFiles(const std::string& dir, modeling::Model* model) {
  return checkpoint::LoadModelWeightsInto(*model, dir).status();
}

absl::Status SaveGradScalerFile(const std::string& dir, const precision::GradScaler& scaler) {
  return checkpoint::SavePickle(dir + "/" + kScalerFile, scaler.StateDict());
}

absl::Status LoadGradScalerFile(const std::string& dir, precision::GradScaler* scaler) {
  const std::string path = dir + "/" + kScalerFile;
  if (!std::filesystem::exists(path)) {
    LOG(WARNING) << dir << " has no " << kScalerFile
                 << ": the loss scale starts again from its initial value";
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(const c10::IValue state, checkpoint::LoadPickle(path));
  RETURN_IF_ERROR_CTX(scaler->LoadStateDict(state), path);
  return absl::OkStatus();
}

}  // namespace loom::runtime
