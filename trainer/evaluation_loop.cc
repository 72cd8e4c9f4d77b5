// Trainer::Evaluate / Predict / EvaluationLoop / PredictionStep: HF's evaluation_loop shared by
// evaluate() and predict() (transformers 4.41 Trainer.evaluation_loop).
#include <torch/types.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "args/training_args.h"
#include "base/status_macros.h"
#include "base/torch_status.h"
#include "data/shard_sampler.h"
#include "trainer/numpy_mean.h"
#include "trainer/trainer.h"
#include "runtime/strategy_setup.h"

namespace loom::trainer {
namespace {

double NowSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// HF torch_pad_and_concatenate: concatenates along dim 0; when the second dimension differs,
// both are right-padded with `padding_index` to the longer one first.
at::Tensor PadAndConcatenate(const at::Tensor& a, const at::Tensor& b, int64_t padding_index) {
  if (a.dim() <= 1 || a.size(1) == b.size(1)) return at::cat({a, b.to(a.device())}, 0);
  std::vector<int64_t> shape = a.sizes().vec();
  shape[0] = a.size(0) + b.size(0);
  shape[1] = std::max(a.size(1), b.size(1));
  at::Tensor out = at::full(shape, padding_index, a.options());
  out.narrow(0, 0, a.size(0)).narrow(1, 0, a.size(1)).copy_(a);
  out.narrow(0, a.size(0), b.size(0)).narrow(1, 0, b.size(1)).copy_(b);
  return out;
}

// Accumulates per-batch tensors (one slot per output) into padded concatenations.
class Accumulator {
 public:
  void Add(const std::vector<at::Tensor>& tensors) {
    if (slots_.empty()) slots_.resize(tensors.size());
    for (size_t i = 0; i < tensors.size() && i < slots_.size(); ++i) {
      slots_[i] = slots_[i].defined() ? PadAndConcatenate(slots_[i], tensors[i], -100) : tensors[i];
    }
  }
  void ToCpu() {
    for (at::Tensor& t : slots_) {
      if (t.defined()) t = t.cpu();
    }
  }
  std::vector<at::Tensor> Take() {
    ToCpu();
    return std::move(slots_);
  }
  bool empty() const { return slots_.empty(); }

 private:
  std::vector<at::Tensor> slots_;
};

std::optional<int64_t> FindBatchSize(const data::Batch& inputs) {
  for (const auto& [name, tensor] : inputs) {
    if (tensor.defined() && tensor.dim() > 0) return tensor.size(0);
  }
  return std::nullopt;
}

// One evaluation step's results on one rank.
struct StepRecord {
  int64_t batch_size = 0;
  std::optional<double> loss;  // the batch's mean loss
  std::vector<at::Tensor> logits;
  std::vector<at::Tensor> labels;
  at::Tensor inputs;
};

// HF's accelerator.pad_across_processes(t, dim=1, pad_index=-100) for tensors with a dim 1:
// sequence outputs of dynamically padded batches differ in length per rank.
absl::StatusOr<at::Tensor> PadDim1(runtime::ParallelContext& parallel, const at::Tensor& t) {
  if (t.dim() < 2) return t;
  return parallel.PadAcrossProcesses(t, 1, -100);
}

// Every rank's record of this step, in rank order (one process: just `mine`). A padding step
// (data/shard_sampler.h EvalShardSampler) contributes nothing but takes part in the gathers.
absl::StatusOr<std::vector<StepRecord>> GatherStep(runtime::ParallelContext& parallel, StepRecord mine,
                                                   bool padding) {
  if (parallel.world_size() == 1) return std::vector<StepRecord>{std::move(mine)};
  std::vector<StepRecord> all(parallel.world_size());
  auto rows = [&](const at::Tensor& t) { return padding ? t.narrow(0, 0, 0) : t; };
  at::Tensor size = at::full({1}, padding ? 0 : mine.batch_size, at::kLong);
  ASSIGN_OR_RETURN(std::vector<at::Tensor> sizes, parallel.GatherRows(size), "batch sizes");
  for (size_t r = 0; r < all.size(); ++r) all[r].batch_size = sizes[r].item<int64_t>();
  if (mine.loss) {
    at::Tensor loss = at::full({padding ? 0 : 1}, *mine.loss, at::kDouble);
    ASSIGN_OR_RETURN(std::vector<at::Tensor> losses, parallel.GatherRows(loss), "losses");
    for (size_t r = 0; r < all.size(); ++r) {
      if (losses[r].numel() > 0) all[r].loss = losses[r].item<double>();
    }
  }
  auto gather_list = [&](const std::vector<at::Tensor>& mine_list,
                         std::vector<at::Tensor> StepRecord::*field) -> absl::Status {
    for (const at::Tensor& t : mine_list) {
      ASSIGN_OR_RETURN(at::Tensor padded, PadDim1(parallel, rows(t).cpu()));
      ASSIGN_OR_RETURN(std::vector<at::Tensor> parts, parallel.GatherRows(padded), "predictions");
      for (size_t r = 0; r < all.size(); ++r) (all[r].*field).push_back(parts[r]);
    }
    return absl::OkStatus();
  };
  RETURN_IF_ERROR(gather_list(mine.logits, &StepRecord::logits));
  RETURN_IF_ERROR(gather_list(mine.labels, &StepRecord::labels));
  if (mine.inputs.defined()) {
    ASSIGN_OR_RETURN(at::Tensor padded, PadDim1(parallel, rows(mine.inputs).cpu()));
    ASSIGN_OR_RETURN(std::vector<at::Tensor> parts, parallel.GatherRows(padded), "inputs");
    for (size_t r = 0; r < all.size(); ++r) all[r].inputs = parts[r];
  }
  return all;
}

}  // namespace

absl::StatusOr<Metrics> Trainer::Evaluate(const std::vector<std::string>& ignore_keys) {
  if (options_.eval_datasets.empty()) {
    return Evaluate(options_.eval_dataset, ignore_keys, "eval");
  }
  Metrics all = Metrics::object();
  for (const auto& [name, dataset] : options_.eval_datasets) {
    ASSIGN_OR_RETURN(Metrics m, Evaluate(dataset, ignore_keys, "eval_" + name),
                     absl::StrCat("eval dataset '", name, "'"));
    for (auto it = m.begin(); it != m.end(); ++it) all[it.key()] = it.value();
  }
  return all;
}

absl::StatusOr<EvalLoopOutput> Trainer::TimedEvaluationLoop(
    data::DataLoader& dataloader, const std::string& description,
    std::optional<bool> prediction_loss_only, const std::vector<std::string>& ignore_keys,
    const std::string& metric_key_prefix) {
  const double start = NowSeconds();
  ASSIGN_OR_RETURN(EvalLoopOutput output,
                   EvaluationLoop(dataloader, description, prediction_loss_only, ignore_keys,
                                  metric_key_prefix));
  // HF: steps counted with eval_batch_size * world_size (its data-parallel world size).
  const double total_batch_size =
      static_cast<double>(args::EvalBatchSizePerDevice(args_) * topology_.data_parallel_size);
  Metrics speed =
      SpeedMetrics(metric_key_prefix, start, NowSeconds(), static_cast<double>(output.num_samples),
                   std::ceil(output.num_samples / total_batch_size));
  for (auto it = speed.begin(); it != speed.end(); ++it) output.metrics[it.key()] = it.value();
  return output;
}

absl::StatusOr<Metrics> Trainer::Evaluate(std::shared_ptr<const data::Dataset> dataset,
                                          const std::vector<std::string>& ignore_keys,
                                          const std::string& metric_key_prefix) {
  memory_tracker_->Start("eval");
  ASSIGN_OR_RETURN(std::unique_ptr<data::DataLoader> dataloader, GetEvalDataloader(dataset),
                   "eval dataloader");
  std::optional<bool> loss_only;
  if (!options_.compute_metrics) loss_only = true;
  ASSIGN_OR_RETURN(EvalLoopOutput output, TimedEvaluationLoop(*dataloader, "Evaluation", loss_only,
                                                              ignore_keys, metric_key_prefix));
  RETURN_IF_ERROR(Log(output.metrics));
  RETURN_IF_ERROR(callbacks_.OnEvaluate(args_, state_, control_, output.metrics));
  memory_tracker_->StopAndUpdateMetrics("eval", &output.metrics);
  return output.metrics;
}

absl::StatusOr<PredictionOutput> Trainer::Predict(std::shared_ptr<const data::Dataset> dataset,
                                                  const std::vector<std::string>& ignore_keys,
                                                  const std::string& metric_key_prefix) {
  memory_tracker_->Start("test");
  ASSIGN_OR_RETURN(std::unique_ptr<data::DataLoader> dataloader, GetTestDataloader(dataset),
                   "test dataloader");
  ASSIGN_OR_RETURN(
      EvalLoopOutput output,
      TimedEvaluationLoop(*dataloader, "Prediction", std::nullopt, ignore_keys, metric_key_prefix));
  RETURN_IF_ERROR(callbacks_.OnPredict(args_, state_, control_, output.metrics));
  memory_tracker_->StopAndUpdateMetrics("test", &output.metrics);
  PredictionOutput result;
  result.predictions = std::move(output.predictions);
  result.label_ids = std::move(output.label_ids);
  result.metrics = std::move(output.metrics);
  return result;
}

absl::StatusOr<PredictionStepOutput> Trainer::PredictionStep(
    Model& model, data::Batch& inputs, bool prediction_loss_only,
    const std::vector<std::string>& ignore_keys) {
  const std::vector<std::string> label_names = LabelNames();
  bool has_labels = !label_names.empty();
  for (const std::string& name : label_names) has_labels = has_labels && inputs.count(name) > 0;
  data::Batch prepared = PrepareInputs(inputs);
  PredictionStepOutput out;
  if (has_labels) {
    for (const std::string& name : label_names) out.labels.push_back(prepared.at(name).detach());
  }
  auto keep = [&](const std::string& key) {
    for (const std::string& k : ignore_keys) {
      if (k == key) return false;
    }
    return true;
  };
  torch::NoGradGuard no_grad;
  ModelOutput outputs;
  {
    // HF's compute_loss_context_manager around prediction_step's forward (cpu_amp); the
    // model's own autocast is CallModel's.
    precision::AutocastGuard autocast(precision_->LossAutocast());
    if (has_labels) {
      ASSIGN_OR_RETURN(LossOutput lo, ComputeLoss(model, prepared, /*return_outputs=*/true));
      out.loss = lo.loss.mean().detach();
      outputs = std::move(*lo.outputs);
    } else {
      outputs = CallModel(model, prepared);
    }
  }
  if (prediction_loss_only) {
    out.labels.clear();
    return out;
  }
  for (const auto& [key, value] : outputs.outputs) {
    if (!keep(key)) continue;
    // bf16 outputs (a --bf16_full_eval model) become fp32, as HF's nested_numpify does (numpy
    // has no bf16); fp16 ones stay fp16, as in HF.
    const bool bf16 = value.scalar_type() == at::kBFloat16;
    out.logits.push_back(bf16 ? value.detach().to(at::kFloat) : value.detach());
  }
  return out;
}

namespace {

// What the evaluation loop adds up over the gathered steps.
struct EvalTotals {
  // Each example's batch loss (HF: `loss.repeat(batch_size)`, gathered in float32).
  std::vector<float> losses;
  bool have_loss = false;
  Accumulator preds, labels, inputs;
  int64_t observed = 0;
};

// This rank's record of one prediction step.
StepRecord MakeRecord(int64_t batch_size, at::Tensor inputs, PredictionStepOutput step_out,
                      const PreprocessLogitsFn& preprocess_logits) {
  StepRecord record;
  record.batch_size = batch_size;
  record.inputs = std::move(inputs);
  if (step_out.loss.defined()) record.loss = step_out.loss.item<double>();
  if (!step_out.logits.empty()) {
    if (preprocess_logits) {
      at::Tensor label = step_out.labels.empty() ? at::Tensor() : step_out.labels.front();
      step_out.logits = {preprocess_logits(step_out.logits.front(), label)};
    }
    record.logits = std::move(step_out.logits);
  }
  record.labels = std::move(step_out.labels);
  return record;
}

// Every rank's record of a step into the totals: padding steps and the ranks that repeat their
// data-parallel replica's batch count nothing.
void AddRecords(const std::vector<StepRecord>& records, const sharding::DataParallelTopology& topology,
                int world_size, EvalTotals& totals) {
  for (size_t rank = 0; rank < records.size(); ++rank) {
    const StepRecord& r = records[rank];
    if (r.batch_size == 0 && world_size > 1) continue;  // padding
    // Ranks of one data-parallel replica evaluated the same batch: count it once.
    if (!topology.LeadsReplica(static_cast<int>(rank))) continue;
    totals.observed += r.batch_size;
    if (r.loss) {
      totals.have_loss = true;
      // HF repeats the batch's mean loss once per example, then averages them all.
      totals.losses.insert(totals.losses.end(), static_cast<size_t>(r.batch_size),
                           static_cast<float>(*r.loss));
    }
    if (r.inputs.defined()) totals.inputs.Add({r.inputs});
    if (!r.logits.empty()) totals.preds.Add(r.logits);
    if (!r.labels.empty()) totals.labels.Add(r.labels);
  }
}

// The loop's output: predictions, labels, compute_metrics' metrics and the mean loss, with the
// keys prefixed as HF does (keys already prefixed keep their place; the others move to the end).
absl::StatusOr<EvalLoopOutput> FinishEvaluation(EvalTotals& totals,
                                                const ComputeMetricsFn& compute_metrics,
                                                const std::string& metric_key_prefix) {
  EvalLoopOutput output;
  const bool has_labels = !totals.labels.empty();
  output.predictions = totals.preds.Take();
  output.label_ids = totals.labels.Take();
  output.num_samples = totals.observed;
  Metrics metrics = Metrics::object();
  if (compute_metrics && !output.predictions.empty() && has_labels) {
    EvalPrediction prediction{output.predictions, output.label_ids, at::Tensor()};
    std::vector<at::Tensor> inputs = totals.inputs.Take();
    if (!inputs.empty()) prediction.inputs = inputs.front();
    ASSIGN_OR_RETURN(metrics, compute_metrics(prediction), "compute_metrics");
  }
  if (totals.have_loss && !totals.losses.empty()) {
    // HF: `all_losses.mean().item()`, numpy's float32 mean.
    metrics[metric_key_prefix + "_loss"] = static_cast<double>(NumpyFloat32Mean(totals.losses));
  }
  const std::string prefix = metric_key_prefix + "_";
  for (auto m = metrics.begin(); m != metrics.end(); ++m) {
    if (absl::StartsWith(m.key(), prefix)) output.metrics[m.key()] = m.value();
  }
  for (auto m = metrics.begin(); m != metrics.end(); ++m) {
    if (!absl::StartsWith(m.key(), prefix)) output.metrics[prefix + m.key()] = m.value();
  }
  return output;
}

}  // namespace

absl::StatusOr<EvalLoopOutput> Trainer::EvaluationLoop(data::DataLoader& dataloader,
                                                       const std::string& description,
                                                       std::optional<bool> prediction_loss_only_opt,
                                                       const std::vector<std::string>& ignore_keys,
                                                       const std::string& metric_key_prefix) {
  // (--eval_do_concat_batches false and --batch_eval_metrics are refused when the arguments
  // are resolved: args/field_support.h.)
  const bool prediction_loss_only = prediction_loss_only_opt.value_or(args_.prediction_loss_only());
  RETURN_IF_ERROR(SetUpZeroInference());
  // No strategy shards the parameters here: a model still deferred is built whole.
  if (strategy_ == nullptr) RETURN_IF_ERROR(runtime::MaterializeWholeModel(*model_));
  try {
    // HF: outside training, --fp16_full_eval / --bf16_full_eval cast the model itself (it
    // stays in that dtype afterwards, as in HF).
    if (!is_in_train_ && precision_->policy().full_eval_dtype) {
      model_->to(*precision_->policy().full_eval_dtype);
    }
    model_->eval();
    callbacks_.context().eval_dataloader = &dataloader;
    EvalTotals totals;
    ASSIGN_OR_RETURN(std::unique_ptr<data::BatchIterator> it, dataloader.Epoch(0),
                     description + " dataloader");
    // In a multi-process run each rank evaluates whole batches of its share and the results
    // are gathered step by step, so the totals are the single-process ones.
    const auto* shard = dynamic_cast<const data::EvalShardSampler*>(dataloader.sampler());
    for (int64_t step = 0;; ++step) {
      ASSIGN_OR_RETURN(std::optional<data::Batch> batch, it->Next(),
                       absl::StrCat(description, " batch ", step));
      if (!batch) break;
      const int64_t batch_size = FindBatchSize(*batch).value_or(0);
      at::Tensor inputs;
      if (args_.include_inputs_for_metrics()) {
        auto in = batch->find(model_->MainInputName());
        if (in != batch->end()) inputs = in->second;
      }
      ASSIGN_OR_RETURN(PredictionStepOutput step_out,
                       PredictionStep(*model_, *batch, prediction_loss_only, ignore_keys));
      const bool padding = shard != nullptr && step >= shard->RealBatches();
      ASSIGN_OR_RETURN(std::vector<StepRecord> records,
                       GatherStep(parallel_,
                                  MakeRecord(batch_size, std::move(inputs), std::move(step_out),
                                             options_.preprocess_logits_for_metrics),
                                  padding),
                       absl::StrCat(description, " step ", step, ": gathering across ranks"));
      AddRecords(records, topology_, parallel_.world_size(), totals);
      RETURN_IF_ERROR(callbacks_.OnPredictionStep(args_, state_, control_));
      if (args_.eval_accumulation_steps() > 0 &&
          (step + 1) % args_.eval_accumulation_steps() == 0) {
        totals.preds.ToCpu();
        totals.labels.ToCpu();
        totals.inputs.ToCpu();
      }
    }
    callbacks_.context().eval_dataloader = nullptr;
    return FinishEvaluation(totals, options_.compute_metrics, metric_key_prefix);
  } catch (const std::exception& e) {
    callbacks_.context().eval_dataloader = nullptr;
    return base::TorchErrorToStatus(e, absl::StatusCode::kInternal,
                                    absl::StrCat(description, " loop"));
  }
}

}  // namespace loom::trainer
