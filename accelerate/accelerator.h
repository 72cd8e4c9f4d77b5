// Accelerator: 🤗 Accelerate's Accelerator for a C++ training loop (accelerate 0.27
// `Accelerator`): a plain single-process loop becomes distributed (and mixed precision) by creating
// an Accelerator, passing its objects through Prepare and calling Backward(loss) instead of
// loss.backward(). It composes what loom's Trainer uses — the same ParallelContext (process
// group from the launcher's environment), ResolveRunSetup (device, precision, threads), one
// sharding strategy from sharding/create_strategy.h, BatchShardSampler for the loaders, the
// RNG and optimizer/scheduler files of //rng and //checkpoint — not a second implementation.
//
// Contract:
//   - Create(options): the process group from RANK / WORLD_SIZE / MASTER_ADDR / MASTER_PORT
//     (//tools:launch) or options.process_group; unset options come from accelerate's
//     variables (ACCELERATE_MIXED_PRECISION, ACCELERATE_GRADIENT_ACCUMULATION_STEPS,
//     ACCELERATE_USE_CPU), else accelerate's defaults. The data-parallel scheme is the one the
//     Trainer would take from the same flags: DDP under a launcher, FSDP (full_shard,
//     shard_grad_op, hybrid_shard, no_shard) or DeepSpeed ZeRO (stages 0-3) from strategy_flags
//     or an accelerate config's FSDP / DeepSpeed section. mixed_precision "fp16" on a CPU-only
//     build, an unknown value, a bad number and FSDP in one unlaunched process are errors before
//     any work.
//   - Prepare(objects...): each argument (a model, an optimizer, a data loader, a scheduler,
//     held in a shared_ptr of the base type) is replaced in place by its prepared form,
//     accelerate's "returned in the order given":
//       * model (modeling::Model): placed on the device; its Forward moves the batch to the
//         device, runs under the precision's autocast (outputs in fp32, accelerate's
//         convert_outputs_to_fp32) and tells the strategy whether this micro-step synchronizes
//         gradients (DDP's no_sync). Its parameters are the original module's.
//       * optimizer (torch::optim::Optimizer): step() runs only on synchronizing micro-steps,
//         through the strategy (gradients unscaled, the loss scaler's skip), and leaves the
//         gradients zeroed; the learning rates a scheduler sets on either the prepared or the
//         original optimizer are the ones used.
//       * data loader: the same dataset, sampler and collator; each rank takes its share of the
//         global batches (accelerate's BatchSamplerShard with split_batches / even_batches:
//         data/shard_sampler.h); batches come on the device; the loader reports its last batch
//         (end_of_dataloader, for GatherForMetrics and Accumulate). Iterable loaders are
//         refused (Unimplemented).
//       * scheduler (optim::LrScheduler): Step() only when the optimizer stepped, and
//         num_processes times per call unless split_batches (accelerate's rule for schedules
//         sized by the unsharded loader).
//     The strategy is built when a Prepare call has seen a model and an optimizer. With a
//     DeepSpeed config (ZeRO 1-3 from strategy_flags or an accelerate config's DeepSpeed
//     section), its "auto" values resolve as accelerate resolves them: the micro-batch size from
//     the first prepared loader (one must come in the same or an earlier call), the
//     accumulation from the Accelerator, gradient_clipping from max_grad_norm (1.0) — applied at
//     each step, as DeepSpeed's engine does; a config with an optimizer or scheduler section is
//     Unimplemented (pass them through Prepare). Preparing the same model twice, a second model
//     or a second optimizer is FailedPrecondition / Unimplemented.
//   - Backward(loss): loss / gradient_accumulation_steps, scaled by the loss scaler (fp16),
//     backward, then the strategy's gradient reduction on synchronizing micro-steps.
//     FailedPrecondition before a model and an optimizer were prepared.
//   - Accumulate(): an RAII scope per micro-batch (accelerate's `with accumulate(model)`): it
//     counts micro-steps and makes every gradient_accumulation_steps-th one (or the loader's
//     last batch) synchronize; SyncGradients() tells which. Between micro-steps that do not,
//     the accumulated gradients are kept aside, so the loop's optimizer.step() / zero_grad()
//     are no-ops there, as accelerate makes them.
//   - ClipGradNorm(max_norm) / ClipGradValue(value): on a synchronizing micro-step only
//     (FailedPrecondition otherwise); the norm is over every gradient (all shards), after
//     unscaling.
//   - Gather(t) (every rank's t concatenated along dim 0, rank order), GatherForMetrics(t)
//     (the same, minus the samples even_batches duplicated in the loader's last batch:
//     accelerate's remainder rule), Reduce(t, "sum"|"mean"), PadAcrossProcesses(t, dim,
//     pad_index, pad_first): collectives, every rank calls them in the same order.
//   - WaitForEveryone(), IsMainProcess(), IsLocalMainProcess(), MainProcessFirst(fn),
//     LocalMainProcessFirst(fn), Print(text) (local main process only).
//   - SaveState(dir) / LoadState(dir): accelerate's folder (accelerate/state_files.h).
//   - SaveModel(model, dir), UnwrapModel(model), Autocast(), InitTrackers / Log / EndTraining,
//     SkipFirstBatches(loader, n): see each declaration.
//   - Errors are Statuses naming the object and the fix; LibTorch errors inside a prepared
//     model's Forward (which returns no Status) surface as c10::Error.
//
// Example (the tutorial's loop; examples/accelerate_tutorial.cc):
//   ASSIGN_OR_RETURN(std::unique_ptr<Accelerator> accelerator, Accelerator::Create());
//   RETURN_IF_ERROR(accelerator->Prepare(train_dataloader, eval_dataloader, model, optimizer));
//   ...
//   modeling::ModelOutput outputs = model->Forward(batch);
//   RETURN_IF_ERROR(accelerator->Backward(outputs.loss));
//   optimizer->step();
#ifndef LOOM_ACCELERATE_ACCELERATOR_H_
#define LOOM_ACCELERATE_ACCELERATOR_H_

#include <torch/optim/optimizer.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "accelerate/accelerator_state.h"
#include "data/data_loader.h"
#include "distributed/process_group.h"
#include "logging/metrics_sink.h"
#include "modeling/model.h"
#include "optim/lr_scheduler.h"
#include "precision/autocast.h"

namespace loom::accelerate {

struct AcceleratorOptions {
  std::optional<std::string> mixed_precision;  // "no", "bf16", "fp16"
  std::optional<int> gradient_accumulation_steps;
  bool split_batches = false;
  bool even_batches = true;
  std::optional<bool> cpu;
  // SaveState() without a folder: <project_dir>/checkpoints/checkpoint_<n> (accelerate's
  // automatic_checkpoint_naming); trackers write under <project_dir>/<project name>.
  std::string project_dir;
  // Trackers for InitTrackers / Log: "tensorboard", "jsonl" (loom's JSON Lines), "all".
  std::vector<std::string> log_with;
  std::optional<distributed::ProcessGroup> process_group;
  // accelerate's fsdp_plugin, as HF Trainer flags: {"--fsdp", "full_shard auto_wrap",
  // "--fsdp_config", "{...}"} (sharding/create_strategy.h). Unset: the flags an accelerate config
  // implies, which //tools:launch passes in LOOM_ACCELERATE_TRAINING_ARGS.
  std::vector<std::string> strategy_flags;
  // A program's own data-parallel strategy (sharding/strategy_registry.h), used instead of the
  // one the strategy flags select; the Trainer takes the same factory (TrainerOptions).
  std::shared_ptr<const sharding::StrategyFactory> strategy_factory;

  AcceleratorOptions& set_mixed_precision(std::string v) {
    mixed_precision = std::move(v);
    return *this;
  }
  AcceleratorOptions& set_gradient_accumulation_steps(int v) {
    gradient_accumulation_steps = v;
    return *this;
  }
  AcceleratorOptions& set_split_batches(bool v) {
    split_batches = v;
    return *this;
  }
  AcceleratorOptions& set_even_batches(bool v) {
    even_batches = v;
    return *this;
  }
  AcceleratorOptions& set_cpu(bool v) {
    cpu = v;
    return *this;
  }
  AcceleratorOptions& set_project_dir(std::string v) {
    project_dir = std::move(v);
    return *this;
  }
  AcceleratorOptions& set_log_with(std::vector<std::string> v) {
    log_with = std::move(v);
    return *this;
  }
  AcceleratorOptions& set_strategy_flags(std::vector<std::string> v) {
    strategy_flags = std::move(v);
    return *this;
  }
  AcceleratorOptions& set_strategy_factory(std::shared_ptr<const sharding::StrategyFactory> v) {
    strategy_factory = std::move(v);
    return *this;
  }
  AcceleratorOptions& set_process_group(distributed::ProcessGroup v) {
    process_group = std::move(v);
    return *this;
  }
};

// accelerate's `with accelerator.accumulate(model):` — one per micro-batch.
class AccumulateScope {
 public:
  explicit AccumulateScope(AcceleratorState* state);
  ~AccumulateScope();
  AccumulateScope(const AccumulateScope&) = delete;
  AccumulateScope& operator=(const AccumulateScope&) = delete;

 private:
  AcceleratorState* state_;
};

class Accelerator {
 public:
  static absl::StatusOr<std::unique_ptr<Accelerator>> Create(AcceleratorOptions options = {});
  ~Accelerator();
  Accelerator(const Accelerator&) = delete;
  Accelerator& operator=(const Accelerator&) = delete;

  // --- Prepare ---
  template <typename... T>
  absl::Status Prepare(T&... objects) {
    absl::Status status = absl::OkStatus();
    ((status.ok() ? (status = PrepareOne(objects), 0) : 0), ...);
    // The strategy once a model and an optimizer are there (with a DeepSpeed config, after the
    // loaders of the same call, whose batch size it takes).
    return status.ok() ? MaybeCreateStrategy() : status;
  }
  absl::Status PrepareOne(std::shared_ptr<modeling::Model>& model);
  absl::Status PrepareOne(std::shared_ptr<torch::optim::Optimizer>& optimizer);
  absl::Status PrepareOne(std::shared_ptr<data::DataLoader>& loader);
  absl::Status PrepareOne(std::shared_ptr<optim::LrScheduler>& scheduler);

  // --- The step ---
  absl::Status Backward(const at::Tensor& loss);
  AccumulateScope Accumulate() { return AccumulateScope(state_.get()); }
  bool SyncGradients() const { return state_->sync_gradients; }
  int gradient_accumulation_steps() const { return state_->gradient_accumulation_steps; }
  // The total norm (before clipping); nullopt when max_norm <= 0 (nothing computed).
  absl::StatusOr<std::optional<double>> ClipGradNorm(double max_norm);
  absl::Status ClipGradValue(double clip_value);
  // Whether the last prepared optimizer step was skipped by the loss scaler (inf/nan).
  bool OptimizerStepWasSkipped() const { return state_->step_was_skipped; }

  // --- Collectives ---
  absl::StatusOr<at::Tensor> Gather(const at::Tensor& t);
  absl::StatusOr<at::Tensor> GatherForMetrics(const at::Tensor& t);
  absl::StatusOr<at::Tensor> Reduce(const at::Tensor& t, const std::string& op = "sum");
  absl::StatusOr<at::Tensor> PadAcrossProcesses(const at::Tensor& t, int64_t dim = 0,
                                                double pad_index = 0, bool pad_first = false);
  absl::Status WaitForEveryone();

  // --- Processes ---
  int num_processes() const;
  int process_index() const;
  int local_process_index() const;
  bool IsMainProcess() const { return process_index() == 0; }
  bool IsLocalMainProcess() const { return local_process_index() == 0; }
  absl::Status MainProcessFirst(const std::function<absl::Status()>& fn);
  absl::Status LocalMainProcessFirst(const std::function<absl::Status()>& fn);
  // `text` and a newline on stdout, on the local main process only.
  void Print(const std::string& text) const;
  const at::Device& device() const { return state_->device; }
  std::string mixed_precision() const { return state_->mixed_precision; }

  // accelerate.utils.set_seed: LibTorch's generators (CPU, CUDA) and the Accelerator's host
  // generators, whose states SaveState records (with a seed, in the layout Python's
  // accelerate's load_state reads too).
  absl::Status SetSeed(uint64_t seed);

  // --- Models and state ---
  // The module Prepare wrapped (the argument itself when it was not prepared).
  std::shared_ptr<modeling::Model> UnwrapModel(const std::shared_ptr<modeling::Model>& model);
  // The model's weights, whole (a collective under parameter sharding), into `dir` on the main
  // process: model.safetensors, sharded past max_shard_size with HF's index; config.json when
  // the model has one.
  absl::Status SaveModel(const std::shared_ptr<modeling::Model>& model, const std::string& dir,
                         uint64_t max_shard_size = 10'000'000'000, bool safe_serialization = true);
  // accelerate's save_state / load_state (accelerate/state_files.h for the layout).
  // SaveState(nullopt): <project_dir>/checkpoints/checkpoint_<n>, n counting saves.
  absl::StatusOr<std::string> SaveState(std::optional<std::string> dir = std::nullopt);
  absl::Status LoadState(const std::string& dir);
  // The precision's autocast for code outside the prepared model (accelerate's autocast()).
  precision::AutocastGuard Autocast() const;
  // A loader over the same shard that skips its first `num_batches` batches in every epoch
  // (accelerate's skip_first_batches: use it for the resumed epoch only).
  absl::StatusOr<std::shared_ptr<data::DataLoader>> SkipFirstBatches(
      const std::shared_ptr<data::DataLoader>& loader, int64_t num_batches);

  // --- Trackers (main process only) ---
  absl::Status InitTrackers(const std::string& project_name,
                            const logging::Scalars& config = {});
  absl::Status Log(const logging::Scalars& values, int64_t step);
  absl::Status EndTraining();

  // For tests and tools: the state the prepared objects share.
  const AcceleratorState& state() const { return *state_; }

 private:
  explicit Accelerator(std::shared_ptr<AcceleratorState> state) : state_(std::move(state)) {}
  absl::Status MaybeCreateStrategy();
  // The DeepSpeed config planned for the prepared model and loader (runtime's one planning
  // function, as the Trainer's), its sections Prepare cannot honour refused.
  absl::Status PlanDeepSpeed();
  // SaveState's files beyond the weights into `staging`: the optimizer (or the strategy's
  // partitions), schedulers, scaler (the saving process) and this process's random states.
  absl::Status WriteTrainingStateFiles(const std::string& staging, bool saver);

  std::shared_ptr<AcceleratorState> state_;
  std::string project_dir_;
  std::vector<std::string> log_with_;
  int save_iteration_ = 0;
  std::vector<std::unique_ptr<logging::MetricsSink>> trackers_;
};

}  // namespace loom::accelerate

#endif  // LOOM_ACCELERATE_ACCELERATOR_H_
