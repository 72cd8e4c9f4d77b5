#include "optim/deepspeed_optim.h"

#include <torch/optim/adagrad.h>
#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>

#include <cmath>
#include <set>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "optim/fused_cpu_optim.h"
#include "optim/torch_adamw.h"

namespace loom::optim {
namespace {

using json = nlohmann::ordered_json;

absl::Status Invalid(const std::string& message) { return absl::InvalidArgumentError(message); }

const json& Params(const json& raw, const char* section) {
  static const json kEmpty = json::object();
  if (!raw.contains(section) || !raw[section].is_object()) return kEmpty;
  const json& s = raw[section];
  return s.contains("params") && s["params"].is_object() ? s["params"] : kEmpty;
}

// The keys each optimizer type takes (DeepSpeed passes them to the constructor).
// DeepSpeed lower-cases the names of its own optimizers ("adamw" and "AdamW" are the same);
// torch's (SGD) are looked up as written.
std::string Canonical(const std::string& type) {
  const std::string lower = absl::AsciiStrToLower(type);
  if (lower == "adam") return "Adam";
  if (lower == "adamw") return "AdamW";
  if (lower == "adagrad") return "Adagrad";
  if (lower == "lamb") return "Lamb";
  if (lower == "onebitadam") return "OneBitAdam";
  if (lower == "zerooneadam") return "ZeroOneAdam";
  if (lower == "onebitlamb") return "OneBitLamb";
  return type;
}

const std::set<std::string>* OptimizerKeys(const std::string& type) {
  static const std::set<std::string> kAdam = {
      "lr",          "betas",           "eps",    "weight_decay", "torch_adam",
      "adam_w_mode", "bias_correction", "amsgrad"};
  static const std::set<std::string> kAdagrad = {"lr", "eps", "weight_decay", "lr_decay",
                                                 "initial_accumulator_value"};
  static const std::set<std::string> kSgd = {"lr", "momentum", "dampening", "weight_decay",
                                             "nesterov"};
  if (type == "Adam" || type == "AdamW") return &kAdam;
  if (type == "Adagrad") return &kAdagrad;
  if (type == "SGD") return &kSgd;
  return nullptr;
}

absl::StatusOr<double> Number(const json& params, const char* key, double fallback) {
  if (!params.contains(key) || params[key].is_null()) return fallback;
  const json& v = params[key];
  if (!v.is_number()) {
    return Invalid(
        absl::StrCat("--deepspeed: optimizer.params.", key, ": expected a number, got ", v.dump()));
  }
  return v.get<double>();
}

absl::StatusOr<bool> Bool(const json& params, const char* key, bool fallback) {
  if (!params.contains(key) || params[key].is_null()) return fallback;
  if (!params[key].is_boolean()) {
    return Invalid(absl::StrCat("--deepspeed: optimizer.params.", key,
                                ": expected true or false, got ", params[key].dump()));
  }
  return params[key].get<bool>();
}

// offload_optimizer on cpu or nvme: DeepSpeed builds its CPU optimizers (DeepSpeedCPUAdam,
// DeepSpeedCPUAdagrad) unless torch_adam asks for torch's.
bool CpuOptimizer(const args::DeepSpeedConfig& ds) {
  const auto& off = ds.zero_optimization.offload_optimizer;
  return off && off->device != args::OffloadDevice::kNone;
}

std::vector<at::Tensor> TrainableParameters(torch::nn::Module& model) {
  std::vector<at::Tensor> out;
  for (const at::Tensor& p : model.parameters()) {
    if (p.requires_grad()) out.push_back(p);
  }
  return out;
}

// DeepSpeed's warmup gamma (WarmupLR._get_gamma's first branch).
double WarmupGamma(int64_t it, int64_t warmup, bool log_type) {
  if (log_type) return (1.0 / std::log(static_cast<double>(warmup))) * std::log(it + 1.0);
  return static_cast<double>(it) / static_cast<double>(warmup);
}

}  // namespace

absl::Status CheckDeepSpeedOptimizer(const args::DeepSpeedConfig& ds, int zero_stage) {
  if (!ds.optimizer) return absl::OkStatus();
  const std::string type = Canonical(ds.optimizer->type);
  const json& params = Params(ds.raw, "optimizer");
  if (params.contains("max_grad_norm")) {
    return Invalid(
        "--deepspeed: optimizer.params.max_grad_norm: 'max_grad_norm' is not supported as an "
        "optimizer parameter, please switch to using the deepspeed parameter "
        "'gradient_clipping' (top level of the config)");
  }
  if ((type == "OneBitAdam" || type == "ZeroOneAdam" || type == "OneBitLamb") && zero_stage > 0) {
    return Invalid(absl::StrCat("--deepspeed: optimizer.type \"", type,
                                "\": this optimizer is not compatible with ZeRO (DeepSpeed); use "
                                "\"AdamW\" or set zero_optimization.stage to 0"));
  }
  const std::set<std::string>* keys = OptimizerKeys(type);
  if (keys == nullptr) {
    return Invalid(absl::StrCat(
        "--deepspeed: optimizer.type \"", type,
        "\" is not implemented in loom; use \"AdamW\", \"Adam\", \"Adagrad\" or \"SGD\", or remove "
        "the optimizer section to train with --optim"));
  }
  for (const auto& [key, value] : params.items()) {
    if (keys->count(key) == 0) {
      return Invalid(absl::StrCat("--deepspeed: optimizer.params.", key, ": ", type,
                                  " takes no such parameter in loom (it takes ",
                                  absl::StrJoin(*keys, ", "), "); remove it"));
    }
  }
  if (type == "Adam" || type == "AdamW") {
    ASSIGN_OR_RETURN(const bool bias_correction, Bool(params, "bias_correction", true));
    ASSIGN_OR_RETURN(const bool torch_adam, Bool(params, "torch_adam", false));
    if (!bias_correction && (!CpuOptimizer(ds) || torch_adam)) {
      return Invalid(
          "--deepspeed: optimizer.params.bias_correction: false is implemented in loom by its CPU "
          "Adam only (offload_optimizer on cpu or nvme, without torch_adam); torch's Adam always "
          "corrects the moments' bias; remove it");
    }
    ASSIGN_OR_RETURN(const bool amsgrad, Bool(params, "amsgrad", false));
    if (amsgrad) {
      return Invalid(
          "--deepspeed: optimizer.params.amsgrad: DeepSpeed's Adam does not support AMSGrad; "
          "remove it");
    }
    RETURN_IF_ERROR(Bool(params, "adam_w_mode", true).status());
  }
  if (type == "SGD" && !params.contains("lr")) {
    return Invalid("--deepspeed: optimizer.params.lr is required for SGD; set it (or \"auto\")");
  }
  if (type == "SGD" && zero_stage > 0 && !ds.zero_allow_untested_optimizer) {
    return Invalid(
        "--deepspeed: optimizer.type \"SGD\": You are using an untested ZeRO Optimizer. Please "
        "add <\"zero_allow_untested_optimizer\": true> in the configuration file to use it.");
  }
  for (const char* key : {"lr", "eps", "weight_decay", "momentum", "dampening", "lr_decay",
                          "initial_accumulator_value"}) {
    ASSIGN_OR_RETURN(const double v, Number(params, key, 0.0));
    if (v < 0 || !std::isfinite(v)) {
      return Invalid(absl::StrCat("--deepspeed: optimizer.params.", key, ": ", v,
                                  " must be a finite number >= 0"));
    }
  }
  if (params.contains("betas")) {
    const json& b = params["betas"];
    if (!b.is_array() || b.size() != 2 || !b[0].is_number() || !b[1].is_number() ||
        b[0].get<double>() < 0 || b[0].get<double>() >= 1 || b[1].get<double>() < 0 ||
        b[1].get<double>() >= 1) {
      return Invalid(absl::StrCat("--deepspeed: optimizer.params.betas: ", b.dump(),
                                  " must be two numbers in [0, 1)"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<torch::optim::Optimizer>> CreateDeepSpeedOptimizer(
    const args::DeepSpeedConfig& ds, torch::nn::Module& model) {
  if (!ds.optimizer) return absl::FailedPreconditionError("the config has no optimizer section");
  const std::string type = Canonical(ds.optimizer->type);
  const json& params = Params(ds.raw, "optimizer");
  const std::vector<at::Tensor> trainable = TrainableParameters(model);
  if (type == "Adam" || type == "AdamW") {
    const args::OptimizerConfig& o = *ds.optimizer;
    const double lr = o.lr.value_or(1e-3);
    const std::array<double, 2> betas = o.betas.value_or({0.9, 0.999});
    const double eps = o.eps.value_or(1e-8);
    const double wd = o.weight_decay.value_or(0.0);
    ASSIGN_OR_RETURN(const bool adam_w_mode, Bool(params, "adam_w_mode", true));
    // DeepSpeed: "Optimizer name of Adam forces AdamW logic unless adam_w_mode is explicitly
    // set".
    ASSIGN_OR_RETURN(const bool torch_adam, Bool(params, "torch_adam", false));
    ASSIGN_OR_RETURN(const bool bias_correction, Bool(params, "bias_correction", true));
    // With the optimizer offloaded: loom's fused CPU Adam (DeepSpeedCPUAdam's role), in
    // adamw_mode or with L2 decay, unless torch_adam.
    const bool cpu = CpuOptimizer(ds) && !torch_adam;
    if (type == "AdamW" || adam_w_mode) {
      auto options = torch::optim::AdamWOptions(lr)
                         .betas(std::make_tuple(betas[0], betas[1]))
                         .eps(eps)
                         .weight_decay(wd);
      if (cpu) {
        auto opt = std::make_unique<FusedCpuAdamW>(trainable, options);
        opt->set_bias_correction(bias_correction);
        return std::unique_ptr<torch::optim::Optimizer>(std::move(opt));
      }
      return std::unique_ptr<torch::optim::Optimizer>(
          std::make_unique<TorchAdamW>(trainable, options));
    }
    auto options = torch::optim::AdamOptions(lr)
                       .betas(std::make_tuple(betas[0], betas[1]))
                       .eps(eps)
                       .weight_decay(wd);
    if (cpu) {
      auto opt = std::make_unique<FusedCpuAdam>(trainable, options);
      opt->set_bias_correction(bias_correction);
      return std::unique_ptr<torch::optim::Optimizer>(std::move(opt));
    }
    return std::unique_ptr<torch::optim::Optimizer>(
        std::make_unique<TorchAdam>(trainable, options));
  }
  if (type == "Adagrad") {
    ASSIGN_OR_RETURN(const double lr, Number(params, "lr", 1e-2));
    ASSIGN_OR_RETURN(const double eps, Number(params, "eps", 1e-10));
    ASSIGN_OR_RETURN(const double wd, Number(params, "weight_decay", 0.0));
    ASSIGN_OR_RETURN(const double lr_decay, Number(params, "lr_decay", 0.0));
    ASSIGN_OR_RETURN(const double init, Number(params, "initial_accumulator_value", 0.0));
    auto options = torch::optim::AdagradOptions(lr)
                       .eps(eps)
                       .weight_decay(wd)
                       .lr_decay(lr_decay)
                       .initial_accumulator_value(init);
    if (CpuOptimizer(ds)) {  // DeepSpeedCPUAdagrad's role
      return std::unique_ptr<torch::optim::Optimizer>(
          std::make_unique<FusedCpuAdagrad>(trainable, options));
    }
    return std::unique_ptr<torch::optim::Optimizer>(
        std::make_unique<torch::optim::Adagrad>(trainable, options));
  }
  if (type == "SGD") {
    ASSIGN_OR_RETURN(const double lr, Number(params, "lr", 0.0));
    ASSIGN_OR_RETURN(const double momentum, Number(params, "momentum", 0.0));
    ASSIGN_OR_RETURN(const double dampening, Number(params, "dampening", 0.0));
    ASSIGN_OR_RETURN(const double wd, Number(params, "weight_decay", 0.0));
    ASSIGN_OR_RETURN(const bool nesterov, Bool(params, "nesterov", false));
    auto options = torch::optim::SGDOptions(lr)
                       .momentum(momentum)
                       .dampening(dampening)
                       .weight_decay(wd)
                       .nesterov(nesterov);
    return std::unique_ptr<torch::optim::Optimizer>(
        std::make_unique<torch::optim::SGD>(trainable, options));
  }
  return Invalid(absl::StrCat("--deepspeed: optimizer.type \"", type, "\" is not implemented"));
}

absl::Status CheckDeepSpeedScheduler(const args::DeepSpeedConfig& ds) {
  if (!ds.scheduler) return absl::OkStatus();
  const args::SchedulerConfig& s = *ds.scheduler;
  const json& params = Params(ds.raw, "scheduler");
  static const std::set<std::string> kWarmup = {
      "warmup_min_lr", "warmup_max_lr", "warmup_num_steps", "warmup_type", "last_batch_iteration"};
  static const std::set<std::string> kDecay = {"warmup_min_lr",        "warmup_max_lr",
                                               "warmup_num_steps",     "warmup_type",
                                               "last_batch_iteration", "total_num_steps"};
  static const std::set<std::string> kCosine = {"total_num_steps",  "warmup_min_ratio",
                                                "warmup_num_steps", "cos_min_ratio",
                                                "warmup_type",      "last_batch_iteration"};
  static const std::set<std::string> kRange = {"lr_range_test_min_lr", "lr_range_test_step_size",
                                               "lr_range_test_step_rate", "lr_range_test_staircase",
                                               "last_batch_iteration"};
  const std::set<std::string>* keys = nullptr;
  if (s.type == "WarmupLR") keys = &kWarmup;
  if (s.type == "WarmupDecayLR") keys = &kDecay;
  if (s.type == "WarmupCosineLR") keys = &kCosine;
  if (s.type == "LRRangeTest") keys = &kRange;
  if (keys == nullptr) {
    return Invalid(absl::StrCat(
        "--deepspeed: scheduler.type \"", s.type,
        "\" is not implemented in loom; use \"WarmupLR\", \"WarmupDecayLR\", \"WarmupCosineLR\" "
        "or \"LRRangeTest\", or remove the scheduler section to use --lr_scheduler_type"));
  }
  for (const auto& [key, value] : params.items()) {
    if (keys->count(key) == 0) {
      return Invalid(absl::StrCat("--deepspeed: scheduler.params.", key, ": ", s.type,
                                  " takes no such parameter (it takes ", absl::StrJoin(*keys, ", "),
                                  "); remove it"));
    }
    if (key != "warmup_type" && key != "lr_range_test_staircase" && !value.is_number()) {
      return Invalid(absl::StrCat("--deepspeed: scheduler.params.", key,
                                  ": expected a number, got ", value.dump(),
                                  value == "auto" ? " (an \"auto\" that was not resolved)" : ""));
    }
  }
  if (s.last_batch_iteration != -1) {
    return Invalid(absl::StrCat(
        "--deepspeed: scheduler.params.last_batch_iteration: ", s.last_batch_iteration,
        " is not supported (resume through --resume_from_checkpoint instead); remove it"));
  }
  if ((s.type == "WarmupDecayLR" || s.type == "WarmupCosineLR") &&
      (!s.total_num_steps || s.total_num_steps->is_auto())) {
    return Invalid(absl::StrCat("--deepspeed: scheduler.params.total_num_steps is required for ",
                                s.type, "; set it or \"auto\""));
  }
  if (s.type == "LRRangeTest") {
    if (params.contains("lr_range_test_step_size") &&
        !(params["lr_range_test_step_size"].get<double>() > 0)) {
      return Invalid("--deepspeed: scheduler.params.lr_range_test_step_size must be > 0");
    }
    if (params.contains("lr_range_test_staircase") &&
        !params["lr_range_test_staircase"].is_boolean()) {
      return Invalid(
          "--deepspeed: scheduler.params.lr_range_test_staircase: expected true or false");
    }
  }
  if (s.type == "WarmupCosineLR" && s.total_num_steps &&
      s.total_num_steps->value() <= std::max<int64_t>(2, s.warmup_num_steps.value_or(1000))) {
    return Invalid(absl::StrCat(
        "--deepspeed: scheduler.params.total_num_steps (", s.total_num_steps->value(),
        ") must exceed warmup_num_steps for WarmupCosineLR (DeepSpeed divides by the difference)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<LrScheduler>> CreateDeepSpeedScheduler(
    const args::DeepSpeedConfig& ds, torch::optim::Optimizer* optimizer) {
  if (!ds.scheduler || optimizer == nullptr) {
    return absl::FailedPreconditionError("a scheduler section and an optimizer are needed");
  }
  RETURN_IF_ERROR(CheckDeepSpeedScheduler(ds));
  const args::SchedulerConfig& s = *ds.scheduler;
  const json& params = Params(ds.raw, "scheduler");
  const bool log_type = s.warmup_type != "linear";  // DeepSpeed falls back to log
  const int64_t warmup = std::max<int64_t>(2, s.warmup_num_steps.value_or(1000));
  if (s.type == "WarmupLR" || s.type == "WarmupDecayLR") {
    const double min_lr = s.warmup_min_lr.value_or(0.0);
    const double max_lr = s.warmup_max_lr.value_or(0.001);
    const bool decay = s.type == "WarmupDecayLR";
    const int64_t total = decay ? s.total_num_steps->value() : 0;
    return std::unique_ptr<LrScheduler>(
        std::make_unique<DeepSpeedScheduler>(optimizer, [=](size_t, int64_t it) {
          double gamma = 1.0;
          if (it < warmup) {
            gamma = WarmupGamma(it, warmup, log_type);
          } else if (decay) {
            gamma = std::max(0.0, static_cast<double>(total - it) /
                                      std::max(1.0, static_cast<double>(total - warmup)));
          }
          return min_lr + (max_lr - min_lr) * gamma;
        }));
  }
  if (s.type == "WarmupCosineLR") {
    const int64_t total = s.total_num_steps->value();
    const double warmup_min_ratio = s.warmup_min_ratio;
    const double cos_min_ratio = s.cos_min_ratio;
    const std::vector<double> org_lrs = GroupLrs(*optimizer);
    return std::unique_ptr<LrScheduler>(
        std::make_unique<DeepSpeedScheduler>(optimizer, [=](size_t group, int64_t it) {
          double ratio;
          if (it < warmup) {
            ratio = warmup_min_ratio + WarmupGamma(it, warmup, log_type) * (1.0 - warmup_min_ratio);
          } else {
            const double real_last = static_cast<double>(it - warmup + 1);
            const double real_total = static_cast<double>(total - warmup);
            ratio = (1 + std::cos(M_PI * real_last / real_total)) / 2;
            ratio = std::max(0.0, cos_min_ratio + (1.0 - cos_min_ratio) * ratio);
          }
          return org_lrs[group] * ratio;
        }));
  }
  // LRRangeTest
  const double min_lr = params.value("lr_range_test_min_lr", 1e-3);
  const double step_size = params.value("lr_range_test_step_size", 2000.0);
  const double step_rate = params.value("lr_range_test_step_rate", 1.0);
  const bool staircase = params.value("lr_range_test_staircase", false);
  return std::unique_ptr<LrScheduler>(std::make_unique<DeepSpeedScheduler>(
      optimizer,
      [=](size_t, int64_t it) {
        double interval = static_cast<double>(it + 1) / step_size;
        if (staircase) interval = std::floor(interval);
        return min_lr * (1 + step_rate * interval);
      },
      std::vector<double>(optimizer->param_groups().size(), min_lr)));
}

DeepSpeedScheduler::DeepSpeedScheduler(torch::optim::Optimizer* optimizer, LrFn lr,
                                       std::vector<double> initial_lrs)
    : optimizer_(optimizer), lr_(std::move(lr)) {
  auto& groups = optimizer_->param_groups();
  for (size_t i = 0; i < initial_lrs.size() && i < groups.size(); ++i) {
    groups[i].options().set_lr(initial_lrs[i]);
  }
}

void DeepSpeedScheduler::Step() {
  ++last_batch_iteration_;
  auto& groups = optimizer_->param_groups();
  last_lr_.clear();
  for (size_t i = 0; i < groups.size(); ++i) {
    groups[i].options().set_lr(lr_(i, last_batch_iteration_));
    last_lr_.push_back(groups[i].options().get_lr());
  }
}

std::vector<double> DeepSpeedScheduler::LastLr() const {
  if (last_lr_.empty()) return std::vector<double>(optimizer_->param_groups().size(), 0.0);
  return last_lr_;
}

c10::IValue DeepSpeedScheduler::StateDict() const {
  c10::impl::GenericDict dict(c10::StringType::get(), c10::AnyType::get());
  dict.insert("last_batch_iteration", last_batch_iteration_);
  return dict;
}

absl::Status DeepSpeedScheduler::LoadStateDict(const c10::IValue& state) {
  if (!state.isGenericDict()) {
    return Invalid("the DeepSpeed scheduler state is not a dict");
  }
  const c10::impl::GenericDict dict = state.toGenericDict();
  auto it = dict.find("last_batch_iteration");
  if (it == dict.end() || !it->value().isInt()) {
    return Invalid("the DeepSpeed scheduler state has no integer 'last_batch_iteration'");
  }
  last_batch_iteration_ = it->value().toInt();
  last_lr_.clear();
  if (last_batch_iteration_ >= 0) {
    // DeepSpeed's load_state_dict sets only the counter; the lrs come back with the
    // optimizer's state. _last_lr is what the optimizer holds.
    last_lr_ = GroupLrs(*optimizer_);
  }
  return absl::OkStatus();
}

}  // namespace loom::optim
