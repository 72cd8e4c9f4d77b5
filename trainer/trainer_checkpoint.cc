// Trainer::SaveCheckpoint / SaveModel / LoadForResume / FinishCheckpoints: HF's
// _save_checkpoint, save_model, _load_from_checkpoint + _load_optimizer_and_scheduler +
// _load_rng_state, and the end-of-training best-model handling (transformers 4.41), over
// checkpoint/folder (atomic folders) and trainer/checkpoint_io (files).
#include <filesystem>
#include <optional>

#include "absl/strings/str_cat.h"
#include "base/file_util.h"
#include "base/status_macros.h"
#include "checkpoint/folder/discovery.h"
#include "checkpoint/folder/rotation.h"
#include "checkpoint/folder/verify.h"
#include "checkpoint/rng_state_file.h"
#include "glog/logging.h"
#include "runtime/full_parameters.h"
#include "runtime/model_files.h"
#include "runtime/shared_staged_folder.h"
#include "trainer/checkpoint_io.h"
#include "trainer/trainer.h"
#include "runtime/strategy_setup.h"

namespace loom::trainer {
namespace {

absl::Status Rotate(const args::TrainingArguments& args, const TrainerState& state,
                    const std::string& run_dir) {
  checkpoint::RotationOptions options;
  if (args.has_save_total_limit()) options.save_total_limit = args.save_total_limit();
  options.best_model_checkpoint = state.best_model_checkpoint;
  ASSIGN_OR_RETURN(checkpoint::RotationResult r,
                   checkpoint::RotateCheckpoints(run_dir, options), "--save_total_limit");
  for (const auto& d : r.deleted) {
    LOG(INFO) << "Deleting older checkpoint [" << d.string() << "] due to args.save_total_limit";
  }
  for (const std::string& f : r.failures) LOG(WARNING) << "Could not rotate " << f;
  return absl::OkStatus();
}

// --restore_callback_states_from_checkpoint on a trainer_state.json without stateful_callbacks.
std::string NoCallbackStatesWarning(const std::string& dir) {
  return absl::StrCat(
      "--restore_callback_states_from_checkpoint: ", dir, "/", kTrainerStateFile,
      " has no stateful_callbacks: it was written for transformers 4.38, whose TrainerState "
      "has no such field (by HF 4.38's Trainer, or by loom with its default "
      "--save_for_transformers_version 4.38), so there are no callback states to restore; the "
      "callbacks start from their initial state. Save with --save_for_transformers_version 4.41 "
      "to keep them.");
}

}  // namespace

absl::Status Trainer::WithFullParameters(const std::function<absl::Status()>& fn,
                                         bool write_back) {
  return runtime::WithFullParameters(strategy_.get(), write_back, "the model's full parameters",
                                     fn);
}

bool Trainer::SavesNoWeights() const {
  return strategy_ != nullptr && deepspeed_.has_value() && deepspeed_->stage == 3 &&
         !deepspeed_->stage3_gather_16bit_weights_on_model_save;
}

sharding::StrategySaveInfo Trainer::StrategyInfo() const {
  sharding::StrategySaveInfo info;
  info.global_step = state_.global_step;
  info.global_samples = state_.global_step * args_.gradient_accumulation_steps() *
                        TrainBatchSize() * topology_.data_parallel_size;
  if (lr_scheduler_ != nullptr) info.lr_scheduler = lr_scheduler_->StateDict();
  return info;
}

absl::Status Trainer::LoadWeights(const std::string& dir, bool strategy_files_hold_them) {
  absl::Status loaded = absl::OkStatus();
  RETURN_IF_ERROR(WithFullParameters(
      [&] {
        loaded = runtime::LoadModelFiles(dir, model_.get());
        return loaded.code() == absl::StatusCode::kNotFound && strategy_files_hold_them
                   ? absl::OkStatus()
                   : loaded;
      },
      /*write_back=*/true));
  if (loaded.ok() || !strategy_files_hold_them) return absl::OkStatus();
  // ZeRO-3 without 16-bit weights on save: the weights are in the ZeRO files.
  LOG(INFO) << dir << " holds no weights file: loading the weights from its ZeRO-3 files";
  return strategy_->LoadState(dir);
}

absl::Status Trainer::SaveModel(std::optional<std::string> output_dir) {
  RETURN_IF_ERROR(SaveModelFiles(output_dir.value_or(args_.output_dir())));
  // HF: a save_model() call by the user pushes (blocking) with --push_to_hub.
  if (args_.push_to_hub()) return PushToHub("Model save", /*blocking=*/true);
  return absl::OkStatus();
}

absl::Status Trainer::SaveModelFiles(const std::string& dir) {
  if (strategy_ == nullptr) RETURN_IF_ERROR(runtime::MaterializeWholeModel(*model_));
  if (SavesNoWeights()) {
    // HF's save_model under ZeRO-3 when the 16-bit weights are not gathered: the DeepSpeed
    // checkpoint instead of a weights file (transformers 4.38 `Trainer.save_model`).
    LOG(WARNING) << " stage3_gather_16bit_weights_on_model_save=false. Saving the full "
                    "checkpoint instead, use zero_to_fp32.py to recover weights";
    absl::Status written = base::MakeDirs(dir);
    if (written.ok() && parallel_.ShouldSave(args_)) {
      written = runtime::WriteModelFiles(dir, *model_, runtime::TrainerModelFiles(args_, false));
      if (written.ok() && options_.save_tokenizer) written = options_.save_tokenizer(dir);
    }
    RETURN_IF_ERROR(parallel_.AgreeOnStatus(written, "saving the model"));
    return strategy_->SaveState(dir, StrategyInfo());
  }
  return WithFullParameters(
      [&]() -> absl::Status {
        if (!parallel_.ShouldSave(args_)) return absl::OkStatus();  // HF: args.should_save
        RETURN_IF_ERROR(base::MakeDirs(dir));
        RETURN_IF_ERROR(runtime::WriteModelFiles(dir, *model_, runtime::TrainerModelFiles(args_)));
        // HF's _save: the tokenizer accompanies the saved model.
        return options_.save_tokenizer ? options_.save_tokenizer(dir) : absl::OkStatus();
      },
      /*write_back=*/false);
}

absl::Status Trainer::UpdateBestMetric(const Metrics* metrics, const std::string& final_dir) {
  if (metrics == nullptr || args_.metric_for_best_model().empty()) return absl::OkStatus();
  std::string metric = args_.metric_for_best_model();
  if (metric.rfind("eval_", 0) != 0) metric = "eval_" + metric;
  ASSIGN_OR_RETURN(double value, MetricValue(*metrics, metric), "--metric_for_best_model");
  const bool better =
      !state_.best_metric.has_value() || !state_.best_model_checkpoint.has_value() ||
      (args_.greater_is_better() ? value > *state_.best_metric : value < *state_.best_metric);
  if (better) {
    state_.best_metric = value;
    state_.best_model_checkpoint = final_dir;
  }
  return absl::OkStatus();
}

CheckpointContents Trainer::ContentsToSave(bool saver, const ResumePosition& position,
                                           const rng::RngState& rng) const {
  CheckpointContents contents;
  contents.write_shared = saver;
  contents.rank = parallel_.rank();
  contents.world_size = parallel_.world_size();
  contents.model = model_.get();
  contents.model_weights = !SavesNoWeights();
  contents.state = &state_;
  contents.args = &args_;
  contents.position = &position;
  if (args_.save_only_model()) return contents;
  // A strategy that shards the optimizer state writes it itself (ZeRO: global_stepN/).
  contents.optimizer = StrategySavesState() ? nullptr : optimizer_.get();
  contents.scheduler = lr_scheduler_.get();
  contents.grad_scaler = precision_->grad_scaler();
  contents.rng = &rng;
  contents.epoch_start_rng = &epoch_start_rng_;
  // An epoch-end save can fall inside an accumulation window that the next epoch completes:
  // keep its (this rank's, not yet averaged) gradients so the resumed step is the same.
  if (position.total_batched_samples % args_.gradient_accumulation_steps() != 0) {
    for (const auto& p : model_->named_parameters()) {
      if (p.value().grad().defined()) contents.pending_grads.push_back({p.key(), p.value().grad()});
    }
  }
  return contents;
}

bool Trainer::StrategySavesState() const {
  // ZeRO-3 without gathered 16-bit weights keeps the weights only in its own files, so they
  // are written even with --save_only_model.
  return (!args_.save_only_model() || SavesNoWeights()) && strategy_->OwnsOptimizerState();
}

absl::Status Trainer::SaveCheckpoint(const Metrics* metrics) {
  // store_flos: the FLOPs so far belong to the saved state.
  state_.total_flos += current_flos_;
  current_flos_ = 0;
  const std::string name = absl::StrCat("checkpoint-", state_.global_step);
  // HF _get_output_dir: a trial's checkpoints go into its run folder.
  const std::string run_dir = RunDir();
  const std::string final_dir = absl::StrCat(run_dir, "/", name);
  RETURN_IF_ERROR(UpdateBestMetric(metrics, final_dir));
  // HF 4.41 refreshes only TrainerControl here; loom saves every stateful callback's state as it
  // is now, so a restored EarlyStoppingCallback continues with the right patience counter
  // (written only with --save_for_transformers_version 4.41; 4.38's TrainerState has no field).
  if (parallel_.ShouldSave(args_)) state_.stateful_callbacks = CallbackStates();
  // The saving rank (rank 0, or each node's local rank 0 with save_on_each_node) stages the
  // folder and writes the shared files; every rank writes its own RNG (rng_state_<rank>.pth,
  // as HF) and open-window gradients into it; the saver commits once all have finished.
  ASSIGN_OR_RETURN(runtime::SharedStagedFolder folder,
                   runtime::SharedStagedFolder::Begin(parallel_, args_, run_dir, name,
                                                      final_dir));
  ASSIGN_OR_RETURN(rng::RngState rng, rng::CaptureRngState(generators_));
  ResumePosition position = position_;
  position.tr_loss = tr_loss_.defined() ? tr_loss_.item<float>() : 0.0f;
  position.total_loss_scalar = total_loss_scalar_;
  position.globalstep_last_logged = globalstep_last_logged_;
  position.current_flos = current_flos_;
  const CheckpointContents contents = ContentsToSave(folder.saver(), position, rng);
  if (!contents.model_weights && folder.saver()) {
    LOG(WARNING) << " stage3_gather_16bit_weights_on_model_save=false. Saving the full "
                    "checkpoint instead, use zero_to_fp32.py to recover weights";
  }
  absl::Status written =
      contents.model_weights
          ? WithFullParameters([&] { return WriteCheckpointFiles(folder.path(), contents); },
                               /*write_back=*/false)
          : WriteCheckpointFiles(folder.path(), contents);
  if (written.ok() && folder.saver() && options_.save_tokenizer) {
    written = options_.save_tokenizer(folder.path());  // HF's _save writes it into checkpoints
  }
  if (written.ok() && StrategySavesState()) {
    written = strategy_->SaveState(folder.path(), StrategyInfo());
  }
  // HF order after the commit: the hub push (its files copied now, pushed in the background),
  // then rotation.
  return folder.Commit(written, [&]() -> absl::Status {
    if (hub_pusher_ != nullptr) RETURN_IF_ERROR(PushFromCheckpoint(final_dir));
    return Rotate(args_, state_, run_dir);
  });
}

absl::StatusOr<std::string> Trainer::ResolveResumeFolder(const ResumeFrom& resume) {
  checkpoint::VerifyOptions verify;
  verify.allow_missing_manifest = true;  // folders written by HF's Python Trainer
  if (resume.latest) {
    // Leftovers of a crash mid-save first (they may hold the only complete copy of a folder);
    // the saving rank cleans up while the others wait.
    absl::Status cleaned = absl::OkStatus();
    if (parallel_.ShouldSave(args_)) {
      absl::StatusOr<checkpoint::StaleCleanup> cleanup =
          checkpoint::RemoveStaleStaging(args_.output_dir());
      if (cleanup.ok()) {
        for (const std::string& r : cleanup->removed) {
          LOG(WARNING) << "Removed " << r << " (left by an interrupted save)";
        }
      }
      cleaned = cleanup.status();
    }
    RETURN_IF_ERROR_CTX(parallel_.AgreeOnStatus(cleaned, "cleaning up an interrupted save"),
                        "resume_from_checkpoint");
    checkpoint::DiscoveryOptions discovery;
    discovery.allow_missing_manifest = true;
    ASSIGN_OR_RETURN(checkpoint::LastCheckpoint last,
                     checkpoint::FindLastCheckpoint(args_.output_dir(), discovery),
                     "resume_from_checkpoint");
    for (const auto& skipped : last.skipped) {
      LOG(WARNING) << "Not resuming from " << skipped.ToString();
    }
    if (last.path.empty()) {
      return absl::NotFoundError(
          absl::StrCat("resume_from_checkpoint: No valid checkpoint found in output directory (",
                       args_.output_dir(), ")"));
    }
    return last.path.string();
  }
  std::string path = resume.path;
  std::error_code ec;
  const std::filesystem::path in_output = std::filesystem::path(args_.output_dir()) / path;
  if (!std::filesystem::exists(path, ec) && std::filesystem::path(path).is_relative() &&
      std::filesystem::is_directory(in_output, ec)) {
    // "last-checkpoint" (what hub_strategy checkpoint pushes) names output_dir/last-checkpoint
    // when the working directory has no such folder (HF's hub_strategy "checkpoint").
    path = in_output.string();
    LOG(INFO) << "resume_from_checkpoint " << resume.path << ": resuming from " << path;
  }
  RETURN_IF_ERROR_CTX(checkpoint::VerifyFolder(path, verify).status(), "resume_from_checkpoint");
  return path;
}

absl::StatusOr<Trainer::ResumedCheckpoint> Trainer::LoadForResume(
    const std::string& folder, int64_t num_update_steps_per_epoch) {
  ResumedCheckpoint out;
  out.folder = folder;
  const std::string& dir = out.folder;
  LOG(INFO) << "Loading model from " << dir << ".";
  // Weights first (a ZeRO-3 folder without a weights file gets them from its ZeRO files
  // below, which every rank loads anyway).
  RETURN_IF_ERROR(WithFullParameters(
      [&]() -> absl::Status {
        absl::Status s = runtime::LoadModelFiles(dir, model_.get());
        if (s.code() == absl::StatusCode::kNotFound && SavesNoWeights()) return absl::OkStatus();
        return s;
      },
      /*write_back=*/true));
  ASSIGN_OR_RETURN(TrainerState loaded, TrainerState::LoadFromJson(dir + "/" + kTrainerStateFile));
  ASSIGN_OR_RETURN(out.position, LoadResumePosition(dir, loaded, num_update_steps_per_epoch));
  // The loaded state keeps the run's log history, best metric and counters; the caller then
  // sets this run's plan (max_steps, epochs) over it, as HF does.
  state_ = std::move(loaded);
  if (args_.restore_callback_states_from_checkpoint()) {
    if (state_.stateful_callbacks.is_null()) {
      LOG(WARNING) << NoCallbackStatesWarning(dir);
    } else {
      RETURN_IF_ERROR(RestoreCallbackStates(state_.stateful_callbacks));
    }
  }
  RETURN_IF_ERROR(LoadOptimizerState(dir));
  RETURN_IF_ERROR(LoadProcessFiles(dir, out));
  return out;
}

absl::StatusOr<ResumePosition> Trainer::LoadResumePosition(const std::string& dir,
                                                           const TrainerState& loaded,
                                                           int64_t num_update_steps_per_epoch) {
  const int64_t ga = args_.gradient_accumulation_steps();
  absl::StatusOr<std::string> position_text = base::ReadFile(dir + "/" + kResumePositionFile);
  if (position_text.ok()) {
    ASSIGN_OR_RETURN(ResumePosition position, ResumePosition::FromJson(*position_text), dir);
    return position;
  }
  // A folder written by HF's Python Trainer: HF's own arithmetic (no straddling windows, the
  // running loss restarts at zero).
  LOG(WARNING) << dir << " has no " << kResumePositionFile
               << ": resuming with HF's data position (global_step based)";
  ResumePosition position;
  position.epoch = loaded.global_step / num_update_steps_per_epoch;
  position.micro_batches_in_epoch = (loaded.global_step % num_update_steps_per_epoch) * ga;
  position.total_batched_samples = loaded.global_step * ga;
  position.globalstep_last_logged = loaded.global_step;
  if (position.micro_batches_in_epoch == 0 && position.epoch > 0) {
    // At an epoch boundary HF restores the RNG state before the next epoch's DataLoader draws
    // its base seed (transformers 4.38 `_inner_training_loop`): the earlier epoch is finished.
    position.epoch -= 1;
    position.epoch_finished = true;
  }
  return position;
}

absl::Status Trainer::LoadOptimizerState(const std::string& dir) {
  const bool strategy_state = strategy_->OwnsOptimizerState();
  const char* optimizer_file = strategy_state ? "latest" : kOptimizerFile;
  if (args_.save_only_model() || !std::filesystem::exists(dir + "/" + optimizer_file)) {
    return absl::FailedPreconditionError(absl::StrCat(
        dir, " holds no ", optimizer_file,
        strategy_state
            ? " (no DeepSpeed ZeRO optimizer states: saved without ZeRO, or with "
              "--save_only_model); resume it without --deepspeed ZeRO (stage 0 or none), or "
              "start a new run initialised from its weights"
        : std::filesystem::exists(dir + "/latest")
            ? " but DeepSpeed ZeRO files: resume it with the sharding that wrote them (a "
              "--deepspeed config of zero_optimization stage 1, 2 or 3, or --fsdp full_shard / "
              "shard_grad_op)"
            : " (saved with --save_only_model): start a new run initialised from its "
              "weights instead",
        "."));
  }
  if (strategy_state) {
    // The ZeRO partitions of any world size, repartitioned for this one.
    RETURN_IF_ERROR(strategy_->LoadState(dir));
    RETURN_IF_ERROR(LoadSchedulerFile(dir, lr_scheduler_.get()));
  } else {
    RETURN_IF_ERROR(LoadOptimizerAndSchedulerFiles(dir, optimizer_.get(), lr_scheduler_.get()));
  }
  if (precision_->grad_scaler() != nullptr) {
    RETURN_IF_ERROR(runtime::LoadGradScalerFile(dir, precision_->grad_scaler()));
  }
  return absl::OkStatus();
}

absl::Status Trainer::LoadProcessFiles(const std::string& dir, ResumedCheckpoint& out) {
  const int64_t ga = args_.gradient_accumulation_steps();
  RETURN_IF_ERROR(LoadPendingGrads(dir, model_.get(), parallel_.rank(), parallel_.world_size()));
  const ProcessFileNames files = ProcessFiles(parallel_.rank(), parallel_.world_size());
  if (out.position.total_batched_samples % ga != 0 &&
      !std::filesystem::exists(dir + "/" + files.pending_grads)) {
    LOG(WARNING) << dir << " was saved inside an open accumulation window but has no "
                 << files.pending_grads << " for process " << parallel_.rank()
                 << " (saved with another number of processes?): the window's first "
                 << out.position.total_batched_samples % ga
                 << " micro-batches' gradients are lost, so the resumed step differs";
  }
  if (!std::filesystem::exists(dir + "/" + files.rng)) {
    // HF _load_rng_state: a run saved with another number of processes resumes without it.
    LOG(WARNING) << "Didn't find an RNG file for process " << parallel_.rank() << " (" << dir << "/"
                 << files.rng << "): if you are resuming a training saved with a "
                 << "different number of processes, reproducibility is not guaranteed.";
    ASSIGN_OR_RETURN(out.rng, rng::CaptureRngState(generators_));
    // The epoch's data order is the same on every process (all seed alike): re-create it from
    // the first process's epoch-start state, so that every rank of the new world size walks
    // the same order from the same position.
    for (const std::string& name :
         {ProcessFiles(0, 2).epoch_start_rng, ProcessFiles(0, 1).epoch_start_rng}) {
      if (std::filesystem::exists(dir + "/" + name)) {
        ASSIGN_OR_RETURN(out.epoch_start_rng, checkpoint::LoadRngState(dir + "/" + name));
        break;
      }
    }
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(out.rng, checkpoint::LoadRngState(dir + "/" + files.rng));
  if (std::filesystem::exists(dir + "/" + files.epoch_start_rng)) {
    ASSIGN_OR_RETURN(out.epoch_start_rng,
                     checkpoint::LoadRngState(dir + "/" + files.epoch_start_rng));
  }
  return absl::OkStatus();
}

Metrics Trainer::CallbackStates() const {
  Metrics states = Metrics::object();
  for (const auto& cb : callbacks_.callbacks()) {
    std::optional<Metrics> state = cb->ExportState();
    if (!state) continue;
    const std::string name = cb->Name();
    if (!states.contains(name)) {
      states[name] = *state;
    } else {
      if (!states[name].is_array()) states[name] = Metrics::array({states[name]});
      states[name].push_back(*state);
    }
  }
  Metrics control = Metrics::object();
  control["args"]["should_training_stop"] = control_.should_training_stop;
  control["args"]["should_epoch_stop"] = control_.should_epoch_stop;
  control["args"]["should_save"] = control_.should_save;
  control["args"]["should_evaluate"] = control_.should_evaluate;
  control["args"]["should_log"] = control_.should_log;
  control["attributes"] = Metrics::object();
  states["TrainerControl"] = control;
  return states;
}

absl::Status Trainer::RestoreCallbackStates(const Metrics& states) {
  for (auto it = states.begin(); it != states.end(); ++it) {
    const Metrics list = it->is_array() ? *it : Metrics::array({*it});
    if (it.key() == "TrainerControl") {
      const Metrics args = list.at(0).value("args", Metrics::object());
      control_.should_training_stop = args.value("should_training_stop", false);
      control_.should_epoch_stop = args.value("should_epoch_stop", false);
      control_.should_save = args.value("should_save", false);
      control_.should_evaluate = args.value("should_evaluate", false);
      control_.should_log = args.value("should_log", false);
      continue;
    }
    size_t next = 0;
    for (const auto& cb : callbacks_.callbacks()) {
      if (cb->Name() != it.key() || next >= list.size()) continue;
      RETURN_IF_ERROR_CTX(cb->RestoreState(list[next++]),
                          "--restore_callback_states_from_checkpoint");
    }
    if (next == 0) {
      LOG(WARNING) << "Checkpoint included callbacks not included in current configuration. "
                      "Ignoring. ("
                   << it.key() << ")";
    }
  }
  return absl::OkStatus();
}

absl::Status Trainer::LoadBestModelAtEnd() {
  if (!args_.load_best_model_at_end() || !state_.best_model_checkpoint) return absl::OkStatus();
  LOG(INFO) << "Loading best model from " << *state_.best_model_checkpoint
            << " (score: " << state_.best_metric.value_or(0) << ").";
  RETURN_IF_ERROR_CTX(LoadWeights(*state_.best_model_checkpoint, SavesNoWeights()),
                      "--load_best_model_at_end");
  return absl::OkStatus();
}

absl::Status Trainer::CleanUpCheckpointsAtEnd() {
  // HF: with save_total_limit 1 and a tracked best (metric_for_best_model), only the best
  // checkpoint is kept once training is over (rotation kept last + best until then).
  if (!parallel_.ShouldSave(args_) || !state_.best_model_checkpoint ||
      !args_.has_save_total_limit() || args_.save_total_limit() != 1) {
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(std::vector<std::filesystem::path> sorted,
                   checkpoint::SortedCheckpoints(RunDir(), state_.best_model_checkpoint),
                   "--save_total_limit");
  const std::filesystem::path best =
      std::filesystem::path(*state_.best_model_checkpoint).lexically_normal();
  for (const auto& c : sorted) {
    if (c.lexically_normal() == best) continue;
    LOG(INFO) << "Deleting older checkpoint [" << c.string() << "] due to args.save_total_limit";
    RETURN_IF_ERROR(checkpoint::DeleteCheckpointFolder(c));
  }
  return absl::OkStatus();
}

}  // namespace loom::trainer
