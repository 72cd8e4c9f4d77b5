// Accelerator::SaveState / LoadState: accelerate's save_state folder (accelerate 0.27–0.30,
// checkpointing.save_accelerator_state / load_accelerator_state), written atomically through
// checkpoint/folder's staged folders, with the files loom's Trainer writes the same way:
//   model.safetensors          the unwrapped model's weights (whole, also under sharding)
//   optimizer.bin              torch.save(optimizer.state_dict()) — torch.load reads it; a
//                              strategy that shards the optimizer state (ZeRO) writes its
//                              DeepSpeed-layout files instead
//   scheduler.bin (_1, ...)    each prepared scheduler's state_dict()
//   random_states_<i>.pkl      every process's generators (torch.save dict with accelerate's
//                              keys, plus HF's and loom's: rng/rng_state_file.h)
//   scaler.pt                  the loss scaler's state (fp16)
// Every process calls both (collectives).
#include <filesystem>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "accelerate/accelerator.h"
#include "accelerate/prepared.h"
#include "base/status_macros.h"
#include "checkpoint/folder/staged_folder.h"
#include "checkpoint/model_weights.h"
#include "checkpoint/module_state.h"
#include "checkpoint/optimizer_state.h"
#include "checkpoint/scheduler_state.h"
#include "checkpoint/torch_pickle.h"
#include "rng/rng_state.h"
#include "rng/rng_state_file.h"
#include "rng/seed.h"
#include "trainer/checkpoint_io.h"

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
  // The main process stages the folder; the others learn where.
  std::optional<checkpoint::StagedFolder> staged;
  std::string staging;
  absl::Status begun = absl::OkStatus();
  if (IsMainProcess()) {
    absl::StatusOr<checkpoint::StagedFolder> b =
        checkpoint::StagedFolder::Begin(final_path.parent_path(), final_path.filename().string());
    if (b.ok()) {
      staged.emplace(std::move(*b));
      staging = staged->path().string();
    } else {
      begun = b.status();
    }
  }
  RETURN_IF_ERROR(s.parallel.AgreeOnStatus(begun, absl::StrCat("SaveState ", *dir)));
  RETURN_IF_ERROR(s.parallel.BroadcastString(staging));

  const std::string what = absl::StrCat("Accelerator::SaveState ", *dir);
  absl::Status written = absl::OkStatus();
  // The weights, whole (a collective under parameter sharding).
  if (s.model != nullptr) {
    if (s.strategy != nullptr) RETURN_IF_ERROR(s.strategy->BeginFullParameters());
    if (IsMainProcess()) {
      written = checkpoint::SaveModelWeights(staging, checkpoint::ModuleStateDict(*s.model))
                    .status();
    }
    if (s.strategy != nullptr) RETURN_IF_ERROR(s.strategy->EndFullParameters(false));
  }
  // Every rank learns the main process's outcome before the next collective.
  RETURN_IF_ERROR(s.parallel.AgreeOnStatus(written, what));
  if (s.optimizer != nullptr) {
    if (s.strategy != nullptr && s.strategy->OwnsOptimizerState()) {
      sharding::StrategySaveInfo info;
      written = s.strategy->SaveState(staging, info);  // every rank writes its partition
    } else if (IsMainProcess()) {
      written = checkpoint::SaveOptimizerState(staging + "/optimizer.bin", *s.optimizer);
    }
  }
  for (size_t i = 0; written.ok() && IsMainProcess() && i < s.schedulers.size(); ++i) {
    written = checkpoint::SaveSchedulerState(staging + "/" + SchedulerFile(i), *s.schedulers[i]);
  }
  if (written.ok() && IsMainProcess() && s.precision->grad_scaler() != nullptr) {
    written = checkpoint::SavePickle(staging + "/scaler.pt", s.precision->grad_scaler()->StateDict());
  }
  if (written.ok()) {
    absl::StatusOr<rng::RngState> rng = rng::CaptureRngState(s.generators);
    written = rng.ok() ? rng::SaveRngState(*rng, staging + "/" + RandomStatesFile(process_index()),
                                           rng::RngFileOptions{.accelerate_keys = true})
                       : rng.status();
  }
  RETURN_IF_ERROR(s.parallel.AgreeOnStatus(written, what));
  absl::Status committed = IsMainProcess() ? staged->Commit().status() : absl::OkStatus();
  RETURN_IF_ERROR(s.parallel.AgreeOnStatus(committed, what));
  ++save_iteration_;
  return final_path.string();
}

absl::Status Accelerator::LoadState(const std::string& dir) {
  AcceleratorState& s = *state_;
  absl::Status loaded = absl::OkStatus();
  if (s.model != nullptr) {
    if (s.strategy != nullptr) RETURN_IF_ERROR(s.strategy->BeginFullParameters());
    loaded = checkpoint::LoadModelWeightsInto(*s.model, dir).status();
    if (s.strategy != nullptr) RETURN_IF_ERROR(s.strategy->EndFullParameters(/*write_back=*/true));
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
    loaded = trainer::LoadGradScalerFile(dir, s.precision->grad_scaler());
  }
  if (loaded.ok()) {
    absl::StatusOr<rng::RngState> rng =
        rng::LoadRngState(dir + "/" + RandomStatesFile(process_index()));
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
