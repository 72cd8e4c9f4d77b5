#include "trainer/flow_callbacks.h"

#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>

#include <cmath>
#include <iostream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "args/deepspeed_config.h"
#include "data/data_loader.h"
#include "glog/logging.h"
#include "nlohmann/json.hpp"

namespace loom::trainer {
namespace {

// "eval_"-prefixed name of metric_for_best_model (HF accepts it with or without the prefix).
std::string MetricToCheck(const args::TrainingArguments& args) {
  std::string name = args.metric_for_best_model();
  return absl::StartsWith(name, "eval_") ? name : "eval_" + name;
}

Metrics WithoutTotalFlos(const Metrics& logs) {
  Metrics copy = logs;
  copy.erase("total_flos");
  return copy;
}

}  // namespace

absl::Status DefaultFlowCallback::OnStepEnd(const Event& e) {
  const auto& args = e.args;
  const auto& state = e.state;
  auto& control = e.control;
  if (state.global_step == 1 && args.logging_first_step()) control.should_log = true;
  if (args.logging_strategy() == "steps" && state.logging_steps > 0 &&
      state.global_step % state.logging_steps == 0) {
    control.should_log = true;
  }
  if (args.eval_strategy() == "steps" && state.eval_steps > 0 &&
      state.global_step % state.eval_steps == 0 && args.eval_delay() <= state.global_step) {
    control.should_evaluate = true;
  }
  if (args.save_strategy() == "steps" && state.save_steps > 0 &&
      state.global_step % state.save_steps == 0) {
    control.should_save = true;
  }
  if (state.global_step >= state.max_steps) {
    control.should_training_stop = true;
    if (args.save_strategy() == "steps") control.should_save = true;
  }
  return absl::OkStatus();
}

absl::Status DefaultFlowCallback::OnEpochEnd(const Event& e) {
  if (e.args.logging_strategy() == "epoch") e.control.should_log = true;
  if (e.args.eval_strategy() == "epoch" && e.args.eval_delay() <= e.state.epoch.value_or(0)) {
    e.control.should_evaluate = true;
  }
  if (e.args.save_strategy() == "epoch") e.control.should_save = true;
  return absl::OkStatus();
}

absl::Status PrinterCallback::OnLog(const Event& e) {
  if (!e.state.is_local_process_zero || e.logs == nullptr) return absl::OkStatus();
  std::ostream& out = out_ != nullptr ? *out_ : std::cout;
  out << PyDictRepr(WithoutTotalFlos(*e.logs)) << "\n";
  out.flush();
  return absl::OkStatus();
}

absl::Status ProgressCallback::OnTrainBegin(const Event& e) {
  if (!e.state.is_world_process_zero) return absl::OkStatus();
  logging::ProgressOptions options = options_;
  options.total = e.state.max_steps;
  options.disable = options.disable || e.args.disable_tqdm();
  training_bar_ = std::make_unique<logging::ProgressBar>(options);
  current_step_ = 0;
  return absl::OkStatus();
}

absl::Status ProgressCallback::OnStepEnd(const Event& e) {
  if (!e.state.is_world_process_zero || training_bar_ == nullptr) return absl::OkStatus();
  training_bar_->Update(e.state.global_step - current_step_);
  current_step_ = e.state.global_step;
  return absl::OkStatus();
}

absl::Status ProgressCallback::OnPredictionStep(const Event& e) {
  if (!e.state.is_world_process_zero || e.context.eval_dataloader == nullptr) {
    return absl::OkStatus();
  }
  std::optional<int64_t> total = e.context.eval_dataloader->NumBatches();
  if (!total) return absl::OkStatus();
  if (prediction_bar_ == nullptr) {
    logging::ProgressOptions options = options_;
    options.total = *total;
    options.disable = options.disable || e.args.disable_tqdm();
    prediction_bar_ = std::make_unique<logging::ProgressBar>(options);
  }
  prediction_bar_->Update(1);
  return absl::OkStatus();
}

absl::Status ProgressCallback::OnEvaluate(const Event& e) {
  if (e.state.is_world_process_zero) prediction_bar_.reset();
  return absl::OkStatus();
}

absl::Status ProgressCallback::OnPredict(const Event& e) {
  if (e.state.is_world_process_zero) prediction_bar_.reset();
  return absl::OkStatus();
}

absl::Status ProgressCallback::OnLog(const Event& e) {
  if (e.state.is_world_process_zero && training_bar_ != nullptr && e.logs != nullptr) {
    training_bar_->Write(PyDictRepr(WithoutTotalFlos(*e.logs)));
  }
  return absl::OkStatus();
}

absl::Status ProgressCallback::OnTrainEnd(const Event& e) {
  if (e.state.is_world_process_zero && training_bar_ != nullptr) {
    training_bar_->Close();
    training_bar_.reset();
  }
  return absl::OkStatus();
}

absl::Status EarlyStoppingCallback::OnTrainBegin(const Event& e) {
  if (!e.args.load_best_model_at_end()) {
    return absl::FailedPreconditionError(
        "EarlyStoppingCallback requires --load_best_model_at_end true");
  }
  if (e.args.metric_for_best_model().empty()) {
    return absl::FailedPreconditionError(
        "EarlyStoppingCallback requires --metric_for_best_model to be set");
  }
  if (e.args.eval_strategy() == "no") {
    return absl::FailedPreconditionError(
        "EarlyStoppingCallback requires an evaluation strategy: set --eval_strategy steps or "
        "epoch");
  }
  return absl::OkStatus();
}

absl::Status EarlyStoppingCallback::OnEvaluate(const Event& e) {
  const std::string name = MetricToCheck(e.args);
  auto it = e.metrics->find(name);
  if (it == e.metrics->end() || !it->is_number()) {
    LOG(WARNING) << "early stopping required metric_for_best_model, but did not find " << name
                 << " so early stopping is disabled";
    return absl::OkStatus();
  }
  const double value = it->get<double>();
  const auto& best = e.state.best_metric;
  const bool better =
      !best.has_value() || ((e.args.greater_is_better() ? value > *best : value < *best) &&
                            std::fabs(value - *best) > threshold_);
  counter_ = better ? 0 : counter_ + 1;
  if (counter_ >= patience_) e.control.should_training_stop = true;
  return absl::OkStatus();
}

std::optional<Metrics> EarlyStoppingCallback::ExportState() const {
  Metrics state = Metrics::object();
  state["args"]["early_stopping_patience"] = patience_;
  state["args"]["early_stopping_threshold"] = threshold_;
  state["attributes"]["early_stopping_patience_counter"] = counter_;
  return state;
}

absl::Status EarlyStoppingCallback::RestoreState(const Metrics& state) {
  try {
    const Metrics args = state.value("args", Metrics::object());
    const Metrics attributes = state.value("attributes", Metrics::object());
    patience_ = args.value("early_stopping_patience", 1);
    threshold_ = args.value("early_stopping_threshold", 0.0);
    counter_ = attributes.value("early_stopping_patience_counter", 0);
  } catch (const nlohmann::json::exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("stateful_callbacks.EarlyStoppingCallback: ", e.what()));
  }
  return absl::OkStatus();
}

absl::Status DeepSpeedProgressCallback::OnStepEnd(const Event& e) {
  if (every_ <= 0 || e.state.global_step % every_ != 0 || !e.state.is_world_process_zero ||
      e.context.optimizer == nullptr) {
    return absl::OkStatus();
  }
  LOG(INFO) << Line(e.state.global_step, 0, *e.context.optimizer);
  return absl::OkStatus();
}

std::string DeepSpeedProgressCallback::Line(int64_t step, int64_t skipped,
                                            const torch::optim::Optimizer& opt) {
  nlohmann::ordered_json lrs = nlohmann::ordered_json::array();
  std::vector<std::string> moms;
  for (const auto& group : opt.param_groups()) {
    lrs.push_back(group.options().get_lr());
    const auto& o = group.options();
    if (const auto* adamw = dynamic_cast<const torch::optim::AdamWOptions*>(&o)) {
      moms.push_back(args::PythonStr({std::get<0>(adamw->betas()), std::get<1>(adamw->betas())}));
    } else if (const auto* adam = dynamic_cast<const torch::optim::AdamOptions*>(&o)) {
      moms.push_back(args::PythonStr({std::get<0>(adam->betas()), std::get<1>(adam->betas())}));
    } else if (const auto* sgd = dynamic_cast<const torch::optim::SGDOptions*>(&o)) {
      moms.push_back(args::PythonStr(sgd->momentum()));
    }
  }
  // Python prints betas as a tuple.
  for (std::string& m : moms) {
    if (!m.empty() && m.front() == '[') m = "(" + m.substr(1, m.size() - 2) + ")";
  }
  return absl::StrCat("step=", step, ", skipped=", skipped, ", lr=", args::PythonStr(lrs),
                      ", mom=[", absl::StrJoin(moms, ", "), "]");
}

}  // namespace loom::trainer
