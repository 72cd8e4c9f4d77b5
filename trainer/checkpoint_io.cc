#include "trainer/checkpoint_io.h"

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "base/file_util.h"
#include "base/status_macros.h"
#include "base/torch_status.h"
#include "checkpoint/optimizer_state.h"
#include "checkpoint/rng_state_file.h"
#include "checkpoint/safetensors.h"
#include "checkpoint/scheduler_state.h"
#include "glog/logging.h"

namespace loom::trainer {

ProcessFileNames ProcessFiles(int rank, int world_size) {
  if (world_size <= 1) return {kRngStateFile, kEpochStartRngFile, kPendingGradsFile};
  return {absl::StrCat("rng_state_", rank, ".pth"),
          absl::StrCat("loom_epoch_rng_state_", rank, ".pth"),
          absl::StrCat("loom_pending_grads_", rank, ".safetensors")};
}

absl::Status WriteCheckpointFiles(const std::string& dir, const CheckpointContents& c) {
  const ProcessFileNames files = ProcessFiles(c.rank, c.world_size);
  if (c.rng != nullptr) RETURN_IF_ERROR(checkpoint::SaveRngState(*c.rng, dir + "/" + files.rng));
  if (c.epoch_start_rng != nullptr) {
    RETURN_IF_ERROR(
        checkpoint::SaveRngState(*c.epoch_start_rng, dir + "/" + files.epoch_start_rng));
  }
  if (!c.pending_grads.empty()) {
    RETURN_IF_ERROR(checkpoint::SaveSafetensors(dir + "/" + files.pending_grads, c.pending_grads));
  }
  if (!c.write_shared) return absl::OkStatus();
  RETURN_IF_ERROR(
      runtime::WriteModelFiles(dir, *c.model, runtime::TrainerModelFiles(*c.args, c.model_weights)));
  if (c.optimizer != nullptr) {
    RETURN_IF_ERROR(checkpoint::SaveOptimizerState(dir + "/" + kOptimizerFile, *c.optimizer));
  }
  if (c.scheduler != nullptr) {
    RETURN_IF_ERROR(checkpoint::SaveSchedulerState(dir + "/" + kSchedulerFile, *c.scheduler));
  }
  if (c.grad_scaler != nullptr) {
    RETURN_IF_ERROR(runtime::SaveGradScalerFile(dir, *c.grad_scaler));
  }
  if (c.position != nullptr) {
    RETURN_IF_ERROR(
        base::WriteFileAtomically(dir + "/" + kResumePositionFile, c.position->ToJson()));
  }
  ASSIGN_OR_RETURN(const TrainerStateLayout layout,
                   TrainerStateLayoutFor(c.args->save_for_transformers_version()));
  return c.state->SaveToJson(dir + "/" + kTrainerStateFile, layout);
}

absl::Status LoadOptimizerAndSchedulerFiles(const std::string& dir,
                                            torch::optim::Optimizer* optimizer,
                                            optim::LrScheduler* scheduler) {
  RETURN_IF_ERROR(checkpoint::LoadOptimizerState(dir + "/" + kOptimizerFile, *optimizer));
  return checkpoint::LoadSchedulerState(dir + "/" + kSchedulerFile, *scheduler);
}

int SavedWorldSize(const std::string& dir) {
  int n = 0;
  while (std::filesystem::exists(absl::StrCat(dir, "/rng_state_", n, ".pth"))) ++n;
  if (n == 0 && std::filesystem::exists(dir + "/" + kRngStateFile)) return 1;
  return n;
}

absl::Status LoadSchedulerFile(const std::string& dir, optim::LrScheduler* scheduler) {
  return checkpoint::LoadSchedulerState(dir + "/" + kSchedulerFile, *scheduler);
}

absl::Status LoadPendingGrads(const std::string& dir, Model* model, int rank, int world_size) {
  const std::string path = dir + "/" + ProcessFiles(rank, world_size).pending_grads;
  if (!std::filesystem::exists(path)) return absl::OkStatus();
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
