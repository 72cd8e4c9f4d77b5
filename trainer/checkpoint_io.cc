#include "trainer/checkpoint_io.h"

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "args/training_args_file.h"
#include "base/file_util.h"
#include "base/status_macros.h"
#include "base/torch_status.h"
#include "checkpoint/module_state.h"
#include "checkpoint/optimizer_state.h"
#include "checkpoint/safetensors.h"
#include "checkpoint/safetensors_sharded.h"
#include "checkpoint/scheduler_state.h"
#include "checkpoint/torch_pickle.h"
#include "rng/rng_state_file.h"

namespace loom::trainer {
namespace {

bool Exists(const std::string& path) { return std::filesystem::exists(path); }

}  // namespace

absl::Status WriteModelFiles(const std::string& dir, const Model& model,
                             const args::TrainingArguments& args) {
  const checkpoint::NamedTensors state = checkpoint::ModuleStateDict(model);
  if (args.save_safetensors()) {
    RETURN_IF_ERROR(checkpoint::SaveSafetensors(dir + "/" + kSafetensorsWeightsFile, state,
                                                checkpoint::kHfSafetensorsMetadata));
  } else {
    RETURN_IF_ERROR(checkpoint::SaveTorchStateDict(dir + "/" + kPickleWeightsFile, state));
  }
  if (const std::string config = model.ConfigJson(); !config.empty()) {
    RETURN_IF_ERROR(base::WriteFileAtomically(dir + "/" + kConfigFile, config));
  }
  return args::SaveTrainingArgs(args, dir + "/" + kTrainingArgsFile);
}

absl::Status WriteCheckpointFiles(const std::string& dir, const CheckpointContents& c) {
  RETURN_IF_ERROR(WriteModelFiles(dir, *c.model, *c.args));
  if (c.optimizer != nullptr) {
    RETURN_IF_ERROR(checkpoint::SaveOptimizerState(dir + "/" + kOptimizerFile, *c.optimizer));
  }
  if (c.scheduler != nullptr) {
    RETURN_IF_ERROR(checkpoint::SaveSchedulerState(dir + "/" + kSchedulerFile, *c.scheduler));
  }
  if (c.rng != nullptr) RETURN_IF_ERROR(rng::SaveRngState(*c.rng, dir + "/" + kRngStateFile));
  if (c.epoch_start_rng != nullptr) {
    RETURN_IF_ERROR(rng::SaveRngState(*c.epoch_start_rng, dir + "/" + kEpochStartRngFile));
  }
  if (!c.pending_grads.empty()) {
    RETURN_IF_ERROR(checkpoint::SaveSafetensors(dir + "/" + kPendingGradsFile, c.pending_grads));
  }
  if (c.position != nullptr) {
    RETURN_IF_ERROR(
        base::WriteFileAtomically(dir + "/" + kResumePositionFile, c.position->ToJson()));
  }
  return c.state->SaveToJson(dir + "/" + kTrainerStateFile);
}

absl::Status LoadModelFiles(const std::string& dir, Model* model) {
  checkpoint::NamedTensors tensors;
  std::string source;
  if (Exists(dir + "/" + kSafetensorsWeightsFile) ||
      Exists(dir + "/" + std::string(kSafetensorsWeightsFile) + ".index.json")) {
    ASSIGN_OR_RETURN(checkpoint::SafetensorsFile file, checkpoint::LoadSafetensorsCheckpoint(dir));
    tensors = std::move(file.tensors);
    source = dir + "/" + kSafetensorsWeightsFile;
  } else if (Exists(dir + "/" + kPickleWeightsFile)) {
    source = dir + "/" + kPickleWeightsFile;
    ASSIGN_OR_RETURN(tensors, checkpoint::LoadTorchStateDict(source));
  } else {
    return absl::NotFoundError(absl::StrCat("no model weights in ", dir, " (looked for ",
                                            kSafetensorsWeightsFile, " and ", kPickleWeightsFile,
                                            ")"));
  }
  RETURN_IF_ERROR_CTX(checkpoint::LoadStateDict(*model, tensors).status(), source);
  return absl::OkStatus();
}

absl::Status LoadOptimizerAndSchedulerFiles(const std::string& dir,
                                            torch::optim::Optimizer* optimizer,
                                            optim::LrScheduler* scheduler) {
  RETURN_IF_ERROR(checkpoint::LoadOptimizerState(dir + "/" + kOptimizerFile, *optimizer));
  return checkpoint::LoadSchedulerState(dir + "/" + kSchedulerFile, *scheduler);
}

absl::Status LoadPendingGrads(const std::string& dir, Model* model) {
  const std::string path = dir + "/" + kPendingGradsFile;
  if (!Exists(path)) return absl::OkStatus();
  ASSIGN_OR_RETURN(checkpoint::SafetensorsFile file, checkpoint::LoadSafetensors(path));
  auto params = model->named_parameters();
  for (const auto& [name, grad] : file.tensors) {
    at::Tensor* p = params.find(name);
    if (p == nullptr || !p->sizes().equals(grad.sizes())) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": gradient '", name, "' does not match a parameter of the model"));
    }
    try {
      p->mutable_grad() = grad.to(p->device(), p->scalar_type()).clone();
    } catch (const std::exception& e) {
      return base::TorchErrorToStatus(e, absl::StatusCode::kInternal, path);
    }
  }
  return absl::OkStatus();
}

}  // namespace loom::trainer
