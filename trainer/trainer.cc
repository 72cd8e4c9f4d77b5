// Trainer construction, data loaders, the loss and step hooks, logging and saving. The
// training loop is in train_loop.cc and the evaluation loop in evaluation_loop.cc.
#include "trainer/trainer.h"

#include "hub/hub_pusher.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/cuda.h>

#include <iostream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "args/training_args.h"
#include "base/file_util.h"
#include "base/status_macros.h"
#include "base/torch_status.h"
#include "data/iterable_shard.h"
#include "data/shard_sampler.h"
#include "glog/logging.h"
#include "logging/log_level.h"
#include "modeling/deferred_init.h"
#include "nlohmann/json.hpp"
#include "optim/deepspeed_optim.h"
#include "optim/optimizer_factory.h"
#include "rng/seed.h"
#include "trainer/flow_callbacks.h"
#include "trainer/label_smoother.h"
#include "trainer/neftune.h"
#include "runtime/precision_forward.h"
#include "runtime/run_setup.h"
#include "runtime/strategy_setup.h"
#include "trainer/tensorboard_callback.h"

namespace loom::trainer {

Trainer::Trainer(TrainerOptions options)
    : args_(options.args),
      options_(std::move(options)),
      model_(options_.model),
      optimizer_(std::move(options_.optimizer)),
      lr_scheduler_(std::move(options_.lr_scheduler)) {}

Trainer::~Trainer() = default;

absl::Status Trainer::Seed() {
  const uint64_t seed = static_cast<uint64_t>(args_.seed());
  return args_.full_determinism() ? rng::EnableFullDeterminism(seed, &generators_)
                                  : rng::SetSeed(seed, &generators_);
}

absl::Status Trainer::Init() {
  user_optimizer_ = optimizer_ != nullptr;
  ASSIGN_OR_RETURN(std::vector<std::string> warnings, args::PostInit(&args_),
                   "Trainer: resolving TrainingArguments");
  ASSIGN_OR_RETURN(parallel_,
                   runtime::ParallelContext::Create(std::move(options_.process_group), args_),
                   "Trainer: joining the process group");
  ASSIGN_OR_RETURN(topology_,
                   runtime::DataParallelTopologyFor(args_, parallel_, options_.strategy_factory),
                   "Trainer");
  RETURN_IF_ERROR(ApplyProcessLogLevel());
  for (const std::string& w : warnings) LOG(WARNING) << w;
  memory_tracker_ = std::make_unique<MemoryTracker>(args_.skip_memory_metrics());
  memory_tracker_->Start("init");
  RETURN_IF_ERROR(Seed());
  if (model_ == nullptr) {
    if (!options_.model_init) {
      return absl::InvalidArgumentError(
          "Trainer requires either a model or a model_init: set TrainerOptions.model or "
          "TrainerOptions.model_init");
    }
    ASSIGN_OR_RETURN(model_, options_.model_init(), "model_init");
    if (model_ == nullptr) return absl::InvalidArgumentError("model_init returned no model");
  }
  RETURN_IF_ERROR(CheckOptions());
  RETURN_IF_ERROR(runtime::MaterializeUnlessSharded(args_, *model_, options_.strategy_factory));
  if (options_.data_collator == nullptr) {
    options_.data_collator = std::make_shared<data::DefaultCollator>();
  }
  RETURN_IF_ERROR(SetUpDeviceAndPrecision());
  RETURN_IF_ERROR(PrepareModelFeatures());
  // HF __init__: the hub repository (output_dir as its clone) before any training.
  if (args_.push_to_hub()) RETURN_IF_ERROR(InitHfRepo());
  RETURN_IF_ERROR(AddDefaultCallbacks());
  callbacks_.context().model = model_.get();
  RETURN_IF_ERROR(callbacks_.OnInitEnd(args_, state_, control_));
  memory_tracker_->Stop("init");
  return absl::OkStatus();
}

absl::Status Trainer::ApplyProcessLogLevel() {
  // The process log level (HF's get_process_log_level): log_level on the main process,
  // log_level_replica on the others; passive keeps the current level.
  logging::ProcessLogPolicy policy;
  policy.log_level = args_.log_level();
  policy.log_level_replica = args_.log_level_replica();
  policy.log_on_each_node = args_.log_on_each_node();
  ASSIGN_OR_RETURN(int level, logging::ProcessLogLevel(policy, parallel_.Placement(),
                                                       logging::CurrentLogLevel()));
  return logging::ApplyLogLevel(level);
}

absl::Status Trainer::CheckOptions() const {
  if (!args_.deepspeed().empty() && (optimizer_ != nullptr || lr_scheduler_ != nullptr)) {
    // HF's Trainer.__init__ refuses the same (transformers 4.38).
    return absl::InvalidArgumentError(
        "Passing `optimizers` is not allowed if Deepspeed or PyTorch FSDP is enabled (--deepspeed "
        "is set). You should subclass `Trainer` and override the `CreateOptimizerAndScheduler` "
        "method, or describe them in the config's optimizer and scheduler sections.");
  }
  if (optimizer_ == nullptr && lr_scheduler_ != nullptr) {
    return absl::InvalidArgumentError(
        "TrainerOptions.lr_scheduler was given without TrainerOptions.optimizer: pass both, or "
        "neither to build them from the arguments");
  }
  if (options_.train_dataset != nullptr && options_.train_iterable_dataset != nullptr) {
    return absl::InvalidArgumentError(
        "give TrainerOptions.train_dataset or train_iterable_dataset, not both");
  }
  if (options_.eval_dataset != nullptr && !options_.eval_datasets.empty()) {
    return absl::InvalidArgumentError(
        "give TrainerOptions.eval_dataset or eval_datasets, not both");
  }
  for (const std::string& name : LabelNames()) {
    if (name == "label") {
      return absl::InvalidArgumentError(
          "--label_names: a label may not be named \"label\" (HF's model contract); name it "
          "\"labels\"");
    }
  }
  return absl::OkStatus();
}

absl::Status Trainer::SetUpDeviceAndPrecision() {
  // Device (HF: cuda:LOCAL_RANK in a launched run, cuda:0 otherwise), precision policy (HF
  // sets up amp in __init__) and checkpointing options, once per Trainer.
  ASSIGN_OR_RETURN(runtime::RunSetup setup, runtime::ResolveRunSetup(args_, parallel_.local_rank(),
                                                                     parallel_.world_size()));
  device_ = setup.device;
  gradient_checkpointing_ = setup.gradient_checkpointing;
  precision::PrecisionPolicy precision_policy;
  if (options_.precision.has_value()) {
    precision_policy = *options_.precision;
  } else {
    for (const std::string& w : setup.precision.warnings) LOG(WARNING) << w;
    precision_policy = std::move(setup.precision.policy);
  }
  ASSIGN_OR_RETURN(precision_, precision::TrainingPrecision::Create(precision_policy), "Trainer");
  // Thread counts for this process, in one line.
  const threads::ThreadPlan& thread_plan = options_.threads ? *options_.threads : setup.threads;
  RETURN_IF_ERROR(threads::ApplyThreadPlan(thread_plan));
  LOG(INFO) << thread_plan.Describe();
  LOG(INFO) << precision_policy.Describe();
  precision::ApplyTf32(precision_policy);
  RETURN_IF_ERROR(runtime::PlaceModel(*model_, device_));
  return absl::OkStatus();
}

absl::Status Trainer::AddDefaultCallbacks() {
  // Default callbacks first, then the caller's, then the progress display (HF order).
  callbacks_.AddCallback(std::make_shared<DefaultFlowCallback>());
  for (const std::string& integration : args_.report_to()) {
    if (integration == "none") continue;
    if (integration == "tensorboard") {
      callbacks_.AddCallback(std::make_shared<TensorBoardCallback>());
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          "--report_to ", integration, " is not available in loom; use tensorboard or none"));
    }
  }
  if (!args_.deepspeed().empty()) {
    // steps_per_print comes with the plan when Train starts.
    deepspeed_progress_ = std::make_shared<DeepSpeedProgressCallback>(0);
    callbacks_.AddCallback(deepspeed_progress_);
  }
  for (auto& cb : options_.callbacks) callbacks_.AddCallback(cb);
  if (args_.disable_tqdm()) {
    callbacks_.AddCallback(std::make_shared<PrinterCallback>());
  } else {
    callbacks_.AddCallback(std::make_shared<ProgressCallback>());
  }
  return absl::OkStatus();
}

absl::Status Trainer::PrepareModelFeatures() {
  if (gradient_checkpointing_) {
    RETURN_IF_ERROR_CTX(model_->EnableGradientCheckpointing(*gradient_checkpointing_),
                        "--gradient_checkpointing");
    LOG(INFO) << "Activation checkpointing: each layer's activations recomputed in backward"
              << (gradient_checkpointing_->use_reentrant ? "" : " (non-reentrant)");
  }
  return args_.has_neftune_noise_alpha() ? CheckNeftuneSupported(*model_) : absl::OkStatus();
}

int64_t Trainer::TrainBatchSize() const {
  return train_batch_size_ > 0 ? train_batch_size_ : args::TrainBatchSizePerDevice(args_);
}

std::vector<std::string> Trainer::LabelNames() const {
  if (args_.label_names_size() > 0) {
    return {args_.label_names().begin(), args_.label_names().end()};
  }
  return model_ != nullptr ? model_->LabelNames() : std::vector<std::string>{"labels"};
}

absl::StatusOr<std::unique_ptr<data::DataLoader>> Trainer::MakeDataLoader(
    std::shared_ptr<const data::Dataset> dataset, std::unique_ptr<data::Sampler> sampler,
    int64_t batch_size) {
  return data::DataLoader::Create(LoaderOptions(batch_size), std::move(dataset), std::move(sampler),
                                  options_.data_collator);
}

data::DataLoaderOptions Trainer::LoaderOptions(int64_t batch_size) const {
  data::DataLoaderOptions options;
  options.batch_size = batch_size;
  options.drop_last = args_.dataloader_drop_last();
  options.num_workers = static_cast<int>(args_.dataloader_num_workers());
  options.persistent_workers = args_.dataloader_persistent_workers();
  if (args_.has_dataloader_prefetch_factor()) {
    options.prefetch_factor = static_cast<int>(args_.dataloader_prefetch_factor());
  }
  return options;
}

absl::StatusOr<std::unique_ptr<data::DataLoader>> Trainer::GetTrainDataloader() {
  const int64_t batch_size = TrainBatchSize();
  if (options_.train_iterable_dataset != nullptr && topology_.data_parallel_size > 1) {
    // Every rank reads the stream and keeps its slice of each global chunk (accelerate's
    // IterableDatasetShard; its dispatcher sends rank r the same slice from rank 0).
    ASSIGN_OR_RETURN(data::BatchShardOptions shard, ShardOptions(batch_size));
    data::IterableShardOptions o;
    o.batch_size = shard.batch_size;
    o.drop_last = shard.drop_last;
    o.num_processes = shard.num_processes;
    o.process_index = shard.process_index;
    o.split_batches = shard.split_batches;
    ASSIGN_OR_RETURN(std::shared_ptr<data::IterableDatasetShard> sharded,
                     data::IterableDatasetShard::Create(options_.train_iterable_dataset, o),
                     "--per_device_train_batch_size");
    return data::DataLoader::Create(LoaderOptions(sharded->BatchSizePerRank()), sharded,
                                    options_.data_collator);
  }
  if (options_.train_iterable_dataset != nullptr) {
    return data::DataLoader::Create(LoaderOptions(batch_size), options_.train_iterable_dataset,
                                    options_.data_collator);
  }
  if (options_.train_dataset == nullptr) {
    return absl::FailedPreconditionError(
        "Trainer: training requires a train_dataset (TrainerOptions.train_dataset)");
  }
  ASSIGN_OR_RETURN(std::unique_ptr<data::Sampler> sampler, TrainSampler(batch_size));
  if (topology_.data_parallel_size == 1) {
    return MakeDataLoader(options_.train_dataset, std::move(sampler), batch_size);
  }
  // accelerate's BatchSamplerShard over the global batches (AcceleratorConfig).
  ASSIGN_OR_RETURN(data::BatchShardOptions shard, ShardOptions(batch_size));
  ASSIGN_OR_RETURN(std::unique_ptr<data::BatchShardSampler> sharded,
                   data::BatchShardSampler::Create(std::move(sampler), shard),
                   "--per_device_train_batch_size");
  const int64_t per_rank = sharded->BatchSizePerRank();
  return MakeDataLoader(options_.train_dataset, std::move(sharded), per_rank);
}

absl::StatusOr<std::unique_ptr<data::Sampler>> Trainer::TrainSampler(int64_t batch_size) {
  if (args_.group_by_length()) {
    // HF LengthGroupedSampler: lengths from the length column when the dataset has one, else
    // the main input's length; megabatches of train_batch_size * accumulation steps; the
    // permutation draws from torch's default generator, as HF's does (its generator is None).
    ASSIGN_OR_RETURN(std::vector<int64_t> lengths,
                     data::LengthsForGrouping(*options_.train_dataset, args_.length_column_name(),
                                              model_->MainInputName()),
                     "--group_by_length");
    ASSIGN_OR_RETURN(std::unique_ptr<data::LengthGroupedSampler> grouped,
                     data::LengthGroupedSampler::CreateSharedGenerator(
                         std::move(lengths), batch_size * args_.gradient_accumulation_steps(),
                         at::detail::getDefaultCPUGenerator()),
                     "--group_by_length");
    return std::unique_ptr<data::Sampler>(std::move(grouped));
  }
  // accelerate 0.27 SeedableRandomSampler: seed = data_seed when set, else seed.
  const int64_t seed = args_.has_data_seed() ? args_.data_seed() : args_.seed();
  auto seedable = std::make_unique<data::RandomSampler>(options_.train_dataset->Size(),
                                                        static_cast<uint64_t>(seed));
  if (topology_.data_parallel_size > 1) {
    // At several processes accelerate 0.27 shards HF's generator-less RandomSampler instead:
    // each rank draws the epoch's permutation from torch's global generator
    // (data/shard_sampler.h AccelerateShardedOrder).
    return data::AccelerateShardedOrder(*seedable, at::detail::getDefaultCPUGenerator());
  }
  const auto config = nlohmann::json::parse(args_.accelerator_config(), nullptr, false);
  if (config.is_object() && !config.value("use_seedable_sampler", true)) {
    // accelerator_config use_seedable_sampler=false: HF's RandomSampler stays as it is.
    return std::unique_ptr<data::Sampler>(data::RandomSampler::SharedGenerator(
        options_.train_dataset->Size(), at::detail::getDefaultCPUGenerator()));
  }
  return std::unique_ptr<data::Sampler>(std::move(seedable));
}

absl::StatusOr<data::BatchShardOptions> Trainer::ShardOptions(int64_t batch_size) const {
  data::BatchShardOptions shard;
  shard.batch_size = batch_size;
  shard.drop_last = args_.dataloader_drop_last();
  shard.num_processes = topology_.data_parallel_size;
  shard.process_index = topology_.data_parallel_rank;
  if (args_.has_accelerator_config() && !args_.accelerator_config().empty()) {
    const auto config = nlohmann::json::parse(args_.accelerator_config(), nullptr, false);
    if (!config.is_object()) {
      return absl::InvalidArgumentError("--accelerator_config: not a JSON object");
    }
    shard.split_batches = config.value("split_batches", false);
    shard.even_batches = config.value("even_batches", true);
  }
  return shard;
}

absl::StatusOr<std::unique_ptr<data::DataLoader>> Trainer::GetEvalDataloader(
    std::shared_ptr<const data::Dataset> dataset) {
  if (dataset == nullptr) {
    return absl::FailedPreconditionError(
        "Trainer: evaluation requires an eval_dataset (TrainerOptions.eval_dataset)");
  }
  const int64_t batch_size = args::EvalBatchSizePerDevice(args_);
  if (topology_.data_parallel_size > 1) {
    // Whole single-process batches dealt round robin, so the gathered results are exactly the
    // single-process ones (data/shard_sampler.h EvalShardSampler).
    ASSIGN_OR_RETURN(
        std::unique_ptr<data::EvalShardSampler> sampler,
        data::EvalShardSampler::Create(dataset->Size(), batch_size, topology_.data_parallel_size,
                                       topology_.data_parallel_rank, args_.dataloader_drop_last()),
        "--per_device_eval_batch_size");
    // The sampler already left out a dropped last batch; its batches are all whole.
    return data::DataLoader::Create(LoaderOptions(batch_size).set_drop_last(false),
                                    std::move(dataset), std::move(sampler), options_.data_collator);
  }
  auto sampler = std::make_unique<data::SequentialSampler>(dataset->Size());
  return MakeDataLoader(std::move(dataset), std::move(sampler), batch_size);
}

absl::StatusOr<std::unique_ptr<data::DataLoader>> Trainer::GetTestDataloader(
    std::shared_ptr<const data::Dataset> dataset) {
  return GetEvalDataloader(std::move(dataset));
}

absl::Status Trainer::CreateOptimizerAndScheduler(int64_t num_training_steps) {
  RETURN_IF_ERROR(CreateOptimizer());
  return CreateScheduler(num_training_steps);
}

absl::Status Trainer::CreateOptimizer() {
  if (optimizer_ != nullptr) return absl::OkStatus();
  if (deepspeed_ && deepspeed_->config.optimizer) {
    // HF's DummyOptim path: DeepSpeed builds the config's optimizer (deepspeed_optim_sched).
    ASSIGN_OR_RETURN(optimizer_, optim::CreateDeepSpeedOptimizer(deepspeed_->config, *model_),
                     "--deepspeed");
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(optimizer_, optim::CreateOptimizer(args_, *model_));
  return absl::OkStatus();
}

absl::Status Trainer::CreateScheduler(int64_t num_training_steps) {
  if (lr_scheduler_ != nullptr) return absl::OkStatus();
  if (optimizer_ == nullptr) {
    return absl::FailedPreconditionError(
        "CreateScheduler: the optimizer must be set up first (call CreateOptimizer)");
  }
  if (deepspeed_ && deepspeed_->config.scheduler) {
    ASSIGN_OR_RETURN(lr_scheduler_,
                     optim::CreateDeepSpeedScheduler(deepspeed_->config, optimizer_.get()),
                     "--deepspeed");
  } else {
    ASSIGN_OR_RETURN(lr_scheduler_,
                     optim::CreateScheduler(args_, optimizer_.get(), num_training_steps));
  }
  created_lr_scheduler_ = true;
  return absl::OkStatus();
}

data::Batch Trainer::PrepareInputs(const data::Batch& inputs) const {
  if (device_.is_cpu()) return inputs;
  data::Batch out;
  for (const auto& [name, tensor] : inputs) out[name] = tensor.to(device_, /*non_blocking=*/true);
  return out;
}

absl::StatusOr<LossOutput> Trainer::ComputeLoss(Model& model, data::Batch& inputs,
                                                bool return_outputs) {
  at::Tensor labels;
  const bool smooth = args_.label_smoothing_factor() != 0;
  if (smooth) {
    auto it = inputs.find("labels");
    if (it != inputs.end()) {
      labels = it->second;
      inputs.erase(it);
    }
  }
  ModelOutput outputs = CallModel(model, inputs);
  LossOutput result;
  if (labels.defined()) {
    at::Tensor logits = outputs.Get("logits");
    if (!logits.defined() && !outputs.outputs.empty()) logits = outputs.outputs.front().second;
    if (!logits.defined()) {
      return absl::InvalidArgumentError(
          "--label_smoothing_factor needs the model's logits, but the model returned no outputs");
    }
    result.loss = LabelSmoothedLoss(logits, labels, args_.label_smoothing_factor());
  } else {
    if (!outputs.loss.defined()) {
      std::vector<std::string> keys;
      for (const auto& [key, value] : outputs.outputs) keys.push_back(key);
      std::vector<std::string> input_keys;
      for (const auto& [key, value] : inputs) input_keys.push_back(key);
      return absl::InvalidArgumentError(absl::StrCat(
          "The model did not return a loss from the inputs, only the following keys: ",
          absl::StrJoin(keys, ","), ". For reference, the inputs it received are ",
          absl::StrJoin(input_keys, ","), ". Check --label_names and the dataset's fields."));
    }
    result.loss = outputs.loss;
  }
  if (return_outputs) result.outputs = std::move(outputs);
  return result;
}

absl::StatusOr<at::Tensor> Trainer::TrainingStep(Model& model, data::Batch& inputs) {
  model.train();
  data::Batch prepared = PrepareInputs(inputs);
  LossOutput out;
  {
    // HF's compute_loss_context_manager (autocast with cpu_amp); the model's forward has its
    // own (CallModel); backward runs outside both.
    precision::AutocastGuard autocast(precision_->LossAutocast());
    ASSIGN_OR_RETURN(out, ComputeLoss(model, prepared, /*return_outputs=*/false));
  }
  // transformers 4.38 Trainer.training_step: backward on loss / accumulation steps
  // (scaled by the GradScaler with --fp16, as accelerator.backward does).
  const double ga = static_cast<double>(args_.gradient_accumulation_steps());
  precision_->ScaleLoss(out.loss / ga).backward();
  return out.loss.detach() / ga;
}

ModelOutput Trainer::CallModel(Model& model, const data::Batch& inputs) const {
  return runtime::ForwardInPrecision(model, inputs, *precision_);
}

double Trainer::FloatingPointOps(const data::Batch& inputs) {
  return model_->FloatingPointOps(inputs);
}

double Trainer::CurrentLearningRate() const {
  if (lr_scheduler_ != nullptr) {
    std::vector<double> lrs = lr_scheduler_->LastLr();
    if (!lrs.empty()) return lrs.front();
  }
  if (optimizer_ != nullptr && !optimizer_->param_groups().empty()) {
    return optimizer_->param_groups().front().options().get_lr();
  }
  return 0;
}

absl::Status Trainer::Log(Metrics& logs) {
  if (state_.epoch.has_value()) logs["epoch"] = PyRound(*state_.epoch, 2);
  if (args_.include_num_input_tokens_seen()) {
    logs["num_input_tokens_seen"] = state_.num_input_tokens_seen;
  }
  Metrics entry = logs;
  entry["step"] = state_.global_step;
  state_.log_history.push_back(std::move(entry));
  return callbacks_.OnLog(args_, state_, control_, logs);
}

void Trainer::LogMetrics(const std::string& split, const Metrics& metrics) const {
  if (!is_world_process_zero()) return;
  std::cout << FormatLogMetrics(split, metrics);
  std::cout.flush();
}

absl::Status Trainer::SaveMetrics(const std::string& split, const Metrics& metrics,
                                  bool combined) const {
  if (!is_world_process_zero()) return absl::OkStatus();
  RETURN_IF_ERROR(base::MakeDirs(args_.output_dir()));
  return trainer::SaveMetrics(args_.output_dir(), split, metrics, combined);
}

absl::Status Trainer::SaveState() const {
  if (!is_world_process_zero()) return absl::OkStatus();
  RETURN_IF_ERROR(base::MakeDirs(args_.output_dir()));
  ASSIGN_OR_RETURN(const TrainerStateLayout layout,
                   TrainerStateLayoutFor(args_.save_for_transformers_version()));
  return state_.SaveToJson(args_.output_dir() + "/trainer_state.json", layout);
}

}  // namespace loom::trainer
