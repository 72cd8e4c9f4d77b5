// Trainer::Train: HF's _inner_training_loop and _maybe_log_save_evaluate (transformers
// 4.38–4.41 semantics).
#include <torch/optim/sgd.h>

#include <chrono>
#include <cmath>
#include <limits>
#include <memory>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "args/training_args.h"
#include "base/status_macros.h"
#include "base/torch_status.h"
#include "glog/logging.h"
#include "modeling/deferred_init.h"
#include "rng/rng_state.h"
#include "runtime/strategy_setup.h"
#include "sharding/create_strategy.h"
#include "sharding/strategy.h"
#include "trainer/checkpoint_io.h"
#include "trainer/neftune.h"
#include "trainer/trainer.h"

namespace loom::trainer {
namespace {

double NowSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// *_steps given as a ratio in [0, 1) of the total steps (as HF reads them).
int64_t AbsoluteSteps(double value, int64_t max_steps) {
  if (value < 1) return static_cast<int64_t>(std::ceil(max_steps * value));
  return static_cast<int64_t>(value);
}

// accelerate's should_reduce_batch_size: the out-of-memory messages it recognises.
bool IsOutOfMemory(const absl::Status& status) {
  for (const char* statement : {"CUDA out of memory.", "cuDNN error: CUDNN_STATUS_NOT_SUPPORTED.",
                                "DefaultCPUAllocator: can't allocate memory"}) {
    if (absl::StrContains(status.message(), statement)) return true;
  }
  return false;
}

}  // namespace

absl::StatusOr<TrainOutput> Trainer::Train(std::optional<ResumeFrom> resume) {
  is_in_train_ = true;
  memory_tracker_->Start("train");
  absl::StatusOr<TrainOutput> out = TrainWithBatchSizeSearch(resume);
  is_in_train_ = false;
  train_batch_size_ = 0;
  return out;
}

absl::StatusOr<TrainOutput> Trainer::TrainWithBatchSizeSearch(
    const std::optional<ResumeFrom>& resume) {
  try {
    if (options_.model_init) {
      // Each Train() starts from a fresh model (HF's model_init).
      RETURN_IF_ERROR(Seed());
      strategy_.reset();  // it holds the old model's parameters and hooks
      ASSIGN_OR_RETURN(model_, options_.model_init(), "model_init");
      RETURN_IF_ERROR(runtime::PlaceModel(*model_, device_));
      callbacks_.context().model = model_.get();
      optimizer_.reset();
      lr_scheduler_.reset();
      RETURN_IF_ERROR(PrepareModelFeatures());
    }
  } catch (const std::exception& e) {
    return base::TorchErrorToStatus(e, absl::StatusCode::kInternal, "model_init");
  }
  // HF activates NEFTune when train() starts; the hook goes when Train returns (HF removes it
  // after on_train_end; loom also on a failed run).
  modeling::ForwardHookHandle neftune;
  if (args_.has_neftune_noise_alpha()) {
    ASSIGN_OR_RETURN(neftune, ActivateNeftune(*model_, args_.neftune_noise_alpha()));
  }
  std::optional<std::string> resume_folder;
  if (resume.has_value()) {
    ASSIGN_OR_RETURN(resume_folder, ResolveResumeFolder(*resume));
  }
  // HF's find_executable_batch_size (accelerate 0.27): halve the per-device batch on an
  // out-of-memory error and run the inner loop again.
  ASSIGN_OR_RETURN(int64_t batch_size, InitialTrainBatchSize(resume_folder));
  while (true) {
    if (batch_size == 0) {
      return absl::ResourceExhaustedError(
          "--auto_find_batch_size: No executable batch size found, reached zero.");
    }
    train_batch_size_ = batch_size;
    absl::StatusOr<TrainOutput> out = InnerTrainingLoop(resume_folder);
    if (out.ok() || !args_.auto_find_batch_size() || !IsOutOfMemory(out.status())) return out;
    LOG(WARNING) << "--auto_find_batch_size: out of memory with a per-device train batch size of "
                 << batch_size << " (" << out.status().message() << "); retrying with "
                 << batch_size / 2;
    batch_size /= 2;
    // HF resets the dataloader, scheduler and state for the next attempt (the model keeps its
    // weights); loom also drops an optimizer it built, which HF keeps with the old attempt's
    // moments.
    if (strategy_ != nullptr) RETURN_IF_ERROR(strategy_->BeginFullParameters());
    strategy_.reset();
    if (!user_optimizer_) optimizer_.reset();
    model_->zero_grad();
  }
}

absl::StatusOr<Trainer::TrainingPlan> Trainer::PlanTraining(data::DataLoader& train_dataloader) {
  TrainingPlan plan;
  plan.ga = args_.gradient_accumulation_steps();
  plan.train_batch_size = TrainBatchSize();
  plan.total_train_batch_size = plan.train_batch_size * plan.ga * topology_.data_parallel_size;
  plan.len_dataloader = train_dataloader.NumBatches();
  const bool max_steps_given = args_.max_steps() > 0;
  if (plan.len_dataloader) {
    plan.num_update_steps_per_epoch = std::max<int64_t>(*plan.len_dataloader / plan.ga, 1);
    if (max_steps_given) {
      plan.max_steps = args_.max_steps();
      plan.num_train_epochs =
          plan.max_steps / plan.num_update_steps_per_epoch +
          (plan.max_steps % plan.num_update_steps_per_epoch > 0 ? 1 : 0);
      plan.num_train_samples = static_cast<double>(plan.max_steps * plan.total_train_batch_size);
    } else {
      plan.max_steps = static_cast<int64_t>(
          std::ceil(args_.num_train_epochs() * plan.num_update_steps_per_epoch));
      plan.num_train_epochs = static_cast<int64_t>(std::ceil(args_.num_train_epochs()));
      plan.num_train_samples = options_.train_dataset->Size() * args_.num_train_epochs();
    }
  } else if (max_steps_given) {
    plan.max_steps = args_.max_steps();
    plan.num_train_epochs = std::numeric_limits<int64_t>::max();
    plan.num_update_steps_per_epoch = plan.max_steps;
    plan.num_train_samples = static_cast<double>(plan.max_steps * plan.total_train_batch_size);
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        "--max_steps must be set to a positive value if the training dataset has no length, "
        "was ",
        args_.max_steps()));
  }
  if (args_.include_tokens_per_second()) {
    // HF num_tokens: the first batch times max_steps when max_steps is given, else one pass.
    ASSIGN_OR_RETURN(double tokens,
                     NumTokens(train_dataloader, max_steps_given
                                                     ? std::optional<int64_t>(args_.max_steps())
                                                     : std::nullopt));
    plan.num_train_tokens = max_steps_given ? tokens * plan.ga : tokens * args_.num_train_epochs();
  }
  return plan;
}

absl::Status Trainer::SetUpTraining(const TrainingPlan& plan) {
  state_ = TrainerState();
  // HF's _inner_training_loop: the trial's record in the state (hyperparameter search).
  state_.is_hyper_param_search = trial_.has_value();
  if (trial_) {
    state_.trial_name = trial_->trial_name;
    state_.trial_params = trial_->run.params;
  }
  state_.stateful_callbacks = CallbackStates();
  state_.train_batch_size = plan.train_batch_size;
  state_.logging_steps = AbsoluteSteps(args_.logging_steps(), plan.max_steps);
  state_.eval_steps = AbsoluteSteps(args_.eval_steps(), plan.max_steps);
  state_.save_steps = AbsoluteSteps(args_.save_steps(), plan.max_steps);
  // --deepspeed: the config resolved against these arguments, this model and step count,
  // and checked, before the optimizer exists (HF's deepspeed_init).
  deepspeed_.reset();
  if (!args_.deepspeed().empty()) {
    // The batch this run trains with (a resume on another world size or
    // --auto_find_batch_size changes it; HF's propagate_args_to_deepspeed likewise).
    args::TrainingArguments planned = args_;
    planned.set_per_device_train_batch_size(TrainBatchSize());
    ASSIGN_OR_RETURN(deepspeed_, runtime::PlanDeepSpeedForModel(
                                     planned, topology_.data_parallel_size, *model_, plan.max_steps));
    for (const std::string& w : deepspeed_->warnings) LOG(WARNING) << "--deepspeed: " << w;
    if (is_world_process_zero()) LOG(INFO) << deepspeed_->Echo();
    if (deepspeed_progress_) deepspeed_progress_->set_steps_per_print(deepspeed_->steps_per_print);
  }
  RETURN_IF_ERROR(CreateOptimizerAndScheduler(plan.max_steps));
  RETURN_IF_ERROR(ReplaceStrategy(optimizer_.get()));
  const sharding::ModelStateBytes bytes = strategy_->StateBytes();
  LOG(INFO) << "data parallelism: " << strategy_->Name()
            << "; model state on this rank: " << bytes.Describe()
            << (bytes.optimizer_states == 0 ? " (the optimizer allocates its states at the first "
                                              "step; their size is logged then)"
                                            : "");
  return absl::OkStatus();
}

// The data-parallel strategy, chosen once per run (runtime/strategy_setup.h), over `optimizer`.
absl::Status Trainer::ReplaceStrategy(torch::optim::Optimizer* optimizer) {
  if (strategy_ != nullptr) {
    // A strategy of an earlier run (or attempt) may hold the parameters as shards: whole again
    // before it goes.
    RETURN_IF_ERROR_CTX(strategy_->BeginFullParameters(), "setting up data parallelism");
    strategy_.reset();
  }
  ASSIGN_OR_RETURN(strategy_,
                   runtime::SetUpStrategy({.args = &args_,
                                           .model = model_.get(),
                                           .optimizer = optimizer,
                                           .precision = precision_.get(),
                                           .parallel = &parallel_,
                                           .deepspeed = deepspeed_ ? &*deepspeed_ : nullptr,
                                           .factory = options_.strategy_factory}),
                   "setting up data parallelism");
  return absl::OkStatus();
}

absl::Status Trainer::SetUpZeroInference() {
  if (strategy_ != nullptr || is_in_train_) return absl::OkStatus();
  if (args_.deepspeed().empty()) return SetUpDeferredFsdpInference();
  // HF's deepspeed_init(inference=True): the config without its optimizer and scheduler
  // sections, which must be ZeRO stage 3.
  ASSIGN_OR_RETURN(deepspeed_, runtime::PlanDeepSpeedForModel(args_, topology_.data_parallel_size,
                                                              *model_, /*num_training_steps=*/0),
                   "--deepspeed inference");
  if (deepspeed_->stage != 3) {
    const int stage = deepspeed_->stage;
    deepspeed_.reset();
    return absl::InvalidArgumentError(absl::StrCat(
        "--deepspeed: ZeRO inference only makes sense with ZeRO Stage 3 - please adjust your "
        "config (evaluating or predicting without training under ZeRO stage ",
        stage, "; set zero_optimization.stage to 3, or drop --deepspeed)"));
  }
  return SetUpInferenceStrategy("ZeRO-3 inference");
}

absl::Status Trainer::SetUpDeferredFsdpInference() {
  // HF's evaluation_loop prepares the model with FSDP (accelerator.prepare_model(model,
  // evaluation_mode=True)); loom evaluates a whole model as it is, and shards one built with
  // deferred parameters, which no rank could hold whole.
  if (args_.fsdp_size() == 0 || !modeling::AnyDeferred(*model_)) return absl::OkStatus();
  ASSIGN_OR_RETURN(std::shared_ptr<const sharding::StrategyFactory> factory,
                   sharding::ResolveStrategyFactory(args_, options_.strategy_factory), "--fsdp");
  ASSIGN_OR_RETURN(const bool sharded, factory->ShardsParameters(args_), "--fsdp");
  if (!sharded) return absl::OkStatus();
  return SetUpInferenceStrategy("FSDP inference");
}

absl::Status Trainer::SetUpInferenceStrategy(const std::string& what) {
  // The parameter shards are laid out per optimizer group: a placeholder optimizer with one
  // group over every parameter, never stepped and stateless (plain SGD), stands in for the one
  // inference has none of.
  std::vector<at::Tensor> params;
  for (const at::Tensor& p : model_->parameters()) params.push_back(p);
  inference_optimizer_ = std::make_unique<torch::optim::SGD>(
      params, torch::optim::SGDOptions(/*lr=*/0.0));
  RETURN_IF_ERROR(ReplaceStrategy(inference_optimizer_.get()));
  LOG(INFO) << what << ": " << strategy_->Name()
            << "; model state on this rank: " << strategy_->StateBytes().Describe()
            << " (no optimizer state)";
  return absl::OkStatus();
}

absl::StatusOr<std::optional<Trainer::ResumedCheckpoint>> Trainer::StartPosition(
    const std::optional<std::string>& resume_folder, const TrainingPlan& plan) {
  // Where this run starts: the beginning, or a checkpoint's exact position.
  position_ = ResumePosition();
  model_->zero_grad();  // before a resume puts back an open window's gradients
  std::optional<ResumedCheckpoint> resumed;
  if (resume_folder.has_value()) {
    ASSIGN_OR_RETURN(resumed, LoadForResume(*resume_folder, plan.num_update_steps_per_epoch));
    position_ = resumed->position;
  }
  state_.max_steps = plan.max_steps;
  state_.num_train_epochs = plan.num_train_epochs;
  state_.is_local_process_zero = is_local_process_zero();
  state_.is_world_process_zero = is_world_process_zero();
  // HF keeps the running loss as a float32 tensor on the device.
  tr_loss_ =
      at::full({}, position_.tr_loss, at::TensorOptions().dtype(at::kFloat).device(device_));
  total_loss_scalar_ = position_.total_loss_scalar;
  globalstep_last_logged_ = position_.globalstep_last_logged;
  current_flos_ = position_.current_flos;
  return resumed;
}

double Trainer::ClipThreshold() const {
  // --max_grad_norm, or under --deepspeed the config's gradient_clipping (DeepSpeed clips; HF
  // still logs the norm while --max_grad_norm > 0, so without a threshold it is computed and
  // nothing is clipped: +inf).
  if (!deepspeed_) return args_.max_grad_norm();
  return deepspeed_->gradient_clipping > 0 ? deepspeed_->gradient_clipping
         : args_.max_grad_norm() > 0       ? std::numeric_limits<double>::infinity()
                                           : 0.0;
}

absl::StatusOr<TrainOutput> Trainer::InnerTrainingLoop(
    const std::optional<std::string>& resume_folder) {
  try {
    // HF: a scheduler the Trainer built is built again for this loop's number of steps.
    if (created_lr_scheduler_) {
      lr_scheduler_.reset();
      created_lr_scheduler_ = false;
    }
    // A step interrupted by an error (e.g. out of memory in the optimizer) left no half-done
    // loss-scaling state behind.
    precision_->ResetStep();
    const double start_time = NowSeconds();
    ASSIGN_OR_RETURN(std::unique_ptr<data::DataLoader> train_dataloader, GetTrainDataloader(),
                     "train dataloader");
    ASSIGN_OR_RETURN(const TrainingPlan plan, PlanTraining(*train_dataloader));
    RETURN_IF_ERROR(SetUpTraining(plan));
    ASSIGN_OR_RETURN(const std::optional<ResumedCheckpoint> resumed,
                     StartPosition(resume_folder, plan));
    CallbackContext& ctx = callbacks_.context();
    ctx.model = model_.get();
    ctx.optimizer = optimizer_.get();
    ctx.lr_scheduler = lr_scheduler_.get();
    ctx.train_dataloader = train_dataloader.get();
    LOG(INFO) << "***** Running training *****\n  Num Epochs = " << plan.num_train_epochs
              << "\n  Instantaneous batch size per device = " << plan.train_batch_size
              << "\n  Total train batch size (w. parallel, distributed & accumulation) = "
              << plan.total_train_batch_size << "\n  Gradient Accumulation steps = " << plan.ga
              << "\n  Total optimization steps = " << plan.max_steps;
    RETURN_IF_ERROR(callbacks_.OnTrainBegin(args_, state_, control_));
    RETURN_IF_ERROR(RunEpochs(*train_dataloader, plan, resumed));
    ASSIGN_OR_RETURN(TrainOutput output, FinishTraining(plan, start_time));
    ctx.train_dataloader = nullptr;
    return output;
  } catch (const std::exception& e) {
    absl::Status s = base::TorchErrorToStatus(
        e, absl::StatusCode::kInternal, absl::StrCat("training at step ", state_.global_step));
    // What the model state takes on this rank, and how to hold less of it.
    if (IsOutOfMemory(s) && strategy_ != nullptr) s = runtime::WithOutOfMemoryAdvice(s, *strategy_);
    return s;
  }
}

absl::Status Trainer::RunEpochs(data::DataLoader& train_dataloader, const TrainingPlan& plan,
                                const std::optional<ResumedCheckpoint>& resumed) {
  EpochLoop loop;
  loop.total_batched_samples = position_.total_batched_samples;
  loop.clip_threshold = ClipThreshold();
  int64_t first_epoch = position_.epoch + (position_.epoch_finished ? 1 : 0);
  // A checkpoint of the final step has nothing left to train (HF: no epochs remain).
  if (resumed && state_.global_step >= plan.max_steps) first_epoch = plan.num_train_epochs;
  if (resumed && position_.epoch_finished) {
    // Nothing draws between an epoch-end save and the next epoch's start.
    RETURN_IF_ERROR_CTX(rng::RestoreRngState(resumed->rng, &generators_), "resuming RNG state");
  }
  for (int64_t epoch = first_epoch; epoch < plan.num_train_epochs; ++epoch) {
    const bool resume_mid_epoch = resumed && !position_.epoch_finished && epoch == first_epoch;
    RETURN_IF_ERROR(RunEpoch(train_dataloader, plan, epoch,
                             resume_mid_epoch ? &*resumed : nullptr, loop));
    if (control_.should_training_stop) break;
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<data::BatchIterator>> Trainer::BeginEpoch(
    data::DataLoader& train_dataloader, int64_t epoch, const ResumedCheckpoint* resumed,
    int64_t* skip) {
  *skip = 0;
  if (resumed != nullptr) {
    // Re-create the epoch's order from the RNG state it started with, then continue from the
    // checkpoint's RNG state at its micro-batch (HF's skip_first_batches + rng sync).
    if (resumed->epoch_start_rng) {
      RETURN_IF_ERROR_CTX(rng::RestoreRngState(*resumed->epoch_start_rng, &generators_),
                          "resuming the epoch's RNG state");
    }
    *skip = args_.ignore_data_skip() ? 0 : position_.micro_batches_in_epoch;
  }
  ASSIGN_OR_RETURN(epoch_start_rng_, rng::CaptureRngState(generators_));
  position_.epoch = epoch;
  position_.epoch_finished = false;
  RETURN_IF_ERROR(callbacks_.OnEpochBegin(args_, state_, control_));
  ASSIGN_OR_RETURN(std::unique_ptr<data::BatchIterator> it,
                   train_dataloader.Epoch(epoch, *skip),
                   absl::StrCat("train dataloader, epoch ", epoch));
  if (resumed != nullptr) {
    RETURN_IF_ERROR_CTX(rng::RestoreRngState(resumed->rng, &generators_), "resuming RNG state");
  }
  return it;
}

absl::Status Trainer::RunEpoch(data::DataLoader& train_dataloader, const TrainingPlan& plan,
                               int64_t epoch, const ResumedCheckpoint* resumed, EpochLoop& loop) {
  const int64_t steps_in_epoch =
      plan.len_dataloader ? *plan.len_dataloader : args_.max_steps() * plan.ga;
  int64_t skip = 0;
  ASSIGN_OR_RETURN(std::unique_ptr<data::BatchIterator> it,
                   BeginEpoch(train_dataloader, epoch, resumed, &skip));
  int64_t step = skip - 1;
  while (true) {
    ASSIGN_OR_RETURN(std::optional<data::Batch> batch, it->Next(),
                     absl::StrCat("train dataloader, epoch ", epoch, ", batch ", step + 1));
    if (!batch) break;
    ++step;
    ++loop.total_batched_samples;
    // This micro-batch closes an accumulation window: the optimizer steps after it, so its
    // backward must leave the gradients averaged over ranks (DDP; no traffic otherwise).
    const bool last_step_of_short_epoch = steps_in_epoch <= plan.ga && step + 1 == steps_in_epoch;
    const bool closes_window =
        loop.total_batched_samples % plan.ga == 0 || last_step_of_short_epoch;
    RETURN_IF_ERROR(TrainMicroBatch(*batch, step, closes_window, loop));
    if (closes_window) {
      state_.epoch = epoch + static_cast<double>(step + 1) / steps_in_epoch;
      RETURN_IF_ERROR(callbacks_.OnStepEnd(args_, state_, control_));
      position_.micro_batches_in_epoch = step + 1;
      position_.total_batched_samples = loop.total_batched_samples;
      RETURN_IF_ERROR(MaybeLogSaveEvaluate(tr_loss_, loop.grad_norm));
    } else {
      RETURN_IF_ERROR(callbacks_.OnSubstepEnd(args_, state_, control_));
    }
    if (control_.should_epoch_stop || control_.should_training_stop) break;
  }
  if (step < 0 && skip == 0) {
    LOG(WARNING) << "There seems to be not a single sample in your epoch_iterator, stopping "
                    "training at step "
                 << state_.global_step
                 << "! This is expected if you're using an IterableDataset and set num_steps ("
                 << plan.max_steps << ") higher than the number of available samples.";
    control_.should_training_stop = true;
  }
  RETURN_IF_ERROR(callbacks_.OnEpochEnd(args_, state_, control_));
  position_.micro_batches_in_epoch = step + 1;
  position_.total_batched_samples = loop.total_batched_samples;
  position_.epoch_finished = true;
  return MaybeLogSaveEvaluate(tr_loss_, loop.grad_norm);
}

absl::Status Trainer::TrainMicroBatch(data::Batch& batch, int64_t step, bool closes_window,
                                      EpochLoop& loop) {
  if (args_.include_num_input_tokens_seen()) {
    auto input = batch.find(model_->MainInputName());
    if (input != batch.end()) state_.num_input_tokens_seen += input->second.numel();
  }
  if (step % args_.gradient_accumulation_steps() == 0) {
    RETURN_IF_ERROR(callbacks_.OnStepBegin(args_, state_, control_));
  }
  const std::string where = absl::StrCat("training step ", state_.global_step + 1);
  RETURN_IF_ERROR_CTX(strategy_->BeforeForward(closes_window), where);
  ASSIGN_OR_RETURN(at::Tensor tr_loss_step, TrainingStep(*model_, batch), where);
  RETURN_IF_ERROR_CTX(strategy_->AfterBackward(), where);
  if (args_.logging_nan_inf_filter() &&
      (at::isnan(tr_loss_step).item<bool>() || at::isinf(tr_loss_step).item<bool>())) {
    // A nan/inf step adds the average of the losses logged so far in this window.
    tr_loss_ += tr_loss_ / static_cast<double>(1 + state_.global_step - globalstep_last_logged_);
  } else {
    tr_loss_ += tr_loss_step;
  }
  current_flos_ += FloatingPointOps(batch);
  if (!closes_window) return absl::OkStatus();
  // Unscaled (--fp16's GradScaler), then the norm over every shard, clipped; HF logs the last
  // window's norm while max_grad_norm > 0.
  ASSIGN_OR_RETURN(std::optional<double> norm, strategy_->ClipGradients(loop.clip_threshold),
                   where);
  if (norm && args_.max_grad_norm() > 0) loop.grad_norm = norm;
  ASSIGN_OR_RETURN(const bool stepped, strategy_->OptimizerStep(), where);
  // HF: a step the GradScaler skipped (inf/nan gradients) does not step the scheduler.
  if (stepped && !lr_scheduler_->steps_on_metric()) lr_scheduler_->Step();
  strategy_->ZeroGrad();
  state_.global_step += 1;
  if (state_.global_step == 1) {
    LOG(INFO) << "model state on this rank after the first step: "
              << strategy_->StateBytes().Describe();
  }
  return absl::OkStatus();
}

absl::StatusOr<TrainOutput> Trainer::FinishTraining(const TrainingPlan& plan,
                                                    double start_time) {
  // Every rank gets here before the best model (saved by the main process) is read.
  RETURN_IF_ERROR(parallel_.Barrier());
  RETURN_IF_ERROR(LoadBestModelAtEnd());
  // The loss of the last logging window, averaged over ranks like the logged ones (HF adds
  // this rank's alone here; the mean gives every rank the same train_loss).
  ASSIGN_OR_RETURN(float last_window_loss, parallel_.MeanFloat(tr_loss_.item<float>()));
  total_loss_scalar_ += last_window_loss;
  const double effective_global_step = std::max<double>(state_.global_step, 0.001);
  const double train_loss = total_loss_scalar_ / effective_global_step;
  Metrics metrics = SpeedMetrics("train", start_time, NowSeconds(), plan.num_train_samples,
                                 static_cast<double>(state_.max_steps), plan.num_train_tokens);
  state_.total_flos += current_flos_;
  current_flos_ = 0;
  metrics["total_flos"] = state_.total_flos;
  metrics["train_loss"] = train_loss;
  is_in_train_ = false;
  memory_tracker_->StopAndUpdateMetrics("train", &metrics);
  RETURN_IF_ERROR(Log(metrics));
  RETURN_IF_ERROR(CleanUpCheckpointsAtEnd());
  RETURN_IF_ERROR(callbacks_.OnTrainEnd(args_, state_, control_));
  FinishCurrentPush();  // HF: wait for the checkpoint push to be uploaded
  TrainOutput output;
  output.global_step = state_.global_step;
  output.training_loss = train_loss;
  output.metrics = std::move(metrics);
  return output;
}

absl::StatusOr<int64_t> Trainer::InitialTrainBatchSize(
    const std::optional<std::string>& resume_folder) {
  const int64_t configured = args::TrainBatchSizePerDevice(args_);
  if (args_.auto_find_batch_size() && device_.is_cpu()) {
    LOG(INFO) << "--auto_find_batch_size: on CPU loom retries only when an allocation fails "
                 "(\"DefaultCPUAllocator: can't allocate memory\"); with Linux's memory "
                 "overcommit a too-large batch may be stopped by the OOM killer instead";
  }
  if (!resume_folder.has_value()) return configured;
  // HF's train(): "In case of repeating the find_executable_batch_size, set
  // self._train_batch_size properly" — from the checkpoint, on every resume.
  ASSIGN_OR_RETURN(TrainerState saved,
                   TrainerState::LoadFromJson(*resume_folder + "/" + kTrainerStateFile));
  if (!saved.train_batch_size.has_value()) return configured;
  // A checkpoint of another number of processes (ZeRO's are read on any): keep its global batch
  // (HF would keep the per-device one and change the global batch with the world size).
  const int saved_world = SavedWorldSize(*resume_folder);
  const int world = parallel_.world_size();
  if (saved_world > 0 && saved_world != world &&
      (*saved.train_batch_size * saved_world) % world == 0) {
    const int64_t per_device = *saved.train_batch_size * saved_world / world;
    LOG(WARNING) << *resume_folder << " was saved by " << saved_world << " processes with "
                 << *saved.train_batch_size << " samples each; resuming on " << world << " with "
                 << per_device << " each, the same global batch";
    return per_device;
  }
  if (*saved.train_batch_size != configured) {
    LOG(WARNING) << "Resuming with the checkpoint's per-device train batch size "
                 << *saved.train_batch_size << ", not --per_device_train_batch_size " << configured
                 << " (HF takes train_batch_size from trainer_state.json)";
  }
  return *saved.train_batch_size;
}

absl::StatusOr<double> Trainer::NumTokens(data::DataLoader& dataloader,
                                          std::optional<int64_t> max_steps) {
  ASSIGN_OR_RETURN(std::unique_ptr<data::BatchIterator> it, dataloader.Epoch(0),
                   "--include_tokens_per_second");
  double tokens = 0;
  const std::string input = model_->MainInputName();
  while (true) {
    ASSIGN_OR_RETURN(std::optional<data::Batch> batch, it->Next(), "--include_tokens_per_second");
    if (!batch) break;
    auto found = batch->find(input);
    if (found == batch->end()) {
      LOG(WARNING) << "Cannot get num_tokens from dataloader: batches have no '" << input << "'";
      return tokens;
    }
    const double n = static_cast<double>(found->second.numel());
    if (max_steps) return n * static_cast<double>(*max_steps);
    tokens += n;
  }
  return tokens;
}

absl::Status Trainer::MaybeLogSaveEvaluate(at::Tensor& tr_loss, std::optional<double> grad_norm) {
  if (control_.should_log && state_.global_step > globalstep_last_logged_) {
    Metrics logs = Metrics::object();
    // HF: _nested_gather(tr_loss).mean().item(), the float32 mean over ranks.
    ASSIGN_OR_RETURN(const float mean_loss, parallel_.MeanFloat(tr_loss.item<float>()),
                     "gathering the training loss");
    const double tr_loss_scalar = mean_loss;
    tr_loss.zero_();
    logs["loss"] = PyRound(
        tr_loss_scalar / static_cast<double>(state_.global_step - globalstep_last_logged_), 4);
    if (grad_norm) logs["grad_norm"] = *grad_norm;
    logs["learning_rate"] = CurrentLearningRate();
    total_loss_scalar_ += tr_loss_scalar;
    globalstep_last_logged_ = state_.global_step;
    state_.total_flos += current_flos_;
    current_flos_ = 0;
    RETURN_IF_ERROR(Log(logs));
  }
  std::optional<Metrics> metrics;
  if (control_.should_evaluate) {
    ASSIGN_OR_RETURN(metrics, EvaluateDuringTraining());
  }
  if (control_.should_save) {
    RETURN_IF_ERROR(SaveCheckpoint(metrics ? &*metrics : nullptr));
    RETURN_IF_ERROR(callbacks_.OnSave(args_, state_, control_));
  }
  return absl::OkStatus();
}

absl::StatusOr<Metrics> Trainer::EvaluateDuringTraining() {
  ASSIGN_OR_RETURN(Metrics metrics, Evaluate());
  RETURN_IF_ERROR(ReportToHpSearch(metrics));  // HF _evaluate: before the delayed scheduler
  // reduce_lr_on_plateau steps on the tracked metric once it exists (HF _evaluate).
  if (lr_scheduler_ != nullptr && lr_scheduler_->steps_on_metric()) {
    std::string name = args_.metric_for_best_model();
    if (name.rfind("eval_", 0) != 0) name = "eval_" + name;
    ASSIGN_OR_RETURN(double value, MetricValue(metrics, name),
                     "--lr_scheduler_type reduce_lr_on_plateau");
    lr_scheduler_->StepOnMetric(value);
  }
  return metrics;
}

}  // namespace loom::trainer
