// Trainer: HF's Trainer loop on LibTorch (transformers 4.38–4.41 Trainer).
//
// Contract:
//   - Create(options) resolves the arguments (args::PostInit), seeds every generator
//     (set_seed / full_determinism), places the model, installs the default callbacks
//     (DefaultFlowCallback, TensorBoard when report_to has it, then the caller's, then
//     PrinterCallback with disable_tqdm or ProgressCallback) and fires on_init_end.
//   - Train() runs HF's _inner_training_loop (transformers 4.38–4.41 semantics): seeded per-epoch
//     data order, gradient accumulation counted across epochs with the short-epoch rule, loss /
//     gradient_accumulation_steps, clipping with the pre-clip grad_norm logged, optimizer +
//     scheduler steps, the callback events in HF's order, logging / evaluation / saving per the
//     strategies, and the final metrics (train_runtime, train_samples_per_second,
//     train_steps_per_second, total_flos, train_loss, epoch).
//   - Evaluate() runs the evaluation loop on the eval dataset(s): one dataset gives
//     "eval_"-prefixed metrics, named datasets give "eval_<name>_"-prefixed ones.
//     Predict() returns predictions, label ids and "test_"-prefixed metrics.
//   - The hooks HF documents for subclassing (compute_loss, training_step, ...) are virtual:
//     subclass Trainer, override them, and construct the subclass with Create<MyTrainer>(options).
//   - Errors from LibTorch (c10::Error) are caught here and come back as Status naming the
//     stage; a failed Train() leaves the output directory's existing checkpoints untouched.
//
// Example:
//   TrainerOptions options;
//   options.model = std::make_shared<MyModel>();
//   options.args = parsed_args;
//   options.train_dataset = train;
//   options.eval_dataset = eval;
//   ASSIGN_OR_RETURN(std::unique_ptr<Trainer> trainer, Trainer::Create(std::move(options)));
//   ASSIGN_OR_RETURN(TrainOutput out, trainer->Train());
//   trainer->LogMetrics("train", out.metrics);
//   RETURN_IF_ERROR(trainer->SaveMetrics("train", out.metrics));
#ifndef LOOM_TRAINER_TRAINER_H_
#define LOOM_TRAINER_TRAINER_H_

#include <torch/optim/optimizer.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "args/training_args.pb.h"
#include "data/batch.h"
#include "data/collator.h"
#include "data/data_loader.h"
#include "data/dataset.h"
#include "data/shard_sampler.h"
#include "distributed/process_group.h"
#include "optim/lr_scheduler.h"
#include "precision/policy.h"
#include "precision/training_precision.h"
#include "rng/host_generator.h"
#include "rng/rng_state.h"
#include "sharding/zero/deepspeed_plan.h"
#include "sharding/strategy.h"
#include "sharding/strategy_registry.h"
#include "threads/thread_plan.h"
#include "trainer/callback.h"
#include "trainer/checkpoint_io.h"
#include "trainer/flow_callbacks.h"
#include "trainer/hp_search.h"
#include "trainer/memory_tracker.h"
#include "trainer/metrics.h"
#include "trainer/model.h"
#include "trainer/model_card.h"
#include "runtime/parallel_context.h"
#include "trainer/resume_position.h"
#include "trainer/trainer_state.h"

namespace loom::hub {
class HubPusher;
}  // namespace loom::hub

namespace loom::trainer {

// What compute_metrics receives (HF EvalPrediction). predictions holds the model outputs kept
// for metrics (usually just the logits), label_ids one tensor per label name; inputs is the
// main input when include_inputs_for_metrics is set.
struct EvalPrediction {
  std::vector<at::Tensor> predictions;
  std::vector<at::Tensor> label_ids;
  at::Tensor inputs;
};

using ComputeMetricsFn = std::function<absl::StatusOr<Metrics>(const EvalPrediction&)>;
// preprocess_logits_for_metrics(logits, labels): labels is undefined when the data has none.
using PreprocessLogitsFn = std::function<at::Tensor(const at::Tensor&, const at::Tensor&)>;

struct EvalLoopOutput {
  std::vector<at::Tensor> predictions;
  std::vector<at::Tensor> label_ids;
  Metrics metrics = Metrics::object();
  int64_t num_samples = 0;
};

struct PredictionOutput {
  std::vector<at::Tensor> predictions;
  std::vector<at::Tensor> label_ids;  // empty when the dataset has no labels
  Metrics metrics = Metrics::object();
};

struct TrainOutput {
  int64_t global_step = 0;
  double training_loss = 0;
  Metrics metrics = Metrics::object();
};

struct LossOutput {
  at::Tensor loss;
  std::optional<ModelOutput> outputs;  // set when return_outputs was requested
};

struct PredictionStepOutput {
  at::Tensor loss;                 // undefined without labels
  std::vector<at::Tensor> logits;  // empty with prediction_loss_only
  std::vector<at::Tensor> labels;  // empty without labels
};

struct TrainerOptions {
  // The model, or a factory called at every Train() (model_init); one of them is required.
  std::shared_ptr<Model> model;
  std::function<absl::StatusOr<std::shared_ptr<Model>>()> model_init;
  args::TrainingArguments args;
  // Defaults to DefaultCollator.
  std::shared_ptr<const data::Collator> data_collator;
  // A map-style or (with max_steps) an iterable training dataset.
  std::shared_ptr<const data::Dataset> train_dataset;
  std::shared_ptr<data::IterableDataset> train_iterable_dataset;
  // One evaluation dataset, or several named ones (metrics prefixed "eval_<name>_").
  std::shared_ptr<const data::Dataset> eval_dataset;
  std::vector<std::pair<std::string, std::shared_ptr<const data::Dataset>>> eval_datasets;
  // HF's `tokenizer` argument, as the one thing the Trainer does with it: write its files
  // (tokenizer.save_pretrained(dir)) next to every saved model — SaveModel's folder and each
  // checkpoint (whose copy a hub push puts into output_dir). Unset: none.
  std::function<absl::Status(const std::string& dir)> save_tokenizer;
  // The tokenizer's pad_token_id (its eos_token_id when it has no pad token): what
  // Seq2SeqTrainer pads generated tokens and labels with (HF's _pad_tensors_to_max_len).
  std::optional<int64_t> tokenizer_pad_token_id;
  ComputeMetricsFn compute_metrics;
  PreprocessLogitsFn preprocess_logits_for_metrics;
  std::vector<std::shared_ptr<TrainerCallback>> callbacks;
  // optimizers=(optimizer, scheduler): used instead of the ones built from the arguments.
  std::unique_ptr<torch::optim::Optimizer> optimizer;
  std::unique_ptr<optim::LrScheduler> lr_scheduler;
  // The precision to train in; unset: resolved from the arguments for this machine
  // (precision/policy.h). Set it to train in a policy the flags do not express (e.g. the
  // GradScaler path on a CPU, for tests).
  std::optional<precision::PrecisionPolicy> precision;
  // The thread counts to train with; unset: decided from the machine and the environment
  // (threads/thread_plan.h). Benchmarks comparing thread settings set it.
  std::optional<threads::ThreadPlan> threads;
  // The process group of a multi-process run; unset: read from the launcher's environment
  // (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT), one process when there is none. A group is
  // created once per process (rank 0 hosts its store on MASTER_PORT): a second Trainer in the
  // same launched process must be given the first one's `parallel().process_group()`.
  std::optional<distributed::ProcessGroup> process_group;
  // The data-parallel strategy's factory; unset: the registered one the arguments select
  // (--deepspeed, --fsdp, else DDP / one process; sharding/create_strategy.h). A program's own
  // strategy (sharding/strategy_registry.h) trains through the same loop.
  std::shared_ptr<const sharding::StrategyFactory> strategy_factory;
};

class Trainer {
 public:
  explicit Trainer(TrainerOptions options);
  virtual ~Trainer();
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  // Builds T (Trainer or a subclass) and runs Init().
  template <typename T = Trainer>
  static absl::StatusOr<std::unique_ptr<T>> Create(TrainerOptions options) {
    auto trainer = std::make_unique<T>(std::move(options));
    absl::Status status = trainer->Init();
    if (!status.ok()) return status;
    return trainer;
  }
  absl::Status Init();

  // Trains from scratch or, with `resume`, continues a checkpoint's run exactly where it
  // stopped (model, optimizer, scheduler, every RNG, data position, log history).
  absl::StatusOr<TrainOutput> Train(std::optional<ResumeFrom> resume = std::nullopt);
  // The per-device train batch size of the run in progress (HF's _train_batch_size: smaller
  // than the argument after --auto_find_batch_size halved it).
  int64_t TrainBatchSize() const;
  // Evaluates the configured eval dataset(s).
  absl::StatusOr<Metrics> Evaluate(const std::vector<std::string>& ignore_keys = {});
  virtual absl::StatusOr<Metrics> Evaluate(std::shared_ptr<const data::Dataset> dataset,
                                           const std::vector<std::string>& ignore_keys,
                                           const std::string& metric_key_prefix = "eval");
  virtual absl::StatusOr<PredictionOutput> Predict(std::shared_ptr<const data::Dataset> dataset,
                                                   const std::vector<std::string>& ignore_keys = {},
                                                   const std::string& metric_key_prefix = "test");

  // HF hyperparameter_search (transformers 4.41, optuna backend; trainer/hp_search.h): needs
  // model_init. Runs the study's trials one after another — each a Train() from a fresh
  // model_init model with the trial's values set on the arguments (HF _hp_search_setup),
  // checkpoints under output_dir/run-<number>/ (or hp_name's), TrainerState.trial_params /
  // trial_name / is_hyper_param_search set; every evaluation during training reports the
  // objective to the pruner (HF _report_to_hp_search: a pruned trial ends after on_train_end),
  // and without one the objective is compute_objective(Evaluate()) after training. The study
  // lives in a journal (hpsearch/study.h): a killed search resumes, re-running the trial it was
  // in. Under the launcher every rank runs the same trials (rank 0 samples and broadcasts). A
  // trial that fails on a rank ends that rank's search with its error (optuna re-raises it) at
  // once, entering no further collective; the other ranks' collectives fail when it goes, so
  // the trial fails on all of them, recorded FAIL by rank 0. Main process: each run folder gets its trainer_state.json, and
  // output_dir/hp_search.json the whole study. Returns the best run on every rank.
  absl::StatusOr<BestRun> HyperparameterSearch(const HpSearchOptions& options = {});

  // --- Hooks (the methods HF's Trainer docs list for subclass override) ---
  virtual absl::StatusOr<std::unique_ptr<data::DataLoader>> GetTrainDataloader();
  virtual absl::StatusOr<std::unique_ptr<data::DataLoader>> GetEvalDataloader(
      std::shared_ptr<const data::Dataset> dataset);
  virtual absl::StatusOr<std::unique_ptr<data::DataLoader>> GetTestDataloader(
      std::shared_ptr<const data::Dataset> dataset);
  // Adds epoch (rounded to 2 digits) and num_input_tokens_seen to `logs` (as HF's log()
  // does to the caller's dict, which is why train and eval metrics carry "epoch"), appends
  // them to log_history with the step, and fires on_log.
  virtual absl::Status Log(Metrics& logs);
  virtual absl::Status CreateOptimizerAndScheduler(int64_t num_training_steps);
  virtual absl::Status CreateOptimizer();
  virtual absl::Status CreateScheduler(int64_t num_training_steps);
  virtual absl::StatusOr<LossOutput> ComputeLoss(Model& model, data::Batch& inputs,
                                                 bool return_outputs);
  // Forward + backward of one micro-batch; returns loss / gradient_accumulation_steps, detached.
  virtual absl::StatusOr<at::Tensor> TrainingStep(Model& model, data::Batch& inputs);
  virtual absl::StatusOr<PredictionStepOutput> PredictionStep(
      Model& model, data::Batch& inputs, bool prediction_loss_only,
      const std::vector<std::string>& ignore_keys);
  virtual absl::StatusOr<EvalLoopOutput> EvaluationLoop(data::DataLoader& dataloader,
                                                        const std::string& description,
                                                        std::optional<bool> prediction_loss_only,
                                                        const std::vector<std::string>& ignore_keys,
                                                        const std::string& metric_key_prefix);
  virtual double FloatingPointOps(const data::Batch& inputs);

  // --- Callbacks ---
  void AddCallback(std::shared_ptr<TrainerCallback> callback) {
    callbacks_.AddCallback(std::move(callback));
  }
  std::shared_ptr<TrainerCallback> PopCallback(const TrainerCallback* callback) {
    return callbacks_.PopCallback(callback);
  }
  template <typename T>
  std::shared_ptr<TrainerCallback> PopCallback() {
    return callbacks_.PopCallback<T>();
  }
  void RemoveCallback(const TrainerCallback* callback) { callbacks_.RemoveCallback(callback); }
  template <typename T>
  void RemoveCallback() {
    callbacks_.RemoveCallback<T>();
  }
  const CallbackHandler& callback_handler() const { return callbacks_; }

  // --- Reporting (rank 0 only, as HF) ---
  void LogMetrics(const std::string& split, const Metrics& metrics) const;
  absl::Status SaveMetrics(const std::string& split, const Metrics& metrics,
                           bool combined = true) const;
  // trainer_state.json in output_dir.
  absl::Status SaveState() const;
  // HF save_model: the weights (model.safetensors or pytorch_model.bin), config.json and
  // training_args.bin into `output_dir` (default args.output_dir), on the saving process(es)
  // (HF should_save: the world main process, or each node's local main with save_on_each_node).
  // With --push_to_hub, then PushToHub("Model save") (HF; blocking). A collective: every rank
  // calls it.
  absl::Status SaveModel(std::optional<std::string> output_dir = std::nullopt);

  // --- Hub (hub_strategy; trainer_hub.cc, over //hub) ---
  // HF push_to_hub: saves the model into output_dir (every rank calls it), then the main
  // process writes the model card (`card`: create_model_card's arguments; model_name defaults
  // to hub_model_id's last part), waits for a running checkpoint push and commits output_dir
  // (not checkpoint-*/, not "_*") with `commit_message` and pushes it — in the foreground when
  // `blocking`, when the error is returned (naming the remote, never the token); else in the
  // background, where a failure is a warning. Works without --push_to_hub too (HF opens the
  // repository then).
  absl::Status PushToHub(const std::string& commit_message = "End of training",
                         bool blocking = true, const ModelCardOptions& card = {});
  // HF create_model_card: README.md in output_dir (main process only), HF's text.
  absl::Status CreateModelCard(const ModelCardOptions& card = {});
  // The pusher of a --push_to_hub run (null on other ranks and without it).
  const hub::HubPusher* hub_pusher() const { return hub_pusher_.get(); }

  // --- Accessors ---
  const args::TrainingArguments& args() const { return args_; }
  const TrainerState& state() const { return state_; }
  Model& model() { return *model_; }
  torch::optim::Optimizer* optimizer() { return optimizer_.get(); }
  optim::LrScheduler* lr_scheduler() { return lr_scheduler_.get(); }
  bool is_in_train() const { return is_in_train_; }
  bool is_world_process_zero() const { return parallel_.is_world_zero(); }
  bool is_local_process_zero() const { return parallel_.is_local_zero(); }
  // This process's place in the run (world size, ranks, collectives).
  runtime::ParallelContext& parallel() { return parallel_; }
  // How the ranks split the data (the strategy factory's answer): the loaders, the global batch
  // and the evaluation gather count data-parallel replicas, not processes.
  const sharding::DataParallelTopology& topology() const { return topology_; }
  const at::Device& device() const { return device_; }
  const precision::PrecisionPolicy& precision_policy() const { return precision_->policy(); }
  // --fp16's GradScaler (null without one).
  const precision::GradScaler* grad_scaler() const { return precision_->grad_scaler(); }
  // The learning rate the next step uses (HF _get_learning_rate).
  double CurrentLearningRate() const;

 protected:
  // HF _get_output_dir: the trial's run folder during hyperparameter search, else output_dir.
  std::string RunDir() const;
  // HF _save_checkpoint: updates best_metric / best_model_checkpoint from `metrics`, writes
  // output_dir/checkpoint-<global_step>/ atomically (trainer_checkpoint.cc) and rotates.
  virtual absl::Status SaveCheckpoint(const Metrics* metrics);
  // After training (HF order): load_best_model_at_end before the final metrics, and the
  // save_total_limit=1 clean-up (only the best kept) after they are logged.
  absl::Status LoadBestModelAtEnd();
  // fn() with every parameter whole (the strategy's BeginFullParameters / EndFullParameters
  // around it; a collective under parameter sharding: every rank calls it). write_back: weights
  // fn() put into the model become the strategy's.
  absl::Status WithFullParameters(const std::function<absl::Status()>& fn, bool write_back);
  // ZeRO-3 without stage3_gather_16bit_weights_on_model_save: no weights file is written
  // (transformers 4.38 `Trainer.save_model` under DeepSpeed); the ZeRO files hold them.
  bool SavesNoWeights() const;
  // Whether the strategy writes its own optimizer-state files into a checkpoint (ZeRO's
  // global_stepN/, also for --save_only_model when they are the only copy of the weights).
  bool StrategySavesState() const;
  // What the strategy's checkpoint files record next to its state.
  sharding::StrategySaveInfo StrategyInfo() const;
  // HF _save_checkpoint's best metric / best checkpoint update from `metrics`.
  absl::Status UpdateBestMetric(const Metrics* metrics, const std::string& final_dir);
  // The files of the checkpoint this rank writes (`saver`: the shared ones too).
  CheckpointContents ContentsToSave(bool saver, const ResumePosition& position,
                                    const rng::RngState& rng) const;
  // The model's weights from `dir` (whole parameters, written back into the strategy's shards);
  // a folder without weights whose strategy files hold them (SavesNoWeights) loads those.
  absl::Status LoadWeights(const std::string& dir, bool strategy_files_hold_them);
  absl::Status CleanUpCheckpointsAtEnd();
  // Moves the batch's tensors to the training device.
  data::Batch PrepareInputs(const data::Batch& inputs) const;
  // model.Forward with the amp path's fp16/bf16 outputs turned into fp32 (accelerate's
  // convert_outputs_to_fp32); what ComputeLoss and PredictionStep call the model with.
  ModelOutput CallModel(Model& model, const data::Batch& inputs) const;
  std::vector<std::string> LabelNames() const;
  // save_model(_internal_call=True): the files only, no push.
  absl::Status SaveModelFiles(const std::string& dir);
  // HF init_hf_repo (on the main process; every rank learns whether it worked): output_dir as
  // the hub repository's clone, hub_model_id -> remote, the token resolved.
  absl::Status InitHfRepo();
  // HF _push_from_checkpoint after `folder` was committed (main process; not with "end").
  absl::Status PushFromCheckpoint(const std::string& folder);
  // HF _finish_current_push: waits for a running push; its failure is a warning.
  void FinishCurrentPush();

  args::TrainingArguments args_;
  TrainerOptions options_;
  std::shared_ptr<Model> model_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  std::unique_ptr<optim::LrScheduler> lr_scheduler_;
  TrainerState state_;
  TrainerControl control_;
  CallbackHandler callbacks_;
  rng::GeneratorSet generators_;
  at::Device device_{at::kCPU};
  bool is_in_train_ = false;
  runtime::ParallelContext parallel_;
  sharding::DataParallelTopology topology_;
  // ZeRO-3 inference's stand-in optimizer (SetUpZeroInference); declared before strategy_,
  // which refers to it, so it outlives it.
  std::unique_ptr<torch::optim::Optimizer> inference_optimizer_;
  // Chosen once per Train() (runtime/strategy_setup.h): one process, DDP, ZeRO, FSDP, or the
  // program's own (TrainerOptions::strategy_factory); or by SetUpZeroInference.
  std::unique_ptr<sharding::ShardingStrategy> strategy_;
  // The --deepspeed plan of the run in progress (sharding/zero/deepspeed_plan.h), made when Train
  // starts; unset without --deepspeed.
  std::optional<sharding::DeepSpeedPlan> deepspeed_;
  std::shared_ptr<DeepSpeedProgressCallback> deepspeed_progress_;  // with --deepspeed
  // skip_memory_metrics=false: per-stage memory deltas (HF's TrainerMemoryTracker).
  std::unique_ptr<MemoryTracker> memory_tracker_;
  // The precision policy's loop pieces (autocast, loss scaling), chosen once in Init.
  std::unique_ptr<precision::TrainingPrecision> precision_;
  // --push_to_hub's repository and push schedule, on the main process only.
  std::unique_ptr<hub::HubPusher> hub_pusher_;

 private:
  absl::Status Seed();
  // Init's stages: the process log level (HF's get_process_log_level); the TrainerOptions
  // combinations HF's __init__ refuses; the device, precision, threads and the model's place;
  // the default callbacks in HF's order around the caller's.
  absl::Status ApplyProcessLogLevel();
  absl::Status CheckOptions() const;
  absl::Status SetUpDeviceAndPrecision();
  absl::Status AddDefaultCallbacks();
  // What the arguments ask of the model itself: gradient checkpointing (enabled on the model, as
  // HF's gradient_checkpointing_enable) and a check that NEFTune can hook its embeddings.
  absl::Status PrepareModelFeatures();
  // model_init, NEFTune, then the inner loop under HF's find_executable_batch_size.
  absl::StatusOr<TrainOutput> TrainWithBatchSizeSearch(const std::optional<ResumeFrom>& resume);
  // HF's _inner_training_loop for the batch size in train_batch_size_, from the checkpoint
  // folder `resume_folder` when set.
  absl::StatusOr<TrainOutput> InnerTrainingLoop(const std::optional<std::string>& resume_folder);
  // The per-device batch size to start from: HF's train() takes a resumed checkpoint's
  // train_batch_size (the one its run used, after any --auto_find_batch_size halving).
  absl::StatusOr<int64_t> InitialTrainBatchSize(const std::optional<std::string>& resume_folder);
  // The folder a resume reads: for `latest`, the newest complete checkpoint after the saving
  // rank removed the leftovers of an interrupted save (all ranks agree); else the given path,
  // verified.
  absl::StatusOr<std::string> ResolveResumeFolder(const ResumeFrom& resume);
  // The dataloader_* arguments (drop_last, num_workers, prefetch_factor) for `batch_size`.
  data::DataLoaderOptions LoaderOptions(int64_t batch_size) const;
  // HF's _get_train_sampler as accelerate 0.27 prepares it: the length-grouped sampler, or the
  // seeded RandomSampler in one process and, at several, the generator-less one it shards.
  absl::StatusOr<std::unique_ptr<data::Sampler>> TrainSampler(int64_t batch_size);
  // This rank's share of the global training batches (accelerator_config split_batches /
  // even_batches, dataloader_drop_last).
  absl::StatusOr<data::BatchShardOptions> ShardOptions(int64_t batch_size) const;
  absl::StatusOr<std::unique_ptr<data::DataLoader>> MakeDataLoader(
      std::shared_ptr<const data::Dataset> dataset, std::unique_ptr<data::Sampler> sampler,
      int64_t batch_size);
  // _maybe_log_save_evaluate.
  absl::Status MaybeLogSaveEvaluate(at::Tensor& tr_loss, std::optional<double> grad_norm);
  absl::StatusOr<Metrics> EvaluateDuringTraining();
  // EvaluationLoop plus the <prefix>_runtime / _samples_per_second / _steps_per_second metrics.
  absl::StatusOr<EvalLoopOutput> TimedEvaluationLoop(data::DataLoader& dataloader,
                                                     const std::string& description,
                                                     std::optional<bool> prediction_loss_only,
                                                     const std::vector<std::string>& ignore_keys,
                                                     const std::string& metric_key_prefix);

  // HF num_tokens: main-input tokens of one pass over the train dataloader (or of its first
  // batch times max_steps when max_steps is given), for include_tokens_per_second.
  absl::StatusOr<double> NumTokens(data::DataLoader& dataloader, std::optional<int64_t> max_steps);

  // What a resume restores beyond the model, optimizer and scheduler.
  struct ResumedCheckpoint {
    std::string folder;
    ResumePosition position;
    rng::RngState rng;                             // at save time
    std::optional<rng::RngState> epoch_start_rng;  // when the saved epoch began
  };
  absl::StatusOr<ResumedCheckpoint> LoadForResume(const std::string& folder,
                                                  int64_t num_update_steps_per_epoch);
  // LoadForResume's stages: the data position (loom's resume file, or HF's global_step
  // arithmetic for a folder HF wrote); the optimizer, scheduler and loss-scaler state (or the
  // strategy's own files); this process's pending gradients and RNG states.
  absl::StatusOr<ResumePosition> LoadResumePosition(const std::string& dir,
                                                    const TrainerState& loaded,
                                                    int64_t num_update_steps_per_epoch);
  absl::Status LoadOptimizerState(const std::string& dir);
  absl::Status LoadProcessFiles(const std::string& dir, ResumedCheckpoint& out);

  // The inner loop's stages (HF's _inner_training_loop, in its order).
  // What the loop will do: HF's step, epoch and sample arithmetic for this dataloader.
  struct TrainingPlan {
    int64_t ga = 1;  // gradient_accumulation_steps
    int64_t train_batch_size = 0;
    int64_t total_train_batch_size = 0;  // per device x accumulation x data-parallel replicas
    std::optional<int64_t> len_dataloader;
    int64_t max_steps = 0;
    int64_t num_train_epochs = 0;
    int64_t num_update_steps_per_epoch = 0;
    double num_train_samples = 0;
    std::optional<double> num_train_tokens;
  };
  // What the epochs carry from one micro-batch to the next.
  struct EpochLoop {
    int64_t total_batched_samples = 0;
    std::optional<double> grad_norm;
    double clip_threshold = 0;
  };
  absl::StatusOr<TrainingPlan> PlanTraining(data::DataLoader& train_dataloader);
  // A fresh TrainerState for the plan, the DeepSpeed plan, the optimizer and scheduler, and the
  // data-parallel strategy.
  absl::Status SetUpTraining(const TrainingPlan& plan);
  // strategy_ (an earlier one made whole and dropped) over `optimizer`.
  absl::Status ReplaceStrategy(torch::optim::Optimizer* optimizer);
  // HF's evaluation_loop with --deepspeed and no engine yet (deepspeed_init(inference=True)):
  // outside training, without a strategy, --deepspeed ZeRO stage 3 shards the parameters
  // for evaluate / predict (no optimizer state); other stages are InvalidArgument with HF's
  // "ZeRO inference only makes sense with ZeRO Stage 3". A no-op otherwise.
  // Evaluation outside training under a parameter-sharding strategy: ZeRO-3 inference
  // (--deepspeed), or FSDP for a model built with deferred parameters.
  absl::Status SetUpZeroInference();
  absl::Status SetUpDeferredFsdpInference();
  absl::Status SetUpInferenceStrategy(const std::string& what);
  // The position the run starts from (the beginning, or the resumed checkpoint's), and the
  // loop's running totals from it.
  absl::StatusOr<std::optional<ResumedCheckpoint>> StartPosition(
      const std::optional<std::string>& resume_folder, const TrainingPlan& plan);
  // --max_grad_norm, or a DeepSpeed config's gradient_clipping.
  double ClipThreshold() const;
  absl::Status RunEpochs(data::DataLoader& train_dataloader, const TrainingPlan& plan,
                         const std::optional<ResumedCheckpoint>& resumed);
  // The epoch's batches (after the resumed micro-batches when `resumed` is set, whose RNG
  // states it restores); *skip: the micro-batches skipped.
  absl::StatusOr<std::unique_ptr<data::BatchIterator>> BeginEpoch(
      data::DataLoader& train_dataloader, int64_t epoch, const ResumedCheckpoint* resumed,
      int64_t* skip);
  absl::Status RunEpoch(data::DataLoader& train_dataloader, const TrainingPlan& plan,
                        int64_t epoch, const ResumedCheckpoint* resumed, EpochLoop& loop);
  // Forward and backward of one micro-batch through the strategy, and the optimizer step when
  // it closes an accumulation window.
  absl::Status TrainMicroBatch(data::Batch& batch, int64_t step, bool closes_window,
                               EpochLoop& loop);
  // After the last epoch: the best model, train_loss and the speed metrics, on_train_end.
  absl::StatusOr<TrainOutput> FinishTraining(const TrainingPlan& plan, double start_time);
  // trainer_state.json's stateful_callbacks: every stateful callback's ExportState under its
  // Name() (a list for several of one name) and "TrainerControl" (HF 4.41).
  Metrics CallbackStates() const;
  // restore_callback_states_from_checkpoint: restores the callbacks named in `states` (in
  // order, per name) and the TrainerControl flags; names without a callback are warned about.
  absl::Status RestoreCallbackStates(const Metrics& states);

  // The trial in progress under HyperparameterSearch (hyperparameter_search.cc).
  struct TrialContext {
    hpsearch::TrialRun run;
    std::string run_name;          // the folder under output_dir
    std::optional<std::string> trial_name;  // hp_name's, for TrainerState
    hpsearch::Study* study = nullptr;       // rank 0 only
    std::function<absl::StatusOr<double>(const Metrics&)> compute_objective;
    std::optional<double> objective;  // the last reported one (HF self.objective)
    bool pruned = false;
  };
  std::optional<TrialContext> trial_;
  // HF _report_to_hp_search after an evaluation during training: the objective to the study
  // and, when the pruner says so, on_train_end and Aborted (trial_->pruned set).
  absl::Status ReportToHpSearch(const Metrics& metrics);
  // HyperparameterSearch's stages.
  absl::Status CheckSearchOptions(const HpSearchOptions& options, const hpsearch::SearchSpace& space) const;
  absl::StatusOr<std::unique_ptr<hpsearch::Study>> OpenStudy(const HpSearchOptions& options,
                                                             const hpsearch::SearchSpace& space);
  // The next trial, from rank 0's study to every rank; nullopt when the study is done.
  absl::StatusOr<std::optional<hpsearch::TrialRun>> NextTrial(hpsearch::Study* study);
  // One trial: BeginTrial (trial_ set, an abandoned attempt's run folder moved aside),
  // TrainTrial (the arguments set, Train(), the objective), the ranks' agreement, RecordTrial
  // (rank 0: the run folder's trainer_state.json, the study's record); the state it ended in.
  absl::Status BeginTrial(const HpSearchOptions& options, hpsearch::Study* study,
                          const hpsearch::TrialRun& run);
  absl::Status TrainTrial(const hpsearch::TrialRun& run);
  absl::Status RecordTrial(hpsearch::Study* study, const hpsearch::TrialRun& run,
                           hpsearch::TrialState state, std::optional<double> objective);
  absl::StatusOr<hpsearch::TrialState> RunTrial(const HpSearchOptions& options,
                                                hpsearch::Study* study,
                                                const hpsearch::TrialRun& run,
                                                std::optional<double>* objective,
                                                absl::Status* failure);
  absl::Status ApplyTrialParams(const nlohmann::ordered_json& params);
  absl::StatusOr<BestRun> FinishSearch(hpsearch::Study* study, const HpSearchOptions& options,
                                       const hpsearch::SearchSpace& space);

  // Loop bookkeeping shared with the log/save/evaluate step (HF's private attributes), and
  // the data position and RNG state a checkpoint records.
  at::Tensor tr_loss_;
  ResumePosition position_;
  rng::RngState epoch_start_rng_;
  double total_loss_scalar_ = 0;
  int64_t globalstep_last_logged_ = 0;
  double current_flos_ = 0;
  // --gradient_checkpointing's options (unset: off).
  std::optional<modeling::CheckpointingOptions> gradient_checkpointing_;
  // Set while Train runs (--auto_find_batch_size may lower it); 0: the arguments' value.
  int64_t train_batch_size_ = 0;
  // The optimizer came with TrainerOptions (kept across batch-size retries).
  bool user_optimizer_ = false;
  // The scheduler was built from the arguments (HF's _created_lr_scheduler): every inner loop
  // builds it again for its own number of steps.
  bool created_lr_scheduler_ = false;
};

}  // namespace loom::trainer

#endif  // LOOM_TRAINER_TRAINER_H_
