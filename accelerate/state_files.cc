// Accelerator::SaveState / LoadState: accelerate's save_state folder (accelerate 0.27–0.30,
// checkpointing.save_accelerator_state / load_accelerator_state), written atomically through
// checkpoint/folder's staged folders, with the files loom's Trainer writes the same way:
//   model.safetensors          the unwrapped model's weights (whole, also under sharding)
//   optimizer.bin              torch.save(optimizer.state_dict()) — torch.load reads it; a
//                              strategy that shards the optimizer state (ZeRO) writes its
//                              DeepSpeed-layout files instead
//   scheduler.bin (_1, ...)    each prepared scheduler's state_dict()
//   random_states_<i>.pkl      every process's generators (torch.save dict with accelerate's
//                              keys, plus HF's and loom's: checkpoint/rng_state_file.h)
//   scaler.pt                  the loss scaler's state (fp16)
// Every process calls both (collectives).
#include <filesystem>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "accelerate/accelerator.h"
#include "accelerate/prepared.h"
#include "base/status_macros.h"
#include "checkpoint/model_weights.h"
#include "checkpoint/module_state.h"
#include "checkpoint/optimizer_state.h"
#include "checkpoint/rng_state_file.h"
#include "checkpoint/scheduler_state.h"
#include "checkpoint/torch_pickle.h"
#include "rng/rng_state.h"
#include "rng/seed.h"
#include "runtime/full_parameters.h"
#include "runtime/model_files.h"
#include "runtime/shared_staged_folder.h"

namespace loom::accelerate {
namespace {

namespace fs = std::filesystem;

std::string SchedulerFile(size_t i) {
  return i == 0 ? "scheduler.bin" : absl::StrCat("scheduler_", i, ".bin");
}

std::string RandomStatesFile(int rank) { return absl::StrCat("random_states_", rank, ".pkl"); }

}  // namespace

absl::Status Accelerator::SetSeed(uint64_t seed) { return rng::SetSeed(seed, &state_->generators); }

absl::StatusOr<std::string> Accelerator::SaveState(std::optional<std::string> dir) {
  AcceleratorState& s = *state_;
  if (!dir) {
    if (project_dir_.empty()) {
      return absl::InvalidArgumentError(
          "Accelerator::SaveState: give a folder, or set AcceleratorOptions.project_dir for "
          "<project_dir>/checkpoints/checkpoint_<n>");
    }
    dir = absl::StrCat(project_dir_, "/checkpoints/checkpoint_", save_iteration_);
    std::error_code ec;
    if (fs::exists(*dir, ec)) {
      // accelerate's automatic_checkpoint_naming refuses to overwrite as well.
      return absl::FailedPreconditionError(absl::StrCat(
          "Accelerator::SaveState: checkpoint directory ", *dir,
          " already exists; LoadState it first (the count then continues after it) or give a "
          "folder"));
    }
  }
  fs::path final_path = fs::absolute(*dir).lexically_normal();
  if (final_path.filename().empty()) final_path = final_path.parent_path();  // "dir/"
  const std::string what = absl::StrCat("Accelerator::SaveState ", *dir);
  // The main process stages the folder; the others learn where.
  ASSIGN_OR_RETURN(runtime::SharedStagedFolder folder,
                   runtime::SharedStagedFolder::Begin(s.parallel, s.args, final_path.parent_path(),
                                                      final_path.filename().string(), what));
  // The weights, whole (a collective under parameter sharding); every rank learns the main
  // process's outcome before the next collective.
  absl::Status written = absl::OkStatus();
  if (s.model != nullptr) {
    written = runtime::WithFullParameters(s.strategy.get(), /*write_back=*/false, what, [&] {
      return folder.saver() ? checkpoint::SaveModelWeights(
                                  folder.path(), checkpoint::ModuleStateDict(*s.model))
                                  .status()
                            : absl::OkStatus();
    });
  }
  RETURN_IF_ERROR(s.parallel.AgreeOnStatus(written, what));
  written = WriteTrainingStateFiles(folder.path(), folder.saver());
  RETURN_IF_ERROR(folder.Commit(written, /*after_commit=*/nullptr));
  ++save_iteration_;
  return final_path.string();
}

absl::Status Accelerator::WriteTrainingStateFiles(const std::string& staging, bool saver) {
  AcceleratorState& s = *state_;
  if (s.optimizer != nullptr) {
    if (s.strategy != nullptr && s.strategy->OwnsOptimizerState()) {
      // Every rank writes its partition.
      RETURN_IF_ERROR(s.strategy->SaveState(staging, sharding::StrategySaveInfo()));
    } else if (saver) {
      RETURN_IF_ERROR(checkpoint::SaveOptimizerState(staging + "/optimizer.bin", *s.optimizer));
    }
  }
  for (size_t i = 0; saver && i < s.schedulers.size(); ++i) {
    RETURN_IF_ERROR(
        checkpoint::SaveSchedulerState(staging + "/" + SchedulerFile(i), *s.schedulers[i]));
  }
  if (saver && s.precision->grad_scaler() != nullptr) {
    RETURN_IF_ERROR(runtime::SaveGradScalerFile(staging, *s.precision->grad_scaler()));
  }
  ASSIGN_OR_RETURN(rng::RngState rng, rng::CaptureRngState(s.generators));
  return checkpoint::SaveRngState(rng, staging + "/" + RandomStatesFile(process_index()),
                                  checkpoint::RngFileOptions{.accelerate_keys = true});
}

absl::Status Accelerator::LoadState(const std::string& dir) {
  AcceleratorState& s = *state_;
  absl::Status loaded = absl::OkStatus();
  if (s.model != nullptr) {
    loaded = runtime::WithFullParameters(
        s.strategy.get(), /*write_back=*/true, absl::StrCat("Accelerator::LoadState ", dir),
        [&] { return runtime::LoadModelFiles(dir, s.model.get()); });
  }
  if (loaded.ok() && s.optimizer != nullptr) {
    loaded = s.strategy != nullptr && s.strategy->OwnsOptimizerState()
                 ? s.strategy->LoadState(dir)
                 : checkpoint::LoadOptimizerState(dir + "/optimizer.bin", *s.optimizer);
  }
  for (size_t i = 0; loaded.ok() && i < s.schedulers.size(); ++i) {
    loaded = checkpoint::LoadSchedulerState(dir + "/" + SchedulerFile(i), *s.schedulers[i]);
  }
  if (loaded.ok() && s.precision->grad_scaler() != nullptr) {
    loaded = runtime::LoadGradScalerFile(dir, s.precision->grad_scaler());
  }
  if (loaded.ok()) {
    absl::StatusOr<rng::RngState> rng =
        checkpoint::LoadRngState(dir + "/" + RandomStatesFile(process_index()));
    loaded = rng.ok() ? rng::RestoreRngState(*rng, &s.generators) : rng.status();
  }
  // accelerate: loading <project_dir>/checkpoints/checkpoint_<n> continues the count after n.
  const fs::path loaded_path = fs::path(dir).lexically_normal();
  const std::string name = (loaded_path.filename().empty() ? loaded_path.parent_path()
                                                           : loaded_path).filename().string();
  int n = 0;
  if (!project_dir_.empty() && name.rfind("checkpoint_", 0) == 0 &&
      absl::SimpleAtoi(name.substr(11), &n)) {
    save_iteration_ = n + 1;
  }
  // The loaded state starts a new accumulation window.
  s.grads_stashed = false;
  s.stashed_grads.clear();
  if (s.model != nullptr) s.model->zero_grad();
  return s.parallel.AgreeOnStatus(loaded, absl::StrCat("Accelerator::LoadState ", dir));
}

}  // namespace loom::accelerate
