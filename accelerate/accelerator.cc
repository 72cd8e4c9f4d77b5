#include "accelerate/accelerator.h"

#include <cstdlib>
#include <iostream>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "accelerate/prepared.h"
#include "args/parser.h"
#include "args/training_args.h"
#include "base/file_util.h"
#include "base/status_macros.h"
#include "base/torch_status.h"
#include "data/shard_sampler.h"
#include "glog/logging.h"
#include "logging/jsonl_sink.h"
#include "logging/tensorboard_sink.h"
#include "nlohmann/json.hpp"
#include "runtime/full_parameters.h"
#include "runtime/model_files.h"
#include "runtime/strategy_setup.h"
#include "sharding/create_strategy.h"
#include "threads/thread_plan.h"
#include "runtime/run_setup.h"

namespace loom::accelerate {
namespace {

std::optional<std::string> Env(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return std::nullopt;
  return std::string(v);
}

// accelerate's str_to_bool for ACCELERATE_USE_CPU & co.
absl::StatusOr<bool> EnvBool(const char* name, const std::string& value) {
  const std::string v = absl::AsciiStrToLower(value);
  if (v == "1" || v == "true" || v == "yes" || v == "y" || v == "on" || v == "t") return true;
  if (v == "0" || v == "false" || v == "no" || v == "n" || v == "off" || v == "f") return false;
  return absl::InvalidArgumentError(absl::StrCat(name, "=", value, " is not a boolean"));
}

// Everything but the sampled indices past the first `skip` (a prepared loader's resumed epoch).
class SkippingSampler : public data::Sampler {
 public:
  SkippingSampler(std::unique_ptr<data::Sampler> inner, int64_t skip)
      : inner_(std::move(inner)), skip_(skip) {}
  int64_t Size() const override { return std::max<int64_t>(0, inner_->Size() - skip_); }
  std::vector<int64_t> Indices(int64_t epoch) const override {
    std::vector<int64_t> all = inner_->Indices(epoch);
    const size_t from = std::min(all.size(), static_cast<size_t>(skip_));
    return std::vector<int64_t>(all.begin() + static_cast<std::ptrdiff_t>(from), all.end());
  }

 private:
  std::unique_ptr<data::Sampler> inner_;
  int64_t skip_;
};

// What GatherForMetrics needs from a prepared loader's batches (accelerate's
// DataLoaderStateMixin): end_of_dataloader, and the real samples of the last round.
void ObserveLoader(data::DataLoader& loader, const std::shared_ptr<AcceleratorState>& state,
                   int64_t total_examples, int64_t round_size, bool drop_last) {
  std::weak_ptr<AcceleratorState> weak = state;
  loader.SetBatchObserver([weak, total_examples, round_size, drop_last](int64_t, int64_t,
                                                                       bool last) {
    std::shared_ptr<AcceleratorState> s = weak.lock();
    if (s == nullptr) return;
    s->end_of_dataloader = last;
    s->remainder = drop_last ? -1 : total_examples % round_size;
  });
}

}  // namespace

AccumulateScope::AccumulateScope(AcceleratorState* state) : state_(state) {
  // accelerate's _do_sync: the loader's last batch always synchronizes (and restarts the
  // count); otherwise every gradient_accumulation_steps-th micro-step does.
  if (state_->end_of_dataloader) {
    state_->step = 0;
    state_->sync_gradients = true;
  } else {
    state_->step += 1;
    state_->sync_gradients = state_->step % state_->gradient_accumulation_steps == 0;
  }
}

AccumulateScope::~AccumulateScope() = default;

namespace {

// gradient_accumulation_steps: the option, else accelerate's environment, else 1.
absl::StatusOr<int> AccumulationSteps(const AcceleratorOptions& o) {
  int ga = 1;
  if (o.gradient_accumulation_steps) {
    ga = *o.gradient_accumulation_steps;
  } else if (auto env = Env("ACCELERATE_GRADIENT_ACCUMULATION_STEPS")) {
    if (!absl::SimpleAtoi(*env, &ga)) {
      return absl::InvalidArgumentError(
          absl::StrCat("ACCELERATE_GRADIENT_ACCUMULATION_STEPS=", *env, " is not a number"));
    }
  }
  if (ga < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("Accelerator: gradient_accumulation_steps must be >= 1, got ", ga));
  }
  return ga;
}

// cpu: the option, else ACCELERATE_USE_CPU, else false.
absl::StatusOr<bool> UseCpu(const AcceleratorOptions& o) {
  if (o.cpu) return *o.cpu;
  if (auto env = Env("ACCELERATE_USE_CPU")) return EnvBool("ACCELERATE_USE_CPU", *env);
  return false;
}

// The strategy flags: the caller's, else those //tools:launch exported for an accelerate config.
absl::StatusOr<std::vector<std::string>> StrategyFlags(const AcceleratorOptions& o) {
  std::vector<std::string> flags = o.strategy_flags;
  if (!flags.empty()) return flags;
  auto env = Env("LOOM_ACCELERATE_TRAINING_ARGS");
  if (!env) return flags;
  nlohmann::json list = nlohmann::json::parse(*env, nullptr, /*allow_exceptions=*/false);
  if (!list.is_array()) {
    return absl::InvalidArgumentError(
        "LOOM_ACCELERATE_TRAINING_ARGS is not a JSON list of flags (//tools:launch sets it)");
  }
  for (const auto& f : list) {
    if (!f.is_string()) {
      return absl::InvalidArgumentError("LOOM_ACCELERATE_TRAINING_ARGS: a non-string flag");
    }
    flags.push_back(f.get<std::string>());
  }
  return flags;
}

// mixed_precision: the option, else ACCELERATE_MIXED_PRECISION, else the flags' --bf16 / --fp16.
absl::StatusOr<std::string> MixedPrecision(const AcceleratorOptions& o,
                                           const args::TrainingArguments& a) {
  std::optional<std::string> choice = o.mixed_precision;
  if (!choice) choice = Env("ACCELERATE_MIXED_PRECISION");
  std::string mixed =
      absl::AsciiStrToLower(choice.value_or(a.bf16() ? "bf16" : a.fp16() ? "fp16" : "no"));
  if (mixed != "no" && mixed != "bf16" && mixed != "fp16") {
    return absl::InvalidArgumentError(absl::StrCat(
        "Accelerator: mixed_precision '", mixed, "' is not one of no, bf16, fp16 (fp8 is not "
        "available in loom)"));
  }
  return mixed;
}

// The TrainingArguments the shared pieces read: the strategy flags, then the Accelerator's own
// settings over them, resolved as HF's __post_init__ resolves them.
absl::Status ResolveArguments(const AcceleratorOptions& o, int ga, bool cpu,
                              args::TrainingArguments& a, std::string* mixed) {
  ASSIGN_OR_RETURN(std::vector<std::string> flags, StrategyFlags(o));
  if (!flags.empty()) {
    args::ArgParser parser({.program = "Accelerator"});
    parser.AddGroup("TrainingArguments", &a);
    RETURN_IF_ERROR_CTX(parser.Parse(flags), "Accelerator: the strategy flags");
  }
  if (auto env = Env("ACCELERATE_USE_DEEPSPEED");
      env && EnvBool("ACCELERATE_USE_DEEPSPEED", *env).value_or(false) && a.deepspeed().empty()) {
    return absl::InvalidArgumentError(
        "Accelerator: ACCELERATE_USE_DEEPSPEED is set but no DeepSpeed config came with it "
        "(LOOM_ACCELERATE_TRAINING_ARGS); launch with //tools:launch --config_file");
  }
  ASSIGN_OR_RETURN(*mixed, MixedPrecision(o, a));
  a.set_output_dir(o.project_dir.empty() ? "." : o.project_dir);
  a.set_gradient_accumulation_steps(ga);
  a.set_use_cpu(cpu);
  // The Accelerator's choice wins over the flags' --bf16 / --fp16.
  a.set_bf16(*mixed == "bf16");
  a.set_fp16(*mixed == "fp16");
  a.add_report_to("none");
  ASSIGN_OR_RETURN(std::vector<std::string> warnings, args::PostInit(&a), "Accelerator");
  for (const std::string& w : warnings) LOG(WARNING) << w;
  return absl::OkStatus();
}

// This process's place in the run, the data-parallel topology, the device, threads and
// precision (the runtime the Trainer uses too).
absl::Status JoinRun(AcceleratorOptions& o, const std::string& mixed, AcceleratorState& state) {
  const args::TrainingArguments& a = state.args;
  RETURN_IF_ERROR_CTX(sharding::CheckFsdp(a), "Accelerator");
  ASSIGN_OR_RETURN(state.parallel, runtime::ParallelContext::Create(std::move(o.process_group), a),
                   "Accelerator: joining the process group");
  state.strategy_factory = o.strategy_factory;
  ASSIGN_OR_RETURN(state.topology,
                   runtime::DataParallelTopologyFor(a, state.parallel, o.strategy_factory),
                   "Accelerator");
  ASSIGN_OR_RETURN(
      runtime::RunSetup setup,
      runtime::ResolveRunSetup(a, state.parallel.local_rank(), state.parallel.world_size()),
      absl::StrCat("Accelerator (mixed_precision ", mixed, ")"));
  for (const std::string& w : setup.precision.warnings) LOG(WARNING) << w;
  RETURN_IF_ERROR(threads::ApplyThreadPlan(setup.threads));
  ASSIGN_OR_RETURN(state.precision, precision::TrainingPrecision::Create(setup.precision.policy),
                   "Accelerator");
  state.device = setup.device;
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<Accelerator>> Accelerator::Create(AcceleratorOptions o) {
  auto state = std::make_shared<AcceleratorState>();
  // Unset options: accelerate's environment (what `accelerate launch` exports), then the
  // strategy flags, then defaults.
  ASSIGN_OR_RETURN(const int ga, AccumulationSteps(o));
  ASSIGN_OR_RETURN(const bool cpu, UseCpu(o));
  std::string mixed;
  RETURN_IF_ERROR(ResolveArguments(o, ga, cpu, state->args, &mixed));
  RETURN_IF_ERROR(JoinRun(o, mixed, *state));
  state->mixed_precision = mixed;
  state->gradient_accumulation_steps = ga;
  state->split_batches = o.split_batches;
  state->even_batches = o.even_batches;
  auto accelerator = absl::WrapUnique(new Accelerator(std::move(state)));
  accelerator->project_dir_ = o.project_dir;
  accelerator->log_with_ = o.log_with;
  return accelerator;
}

Accelerator::~Accelerator() = default;

absl::Status Accelerator::PrepareOne(std::shared_ptr<modeling::Model>& model) {
  AcceleratorState& s = *state_;
  if (model == nullptr) return absl::InvalidArgumentError("Accelerator::Prepare: a null model");
  if (model == s.prepared_model.lock() || model == s.model ||
      dynamic_cast<PreparedModel*>(model.get()) != nullptr) {
    return absl::FailedPreconditionError(
        "Accelerator::Prepare: this model was already prepared; prepare each model once and "
        "use the prepared one");
  }
  if (s.model != nullptr) {
    return absl::UnimplementedError(
        "Accelerator::Prepare: a second model; loom's Accelerator trains one model (and one "
        "optimizer) per Accelerator");
  }
  RETURN_IF_ERROR_CTX(runtime::PlaceModel(*model, s.device), "Accelerator::Prepare");
  s.model = model;
  auto prepared = std::make_shared<PreparedModel>(model, state_);
  s.prepared_model = prepared;
  model = prepared;
  return absl::OkStatus();
}

absl::Status Accelerator::PrepareOne(std::shared_ptr<torch::optim::Optimizer>& optimizer) {
  AcceleratorState& s = *state_;
  if (optimizer == nullptr) {
    return absl::InvalidArgumentError("Accelerator::Prepare: a null optimizer");
  }
  if (optimizer == s.prepared_optimizer.lock() || optimizer == s.optimizer) {
    return absl::FailedPreconditionError(
        "Accelerator::Prepare: this optimizer was already prepared");
  }
  if (s.optimizer != nullptr) {
    return absl::UnimplementedError(
        "Accelerator::Prepare: a second optimizer; loom's Accelerator trains one model and one "
        "optimizer per Accelerator");
  }
  s.optimizer = optimizer;
  auto prepared = std::make_shared<AcceleratedOptimizer>(optimizer, state_);
  s.prepared_optimizer = prepared;
  optimizer = prepared;
  return absl::OkStatus();
}

absl::Status Accelerator::PrepareOne(std::shared_ptr<data::DataLoader>& loader) {
  AcceleratorState& s = *state_;
  if (loader == nullptr) return absl::InvalidArgumentError("Accelerator::Prepare: a null loader");
  if (loader->sampler() == nullptr) {
    return absl::UnimplementedError(
        "Accelerator::Prepare: a loader over an iterable dataset; prepare a map-style one");
  }
  const data::DataLoaderOptions& lo = loader->options();
  const int n = s.topology.data_parallel_size;
  data::DataLoaderOptions options = lo;
  std::unique_ptr<data::Sampler> sampler;
  if (n == 1) {
    // accelerate shards only across several processes: one keeps the batches as they are.
    sampler = std::make_unique<BorrowedSampler>(loader);
  } else {
    ASSIGN_OR_RETURN(std::unique_ptr<data::BatchShardSampler> shard,
                   data::BatchShardSampler::Create(
                       std::make_unique<BorrowedSampler>(loader),
                       data::BatchShardOptions()
                           .set_batch_size(lo.batch_size)
                           .set_drop_last(lo.drop_last)
                           .set_num_processes(n)
                           .set_process_index(s.topology.data_parallel_rank)
                           .set_split_batches(s.split_batches)
                           .set_even_batches(s.even_batches)),
                   "Accelerator::Prepare: sharding the loader");
    options.batch_size = shard->BatchSizePerRank();
    sampler = std::move(shard);
  }
  const int64_t total = loader->dataset()->Size();  // accelerate's len(dataset)
  ASSIGN_OR_RETURN(std::unique_ptr<data::DataLoader> prepared,
                   data::DataLoader::Create(options, loader->dataset(), std::move(sampler),
                                            std::make_shared<DeviceCollator>(loader->collator(),
                                                                             s.device)),
                   "Accelerator::Prepare");
  ObserveLoader(*prepared, state_, total, s.split_batches ? lo.batch_size : lo.batch_size * n,
                lo.drop_last);
  if (s.loader_batch_size == 0) s.loader_batch_size = options.batch_size;
  loader = std::move(prepared);
  return absl::OkStatus();
}

absl::Status Accelerator::PrepareOne(std::shared_ptr<optim::LrScheduler>& scheduler) {
  if (scheduler == nullptr) {
    return absl::InvalidArgumentError("Accelerator::Prepare: a null scheduler");
  }
  if (dynamic_cast<AcceleratedScheduler*>(scheduler.get()) != nullptr) {
    return absl::FailedPreconditionError(
        "Accelerator::Prepare: this scheduler was already prepared");
  }
  state_->schedulers.push_back(scheduler);
  scheduler = std::make_shared<AcceleratedScheduler>(scheduler, state_);
  return absl::OkStatus();
}

absl::Status Accelerator::MaybeCreateStrategy() {
  AcceleratorState& s = *state_;
  if (s.model == nullptr || s.optimizer == nullptr || s.strategy != nullptr) {
    return absl::OkStatus();
  }
  if (!s.args.deepspeed().empty()) RETURN_IF_ERROR(PlanDeepSpeed());
  ASSIGN_OR_RETURN(s.strategy,
                   runtime::SetUpStrategy({.args = &s.args,
                                           .model = s.model.get(),
                                           .optimizer = s.optimizer.get(),
                                           .precision = s.precision.get(),
                                           .parallel = &s.parallel,
                                           .deepspeed = s.deepspeed ? &*s.deepspeed : nullptr,
                                           .factory = s.strategy_factory}),
                   "Accelerator::Prepare: setting up data parallelism");
  LOG(INFO) << "Accelerator: data parallelism: " << s.strategy->Name() << " on "
            << s.device.str() << ", mixed precision " << s.mixed_precision
            << ", gradient accumulation " << s.gradient_accumulation_steps;
  return absl::OkStatus();
}

absl::Status Accelerator::PlanDeepSpeed() {
  AcceleratorState& s = *state_;
  // accelerate's _prepare_deepspeed: the micro-batch size is the prepared loader's.
  if (s.loader_batch_size == 0) {
    return absl::FailedPreconditionError(
        "Accelerator::Prepare: with a DeepSpeed config, prepare a data loader in the same "
        "Prepare call as the model and optimizer (or before): its batch size is "
        "train_micro_batch_size_per_gpu");
  }
  s.args.set_per_device_train_batch_size(s.loader_batch_size);
  ASSIGN_OR_RETURN(s.deepspeed,
                   runtime::PlanDeepSpeedForModel(s.args, s.topology.data_parallel_size,
                                                  *s.model, /*num_training_steps=*/0),
                   "Accelerator::Prepare: the DeepSpeed config");
  for (const char* section : {"optimizer", "scheduler"}) {
    if (s.deepspeed->config.raw.contains(section)) {
      return absl::UnimplementedError(absl::StrCat(
          "Accelerator::Prepare: the DeepSpeed config's \"", section,
          "\" section; loom's Accelerator trains the optimizer and scheduler you pass through "
          "Prepare: remove the section"));
    }
  }
  s.auto_clip = s.deepspeed->gradient_clipping;
  return absl::OkStatus();
}

absl::Status Accelerator::Backward(const at::Tensor& loss) {
  AcceleratorState& s = *state_;
  if (s.strategy == nullptr) {
    return absl::FailedPreconditionError(
        "Accelerator::Backward: nothing to train yet; pass the model and the optimizer through "
        "Prepare(...) first");
  }
  if (!loss.defined()) {
    return absl::InvalidArgumentError(
        "Accelerator::Backward: the loss is undefined (did the batch carry the labels?)");
  }
  RestoreGradients(s);  // a forward not made through the prepared model
  try {
    s.precision->ScaleLoss(loss / static_cast<double>(s.gradient_accumulation_steps)).backward();
  } catch (const std::exception& e) {
    return base::TorchErrorToStatus(e, absl::StatusCode::kInternal, "Accelerator::Backward");
  }
  RETURN_IF_ERROR_CTX(s.strategy->AfterBackward(), "Accelerator::Backward");
  if (s.sync_gradients) {
    ++s.communicating_backwards;
  } else {
    StashGradients(s);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::optional<double>> Accelerator::ClipGradNorm(double max_norm) {
  AcceleratorState& s = *state_;
  if (s.strategy == nullptr || !s.sync_gradients) {
    return absl::FailedPreconditionError(
        "Accelerator::ClipGradNorm: only on a micro-step that synchronizes gradients (check "
        "SyncGradients()) of a prepared model and optimizer");
  }
  ASSIGN_OR_RETURN(std::optional<double> norm, s.strategy->ClipGradients(max_norm),
                   "Accelerator::ClipGradNorm");
  s.clipped_this_window = true;
  return norm;
}

absl::Status Accelerator::ClipGradValue(double clip_value) {
  AcceleratorState& s = *state_;
  if (s.strategy == nullptr || !s.sync_gradients) {
    return absl::FailedPreconditionError(
        "Accelerator::ClipGradValue: only on a micro-step that synchronizes gradients (check "
        "SyncGradients()) of a prepared model and optimizer");
  }
  // Clamping .grad only works where the optimizer steps on the parameters' whole gradients.
  const sharding::StrategyCapabilities can = s.strategy->Capabilities();
  if (can.shards_gradients || can.shards_optimizer_state) {
    return absl::UnimplementedError(absl::StrCat(
        "Accelerator::ClipGradValue with ", s.strategy->Name(),
        ": the gradients are sharded; use ClipGradNorm, which covers every shard"));
  }
  RETURN_IF_ERROR(s.strategy->ClipGradients(0.0).status());  // unscale
  s.clipped_this_window = true;
  for (at::Tensor& p : s.model->parameters()) {
    if (p.grad().defined()) p.mutable_grad().clamp_(-clip_value, clip_value);
  }
  return absl::OkStatus();
}

absl::StatusOr<at::Tensor> Accelerator::Gather(const at::Tensor& t) {
  const at::Tensor rows = t.dim() == 0 ? t.unsqueeze(0) : t;
  ASSIGN_OR_RETURN(std::vector<at::Tensor> parts, state_->parallel.GatherRows(rows.cpu()),
                   "Accelerator::Gather");
  return at::cat(parts, 0).to(t.device());
}

absl::StatusOr<at::Tensor> Accelerator::GatherForMetrics(const at::Tensor& t) {
  AcceleratorState& s = *state_;
  const at::Tensor rows = t.dim() == 0 ? t.unsqueeze(0) : t;
  ASSIGN_OR_RETURN(std::vector<at::Tensor> parts, s.parallel.GatherRows(rows.cpu()),
                   "Accelerator::GatherForMetrics");
  // Ranks of one data-parallel replica saw the same samples: each replica counts once.
  std::vector<at::Tensor> replicas;
  for (size_t r = 0; r < parts.size(); ++r) {
    if (s.topology.LeadsReplica(static_cast<int>(r))) replicas.push_back(parts[r]);
  }
  const at::Tensor all = at::cat(replicas, 0).to(t.device());
  // accelerate: in the loader's last batch, only `remainder` gathered samples are real; the
  // rest are the samples even_batches repeated to fill the round.
  if (s.end_of_dataloader && s.remainder > 0 && all.size(0) > s.remainder) {
    return all.narrow(0, 0, s.remainder);
  }
  return all;
}

absl::StatusOr<at::Tensor> Accelerator::Reduce(const at::Tensor& t, const std::string& op) {
  if (op != "sum" && op != "mean") {
    return absl::InvalidArgumentError(
        absl::StrCat("Accelerator::Reduce: reduction '", op, "' is not sum or mean"));
  }
  ASSIGN_OR_RETURN(std::vector<at::Tensor> parts,
                   state_->parallel.GatherRows(t.unsqueeze(0).cpu()), "Accelerator::Reduce");
  at::Tensor sum = at::cat(parts, 0).sum(0);
  if (op == "mean") sum = sum / static_cast<double>(parts.size());
  return sum.to(t.scalar_type()).to(t.device());
}

absl::StatusOr<at::Tensor> Accelerator::PadAcrossProcesses(const at::Tensor& t, int64_t dim,
                                                           double pad_index, bool pad_first) {
  return state_->parallel.PadAcrossProcesses(t, dim, pad_index, pad_first);
}

absl::Status Accelerator::WaitForEveryone() { return state_->parallel.Barrier(); }

int Accelerator::num_processes() const { return state_->parallel.world_size(); }
int Accelerator::process_index() const { return state_->parallel.rank(); }
int Accelerator::local_process_index() const { return state_->parallel.local_rank(); }

absl::Status Accelerator::MainProcessFirst(const std::function<absl::Status()>& fn) {
  return state_->parallel.MainProcessFirst(/*local=*/false, fn);
}

absl::Status Accelerator::LocalMainProcessFirst(const std::function<absl::Status()>& fn) {
  return state_->parallel.MainProcessFirst(/*local=*/true, fn);
}

void Accelerator::Print(const std::string& text) const {
  if (IsLocalMainProcess()) std::cout << text << std::endl;
}

std::shared_ptr<modeling::Model> Accelerator::UnwrapModel(
    const std::shared_ptr<modeling::Model>& model) {
  if (auto* prepared = dynamic_cast<PreparedModel*>(model.get())) return prepared->module();
  return model;
}

precision::AutocastGuard Accelerator::Autocast() const {
  return precision::AutocastGuard(state_->precision->ForwardAutocast());
}

absl::StatusOr<std::shared_ptr<data::DataLoader>> Accelerator::SkipFirstBatches(
    const std::shared_ptr<data::DataLoader>& loader, int64_t num_batches) {
  if (loader == nullptr || loader->sampler() == nullptr || num_batches < 0) {
    return absl::InvalidArgumentError(
        "Accelerator::SkipFirstBatches: a map-style loader and num_batches >= 0");
  }
  const data::DataLoaderOptions& o = loader->options();
  ASSIGN_OR_RETURN(
      std::unique_ptr<data::DataLoader> skipping,
      data::DataLoader::Create(
          o, loader->dataset(),
          std::make_unique<SkippingSampler>(std::make_unique<BorrowedSampler>(loader),
                                            num_batches * o.batch_size),
          loader->collator()),
      "Accelerator::SkipFirstBatches");
  const AcceleratorState& s = *state_;
  // The same end-of-loader report as the (prepared) loader it skips into: a round is every
  // rank's batch.
  const int64_t round = o.batch_size * s.parallel.world_size();
  ObserveLoader(*skipping, state_, loader->dataset()->Size(), round, o.drop_last);
  return std::shared_ptr<data::DataLoader>(std::move(skipping));
}

absl::Status Accelerator::SaveModel(const std::shared_ptr<modeling::Model>& model,
                                    const std::string& dir, uint64_t max_shard_size,
                                    bool safe_serialization) {
  std::shared_ptr<modeling::Model> module = UnwrapModel(model);
  AcceleratorState& s = *state_;
  runtime::ModelFilesOptions options;
  options.max_shard_size = max_shard_size;
  options.safe_serialization = safe_serialization;
  const std::string what = absl::StrCat("Accelerator::SaveModel ", dir);
  const absl::Status written =
      runtime::WithFullParameters(s.strategy.get(), /*write_back=*/false, what, [&] {
        if (!IsMainProcess()) return absl::OkStatus();
        RETURN_IF_ERROR(base::MakeDirs(dir));
        return runtime::WriteModelFiles(dir, *module, options);
      });
  return s.parallel.AgreeOnStatus(written, what);
}

absl::Status Accelerator::InitTrackers(const std::string& project_name,
                                       const logging::Scalars& config) {
  if (!IsMainProcess()) return absl::OkStatus();
  const std::string dir =
      absl::StrCat(project_dir_.empty() ? "." : project_dir_, "/", project_name);
  for (const std::string& name : log_with_) {
    const bool all = name == "all";
    if (name == "tensorboard" || all) {
      ASSIGN_OR_RETURN(std::unique_ptr<logging::TensorBoardSink> tb,
                       logging::TensorBoardSink::Create(dir), "Accelerator::InitTrackers");
      trackers_.push_back(std::move(tb));
    }
    if (name == "jsonl" || all) {
      ASSIGN_OR_RETURN(std::unique_ptr<logging::JsonlSink> jsonl,
                       logging::JsonlSink::Create(dir + "/metrics.jsonl"),
                       "Accelerator::InitTrackers");
      trackers_.push_back(std::move(jsonl));
    }
    if (!all && name != "tensorboard" && name != "jsonl") {
      return absl::InvalidArgumentError(absl::StrCat(
          "Accelerator: log_with '", name, "' is not available in loom; use tensorboard, jsonl "
          "or all"));
    }
  }
  // accelerate's store_init_configuration: the run's configuration, here as step-0 scalars.
  if (!config.empty()) {
    logging::Scalars prefixed;
    for (const auto& [k, v] : config) prefixed.emplace_back("config/" + k, v);
    RETURN_IF_ERROR(Log(prefixed, 0));
  }
  return absl::OkStatus();
}

absl::Status Accelerator::Log(const logging::Scalars& values, int64_t step) {
  if (!IsMainProcess()) return absl::OkStatus();
  for (auto& sink : trackers_) {
    RETURN_IF_ERROR(sink->WriteScalars(step, values, logging::WallTimeSeconds()));
  }
  return absl::OkStatus();
}

absl::Status Accelerator::EndTraining() {
  for (auto& sink : trackers_) RETURN_IF_ERROR(sink->Flush());
  trackers_.clear();
  return absl::OkStatus();
}

}  // namespace loom::accelerate
