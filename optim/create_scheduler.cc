// CreateScheduler: HF's get_scheduler over --lr_scheduler_type / --lr_scheduler_kwargs
// (see lr_scheduler.h for the contract).
#include <glog/logging.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "args/training_args.h"
#include "base/status_macros.h"
#include "base/torch_status.h"
#include "nlohmann/json.hpp"
#include "optim/lr_lambdas.h"
#include "optim/lr_scheduler.h"

namespace loom::optim {
namespace {

using json = nlohmann::json;

absl::Status Invalid(absl::string_view message) { return absl::InvalidArgumentError(message); }

// Typed access to the --lr_scheduler_kwargs object for one scheduler type; every error names
// the flag, the key and the type.
class Kwargs {
 public:
  Kwargs(const json& object, const std::string& type) : object_(object), type_(type) {}

  bool empty() const { return object_.empty(); }
  std::string Text() const { return object_.dump(); }

  // Python's TypeError for an unexpected keyword argument.
  absl::Status Allow(std::initializer_list<const char*> keys) const {
    for (const auto& item : object_.items()) {
      bool known = false;
      for (const char* k : keys) known = known || item.key() == k;
      if (!known) {
        return Invalid(absl::StrCat("--lr_scheduler_kwargs: --lr_scheduler_type ", type_,
                                    " takes no key \"", item.key(), "\"; it takes ",
                                    keys.size() == 0 ? "none" : absl::StrJoin(keys, ", ")));
      }
    }
    return absl::OkStatus();
  }

  bool Has(const char* key) const { return object_.contains(key); }

  absl::StatusOr<double> Number(const char* key, double fallback) const {
    if (!Has(key)) return fallback;
    const json& v = object_.at(key);
    if (!v.is_number()) return Error(key, "must be a number", v);
    return v.get<double>();
  }

  // Absent and null both mean "not set" (Python's None default).
  absl::StatusOr<std::optional<double>> OptionalNumber(const char* key) const {
    if (!Has(key) || object_.at(key).is_null()) return std::optional<double>();
    ASSIGN_OR_RETURN(double v, Number(key, 0.0));
    return std::optional<double>(v);
  }

  absl::StatusOr<int64_t> Integer(const char* key, int64_t fallback) const {
    if (!Has(key)) return fallback;
    const json& v = object_.at(key);
    if (v.is_number_integer()) return v.get<int64_t>();
    if (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>()) {
      return static_cast<int64_t>(v.get<double>());
    }
    return Error(key, "must be an integer", v);
  }

  absl::StatusOr<std::string> String(const char* key, const std::string& fallback) const {
    if (!Has(key)) return fallback;
    const json& v = object_.at(key);
    if (!v.is_string()) return Error(key, "must be a string", v);
    return v.get<std::string>();
  }

  absl::StatusOr<bool> Bool(const char* key, bool fallback) const {
    if (!Has(key)) return fallback;
    const json& v = object_.at(key);
    if (!v.is_boolean()) return Error(key, "must be true or false", v);
    return v.get<bool>();
  }

  // "last_epoch" other than torch's default -1 would resume a schedule from
  // param_groups' initial_lr, which loom's optimizers do not carry.
  absl::Status CheckLastEpoch() const {
    ASSIGN_OR_RETURN(const int64_t last_epoch, Integer("last_epoch", -1));
    if (last_epoch != -1) {
      return Error("last_epoch",
                   "other than -1 is not supported; resume a schedule with "
                   "LrScheduler::LoadStateDict (scheduler.pt) instead",
                   object_.at("last_epoch"));
    }
    return absl::OkStatus();
  }

  absl::Status Error(const char* key, absl::string_view what, const json& value) const {
    return Invalid(absl::StrCat("--lr_scheduler_kwargs: \"", key, "\" ", what,
                                " for --lr_scheduler_type ", type_, " (got ", value.dump(), ")"));
  }

  const std::string& type() const { return type_; }

 private:
  const json& object_;
  std::string type_;
};

void Warn(std::string warning, std::vector<std::string>* warnings) {
  if (warnings != nullptr) {
    warnings->push_back(std::move(warning));
  } else {
    LOG(WARNING) << warning;
  }
}

std::unique_ptr<LrScheduler> Lambda(torch::optim::Optimizer* optimizer,
                                    LambdaLrScheduler::Lambda lambda) {
  return std::make_unique<LambdaLrScheduler>(optimizer, std::move(lambda));
}

absl::StatusOr<std::unique_ptr<LrScheduler>> Plateau(const Kwargs& kw,
                                                     torch::optim::Optimizer* optimizer,
                                                     const json& object) {
  RETURN_IF_ERROR(kw.Allow({"mode", "factor", "patience", "threshold", "threshold_mode", "cooldown",
                            "min_lr", "eps", "verbose"}));
  PlateauOptions o;
  ASSIGN_OR_RETURN(o.mode, kw.String("mode", o.mode));
  ASSIGN_OR_RETURN(o.factor, kw.Number("factor", o.factor));
  ASSIGN_OR_RETURN(o.patience, kw.Integer("patience", o.patience));
  ASSIGN_OR_RETURN(o.threshold, kw.Number("threshold", o.threshold));
  ASSIGN_OR_RETURN(o.threshold_mode, kw.String("threshold_mode", o.threshold_mode));
  ASSIGN_OR_RETURN(o.cooldown, kw.Integer("cooldown", o.cooldown));
  ASSIGN_OR_RETURN(o.eps, kw.Number("eps", o.eps));
  ASSIGN_OR_RETURN(o.verbose, kw.Bool("verbose", o.verbose));
  if (kw.Has("min_lr")) {
    const json& v = object.at("min_lr");
    if (v.is_array()) {
      o.default_min_lr.reset();
      for (const json& item : v) {
        if (!item.is_number())
          return kw.Error("min_lr", "must be a number or a list of numbers", v);
        o.min_lrs.push_back(item.get<double>());
      }
    } else {
      ASSIGN_OR_RETURN(const double min_lr, kw.Number("min_lr", 0.0));
      o.min_lrs.assign(optimizer->param_groups().size(), min_lr);
      o.default_min_lr = min_lr;
    }
  }
  ASSIGN_OR_RETURN(std::unique_ptr<ReduceLrOnPlateau> scheduler,
                   ReduceLrOnPlateau::Create(optimizer, std::move(o)), "--lr_scheduler_kwargs");
  return std::unique_ptr<LrScheduler>(std::move(scheduler));
}

using SchedulerOr = absl::StatusOr<std::unique_ptr<LrScheduler>>;

// constant, constant_with_warmup and inverse_sqrt, to which HF's get_scheduler passes no
// kwargs.
SchedulerOr WithoutKwargs(const Kwargs& kw, torch::optim::Optimizer* optimizer, int64_t warmup,
                          std::vector<std::string>* warnings) {
  const std::string& type = kw.type();
  if (!kw.empty()) {
    Warn(absl::StrCat("--lr_scheduler_kwargs ", kw.Text(),
                      " is ignored: HF passes no kwargs to "
                      "--lr_scheduler_type ",
                      type),
         warnings);
  }
  if (type == "constant") {
    return std::unique_ptr<LrScheduler>(std::make_unique<LambdaLrScheduler>(
        optimizer, ConstantLambda, /*lambda_is_callable_object=*/false));
  }
  if (type == "constant_with_warmup") {
    return Lambda(optimizer, [=](int64_t s) { return ConstantWithWarmupLambda(s, warmup); });
  }
  const int64_t timescale = warmup != 0 ? warmup : 10000;
  return Lambda(optimizer, [=](int64_t s) { return InverseSqrtLambda(s, warmup, timescale); });
}

SchedulerOr Linear(const Kwargs& kw, torch::optim::Optimizer* optimizer, int64_t warmup,
                   int64_t total) {
  RETURN_IF_ERROR(kw.Allow({"last_epoch"}));
  RETURN_IF_ERROR(kw.CheckLastEpoch());
  return Lambda(optimizer, [=](int64_t s) { return LinearLambda(s, warmup, total); });
}

// cosine and cosine_with_restarts.
SchedulerOr Cosine(const Kwargs& kw, torch::optim::Optimizer* optimizer, int64_t warmup,
                   int64_t total) {
  RETURN_IF_ERROR(kw.Allow({"num_cycles", "last_epoch"}));
  RETURN_IF_ERROR(kw.CheckLastEpoch());
  const bool restarts = kw.type() == "cosine_with_restarts";
  ASSIGN_OR_RETURN(const double cycles, kw.Number("num_cycles", restarts ? 1.0 : 0.5));
  if (restarts) {
    return Lambda(optimizer,
                  [=](int64_t s) { return CosineHardRestartsLambda(s, warmup, total, cycles); });
  }
  return Lambda(optimizer, [=](int64_t s) { return CosineLambda(s, warmup, total, cycles); });
}

SchedulerOr Polynomial(const Kwargs& kw, torch::optim::Optimizer* optimizer, int64_t warmup,
                       int64_t total) {
  RETURN_IF_ERROR(kw.Allow({"lr_end", "power", "last_epoch"}));
  RETURN_IF_ERROR(kw.CheckLastEpoch());
  ASSIGN_OR_RETURN(const double lr_end, kw.Number("lr_end", 1e-7));
  ASSIGN_OR_RETURN(const double power, kw.Number("power", 1.0));
  const double lr_init = optimizer->defaults().get_lr();
  if (!(lr_init > lr_end)) {
    return Invalid(absl::StrCat("--lr_scheduler_kwargs: lr_end (", lr_end,
                                ") must be smaller than the initial lr (", lr_init,
                                ", --learning_rate) for --lr_scheduler_type polynomial"));
  }
  if (total == warmup) {
    return Invalid(absl::StrCat("--lr_scheduler_type polynomial needs more training steps (", total,
                                ") than warmup steps (", warmup,
                                "); lower --warmup_steps / --warmup_ratio"));
  }
  return Lambda(optimizer, [=](int64_t s) {
    return PolynomialLambda(s, warmup, total, lr_end, power, lr_init);
  });
}

SchedulerOr CosineWithMinLr(const Kwargs& kw, torch::optim::Optimizer* optimizer, int64_t warmup,
                            int64_t total) {
  RETURN_IF_ERROR(kw.Allow({"num_cycles", "min_lr", "min_lr_rate", "last_epoch"}));
  RETURN_IF_ERROR(kw.CheckLastEpoch());
  ASSIGN_OR_RETURN(const double cycles, kw.Number("num_cycles", 0.5));
  ASSIGN_OR_RETURN(const std::optional<double> min_lr, kw.OptionalNumber("min_lr"));
  ASSIGN_OR_RETURN(std::optional<double> rate, kw.OptionalNumber("min_lr_rate"));
  if (min_lr.has_value() && rate.has_value()) {
    return Invalid(
        "--lr_scheduler_kwargs: set only one of min_lr or min_lr_rate for "
        "--lr_scheduler_type cosine_with_min_lr");
  }
  if (min_lr.has_value()) rate = *min_lr / optimizer->defaults().get_lr();
  if (!rate.has_value()) {
    return Invalid(
        "--lr_scheduler_type cosine_with_min_lr needs min_lr or min_lr_rate in "
        "--lr_scheduler_kwargs, e.g. '{\"min_lr_rate\": 0.1}'");
  }
  const double min_lr_rate = *rate;
  return Lambda(optimizer, [=](int64_t s) {
    return CosineWithMinLrLambda(s, warmup, total, cycles, min_lr_rate);
  });
}

SchedulerOr WarmupStableDecay(const Kwargs& kw, torch::optim::Optimizer* optimizer,
                              int64_t warmup) {
  RETURN_IF_ERROR(kw.Allow(
      {"num_stable_steps", "num_decay_steps", "min_lr_ratio", "num_cycles", "last_epoch"}));
  RETURN_IF_ERROR(kw.CheckLastEpoch());
  if (!kw.Has("num_stable_steps") || !kw.Has("num_decay_steps")) {
    return Invalid(
        "--lr_scheduler_type warmup_stable_decay needs num_stable_steps and "
        "num_decay_steps in --lr_scheduler_kwargs, e.g. "
        "'{\"num_stable_steps\": 800, \"num_decay_steps\": 100}'");
  }
  ASSIGN_OR_RETURN(const double stable, kw.Number("num_stable_steps", 0.0));
  ASSIGN_OR_RETURN(const double decay, kw.Number("num_decay_steps", 0.0));
  ASSIGN_OR_RETURN(const double min_lr_ratio, kw.Number("min_lr_ratio", 0.0));
  ASSIGN_OR_RETURN(const double cycles, kw.Number("num_cycles", 0.5));
  return Lambda(optimizer, [=](int64_t s) {
    return WarmupStableDecayLambda(s, warmup, stable, decay, cycles, min_lr_ratio);
  });
}

absl::StatusOr<std::unique_ptr<LrScheduler>> Build(const Kwargs& kw, const json& object,
                                                   torch::optim::Optimizer* optimizer,
                                                   int64_t warmup, int64_t total,
                                                   std::vector<std::string>* warnings) {
  const std::string& type = kw.type();
  if (type == "reduce_lr_on_plateau") return Plateau(kw, optimizer, object);
  if (type == "constant" || type == "constant_with_warmup" || type == "inverse_sqrt") {
    return WithoutKwargs(kw, optimizer, warmup, warnings);
  }
  if (type == "linear") return Linear(kw, optimizer, warmup, total);
  if (type == "cosine" || type == "cosine_with_restarts") {
    return Cosine(kw, optimizer, warmup, total);
  }
  if (type == "polynomial") return Polynomial(kw, optimizer, warmup, total);
  if (type == "cosine_with_min_lr") return CosineWithMinLr(kw, optimizer, warmup, total);
  // warmup_stable_decay (the type was validated by the caller).
  return WarmupStableDecay(kw, optimizer, warmup);
}

}  // namespace

const std::vector<std::string>& SchedulerTypeNames() {
  static const auto* const kNames = new std::vector<std::string>{"linear",
                                                                 "cosine",
                                                                 "cosine_with_restarts",
                                                                 "polynomial",
                                                                 "constant",
                                                                 "constant_with_warmup",
                                                                 "inverse_sqrt",
                                                                 "reduce_lr_on_plateau",
                                                                 "cosine_with_min_lr",
                                                                 "warmup_stable_decay"};
  return *kNames;
}

absl::StatusOr<std::unique_ptr<LrScheduler>> CreateScheduler(const args::TrainingArguments& args,
                                                             torch::optim::Optimizer* optimizer,
                                                             int64_t num_training_steps,
                                                             std::vector<std::string>* warnings) {
  if (optimizer == nullptr) {
    return Invalid("CreateScheduler needs the optimizer: create it first (CreateOptimizer)");
  }
  const std::string& type = args.lr_scheduler_type();
  const auto& names = SchedulerTypeNames();
  if (std::find(names.begin(), names.end(), type) == names.end()) {
    return Invalid(absl::StrCat("--lr_scheduler_type ", type,
                                " is not a valid SchedulerType; use one of ",
                                absl::StrJoin(names, ", ")));
  }
  const std::string& text = args.lr_scheduler_kwargs();
  const json object = text.empty() ? json::object() : json::parse(text, nullptr, false);
  if (object.is_discarded() || !object.is_object()) {
    return Invalid(
        absl::StrCat("--lr_scheduler_kwargs must be a JSON object such as "
                     "'{\"num_cycles\": 2}', got '",
                     text, "'"));
  }
  const int64_t warmup = args::GetWarmupSteps(args, num_training_steps);
  try {
    return Build(Kwargs(object, type), object, optimizer, warmup, num_training_steps, warnings);
  } catch (const std::exception& e) {
    return base::TorchErrorToStatus(
        e, absl::StatusCode::kInvalidArgument,
        absl::StrCat("creating the --lr_scheduler_type ", type, " scheduler"));
  }
}

absl::StatusOr<std::unique_ptr<LrScheduler>> GetScheduler(const std::string& name,
                                                          torch::optim::Optimizer* optimizer,
                                                          int64_t num_warmup_steps,
                                                          int64_t num_training_steps) {
  args::TrainingArguments a;
  a.set_lr_scheduler_type(name);
  a.set_warmup_steps(num_warmup_steps);
  return CreateScheduler(a, optimizer, num_training_steps);
}

}  // namespace loom::optim
