// LrScheduler classes and their torch-compatible state dicts. CreateScheduler is in
// create_scheduler.cc.
#include "optim/lr_scheduler.h"

#include <ATen/core/Dict.h>
#include <ATen/core/List.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "base/torch_compat.h"

namespace loom::optim {
namespace {

absl::Status Invalid(absl::string_view message) { return absl::InvalidArgumentError(message); }

c10::impl::GenericDict NewDict() {
  return c10::impl::GenericDict(c10::StringType::get(), c10::AnyType::get());
}

c10::IValue DoubleList(const std::vector<double>& values) {
  return c10::IValue(c10::List<double>(values));
}

// Reads typed entries of a scheduler state dict; errors name the key.
// The scheduler state_dict() layout written: torch 2.11's (no "verbose"; LambdaLR's
// "_is_initial"; ReduceLROnPlateau's "default_min_lr" and its own key order) when building
// against LibTorch >= 2.11, else torch 1.13's — the Python torch of the same LibTorch, which is
// what torch.load users of this build have. Both layouts are read.
constexpr bool kTorch211StateLayout = LOOM_TORCH_AT_LEAST(2, 11);

class StateReader {
 public:
  static absl::StatusOr<StateReader> Of(const c10::IValue& state, absl::string_view kind) {
    if (!state.isGenericDict()) {
      return Invalid(
          absl::StrCat("the ", kind, " scheduler state must be a dict, got ", state.tagKind()));
    }
    return StateReader(state.toGenericDict(), kind);
  }

  bool Has(const std::string& key) const { return dict_.contains(c10::IValue(key)); }
  bool IsNone(const std::string& key) const { return Has(key) && dict_.at(c10::IValue(key)).isNone(); }

  absl::StatusOr<c10::IValue> Get(const std::string& key) const {
    if (!Has(key)) return Error(key, "is missing");
    return dict_.at(c10::IValue(key));
  }

  absl::StatusOr<double> Double(const std::string& key) const {
    ASSIGN_OR_RETURN(c10::IValue v, Get(key));
    return ToDouble(key, v);
  }

  absl::StatusOr<int64_t> Int(const std::string& key) const {
    ASSIGN_OR_RETURN(c10::IValue v, Get(key));
    if (!v.isInt()) return Error(key, "must be an int");
    return v.toInt();
  }

  absl::StatusOr<bool> Bool(const std::string& key) const {
    ASSIGN_OR_RETURN(c10::IValue v, Get(key));
    if (!v.isBool()) return Error(key, "must be a bool");
    return v.toBool();
  }

  absl::StatusOr<std::string> String(const std::string& key) const {
    ASSIGN_OR_RETURN(c10::IValue v, Get(key));
    if (!v.isString()) return Error(key, "must be a string");
    return v.toStringRef();
  }

  // A list of numbers with `size` entries.
  absl::StatusOr<std::vector<double>> Doubles(const std::string& key, size_t size) const {
    ASSIGN_OR_RETURN(c10::IValue v, Get(key));
    if (!v.isList()) return Error(key, "must be a list of numbers");
    std::vector<double> out;
    for (const c10::IValue& item : v.toListRef()) {
      ASSIGN_OR_RETURN(double d, ToDouble(key, item));
      out.push_back(d);
    }
    if (out.size() != size) {
      return Error(key, absl::StrCat("has ", out.size(), " entries but the optimizer has ", size,
                                     " param groups"));
    }
    return out;
  }

 private:
  StateReader(c10::impl::GenericDict dict, absl::string_view kind)
      : dict_(std::move(dict)), kind_(kind) {}

  absl::StatusOr<double> ToDouble(const std::string& key, const c10::IValue& v) const {
    if (v.isDouble()) return v.toDouble();
    if (v.isInt()) return static_cast<double>(v.toInt());
    return Error(key, "must be a number");
  }

  absl::Status Error(const std::string& key, absl::string_view what) const {
    return Invalid(absl::StrCat("the ", kind_, " scheduler state entry '", key, "' ", what));
  }

  c10::impl::GenericDict dict_;
  std::string kind_;
};

}  // namespace

LrScheduler::~LrScheduler() = default;
void LrScheduler::StepOnMetric(double /*metric*/) {}
bool LrScheduler::steps_on_metric() const { return false; }

std::vector<double> GroupLrs(const torch::optim::Optimizer& optimizer) {
  std::vector<double> lrs;
  for (const auto& group : optimizer.param_groups()) lrs.push_back(group.options().get_lr());
  return lrs;
}

// ---- LambdaLR ----

LambdaLrScheduler::LambdaLrScheduler(torch::optim::Optimizer* optimizer, Lambda lambda,
                                     bool lambda_is_callable_object)
    : optimizer_(optimizer),
      lambda_(std::move(lambda)),
      lambda_is_callable_object_(lambda_is_callable_object),
      base_lrs_(GroupLrs(*optimizer)) {
  // torch's _initial_step(): one step from last_epoch -1 to 0.
  Step();
}

void LambdaLrScheduler::Step() {
  ++step_count_;
  ++last_epoch_;
  Apply();
}

void LambdaLrScheduler::Apply() {
  auto& groups = optimizer_->param_groups();
  const size_t n = std::min(groups.size(), base_lrs_.size());
  last_lr_.clear();
  for (size_t i = 0; i < n; ++i) {
    const double lr = base_lrs_[i] * lambda_(last_epoch_);
    groups[i].options().set_lr(lr);
    last_lr_.push_back(lr);
  }
}

c10::IValue LambdaLrScheduler::StateDict() const {
  c10::impl::GenericDict dict = NewDict();
  dict.insert("base_lrs", DoubleList(base_lrs_));
  dict.insert("last_epoch", last_epoch_);
  if (!kTorch211StateLayout) dict.insert("verbose", false);
  dict.insert("_step_count", step_count_);
  // False after the constructor's initial step, which every loom scheduler has taken.
  if (kTorch211StateLayout) dict.insert("_is_initial", false);
  dict.insert("_get_lr_called_within_step", false);
  dict.insert("_last_lr", DoubleList(last_lr_));
  c10::impl::GenericList lambdas(c10::AnyType::get());
  for (size_t i = 0; i < base_lrs_.size(); ++i) {
    lambdas.push_back(lambda_is_callable_object_ ? c10::IValue(NewDict()) : c10::IValue());
  }
  dict.insert("lr_lambdas", lambdas);
  return dict;
}

absl::Status LambdaLrScheduler::LoadStateDict(const c10::IValue& state) {
  ASSIGN_OR_RETURN(const StateReader reader, StateReader::Of(state, "LambdaLR"));
  const size_t groups = optimizer_->param_groups().size();
  ASSIGN_OR_RETURN(std::vector<double> base_lrs, reader.Doubles("base_lrs", groups));
  ASSIGN_OR_RETURN(const int64_t last_epoch, reader.Int("last_epoch"));
  ASSIGN_OR_RETURN(const int64_t step_count, reader.Int("_step_count"));
  ASSIGN_OR_RETURN(std::vector<double> last_lr, reader.Doubles("_last_lr", groups));
  base_lrs_ = std::move(base_lrs);
  last_epoch_ = last_epoch;
  step_count_ = step_count;
  last_lr_ = std::move(last_lr);
  return absl::OkStatus();
}

// ---- ReduceLROnPlateau ----

absl::StatusOr<std::unique_ptr<ReduceLrOnPlateau>> ReduceLrOnPlateau::Create(
    torch::optim::Optimizer* optimizer, PlateauOptions options) {
  if (!(options.factor < 1.0)) {
    return Invalid(absl::StrCat("reduce_lr_on_plateau: factor ", options.factor, " must be < 1.0"));
  }
  if (options.mode != "min" && options.mode != "max") {
    return Invalid(absl::StrCat("reduce_lr_on_plateau: mode \"", options.mode,
                                "\" is unknown; use \"min\" or \"max\""));
  }
  if (options.threshold_mode != "rel" && options.threshold_mode != "abs") {
    return Invalid(absl::StrCat("reduce_lr_on_plateau: threshold_mode \"", options.threshold_mode,
                                "\" is unknown; use \"rel\" or \"abs\""));
  }
  const size_t groups = optimizer->param_groups().size();
  if (options.min_lrs.empty()) options.min_lrs.assign(groups, 0.0);
  if (options.min_lrs.size() != groups) {
    return Invalid(absl::StrCat("reduce_lr_on_plateau: expected ", groups, " min_lrs, got ",
                                options.min_lrs.size()));
  }
  return std::unique_ptr<ReduceLrOnPlateau>(new ReduceLrOnPlateau(optimizer, std::move(options)));
}

ReduceLrOnPlateau::ReduceLrOnPlateau(torch::optim::Optimizer* optimizer, PlateauOptions options)
    : optimizer_(optimizer), options_(std::move(options)) {
  best_ = ModeWorse();
}

double ReduceLrOnPlateau::ModeWorse() const {
  const double inf = std::numeric_limits<double>::infinity();
  return options_.mode == "min" ? inf : -inf;
}

bool ReduceLrOnPlateau::IsBetter(double a, double best) const {
  const bool rel = options_.threshold_mode == "rel";
  if (options_.mode == "min") {
    return rel ? a < best * (1.0 - options_.threshold) : a < best - options_.threshold;
  }
  return rel ? a > best * (options_.threshold + 1.0) : a > best + options_.threshold;
}

void ReduceLrOnPlateau::StepOnMetric(double metric) {
  last_epoch_ += 1;
  if (IsBetter(metric, best_)) {
    best_ = metric;
    num_bad_epochs_ = 0;
  } else {
    num_bad_epochs_ += 1;
  }
  if (cooldown_counter_ > 0) {
    cooldown_counter_ -= 1;
    num_bad_epochs_ = 0;  // bad epochs during the cooldown do not count
  }
  if (num_bad_epochs_ > options_.patience) {
    auto& groups = optimizer_->param_groups();
    for (size_t i = 0; i < groups.size(); ++i) {
      const double old_lr = groups[i].options().get_lr();
      const double new_lr = std::max(old_lr * options_.factor, options_.min_lrs[i]);
      if (old_lr - new_lr > options_.eps) groups[i].options().set_lr(new_lr);
    }
    cooldown_counter_ = options_.cooldown;
    num_bad_epochs_ = 0;
  }
  stepped_ = true;
  last_lr_ = GroupLrs(*optimizer_);
}

c10::IValue ReduceLrOnPlateau::StateDict() const {
  return kTorch211StateLayout ? StateDict211() : StateDict113();
}

// torch 2.11 ReduceLROnPlateau.state_dict(): no verbose, default_min_lr, and _last_lr from the
// constructor on (the groups' lrs before any step).
c10::IValue ReduceLrOnPlateau::StateDict211() const {
  c10::impl::GenericDict dict = NewDict();
  dict.insert("factor", options_.factor);
  dict.insert("default_min_lr",
              options_.default_min_lr ? c10::IValue(*options_.default_min_lr) : c10::IValue());
  dict.insert("min_lrs", DoubleList(options_.min_lrs));
  dict.insert("patience", options_.patience);
  dict.insert("cooldown", options_.cooldown);
  dict.insert("eps", options_.eps);
  dict.insert("last_epoch", last_epoch_);
  dict.insert("_last_lr", DoubleList(stepped_ ? last_lr_ : GroupLrs(*optimizer_)));
  dict.insert("mode_worse", ModeWorse());
  dict.insert("mode", options_.mode);
  dict.insert("threshold", options_.threshold);
  dict.insert("threshold_mode", options_.threshold_mode);
  dict.insert("best", best_);
  dict.insert("cooldown_counter", cooldown_counter_);
  dict.insert("num_bad_epochs", num_bad_epochs_);
  return dict;
}

// torch 1.13 ReduceLROnPlateau.state_dict(): _last_lr only after the first step.
c10::IValue ReduceLrOnPlateau::StateDict113() const {
  c10::impl::GenericDict dict = NewDict();
  dict.insert("factor", options_.factor);
  dict.insert("min_lrs", DoubleList(options_.min_lrs));
  dict.insert("patience", options_.patience);
  dict.insert("verbose", options_.verbose);
  dict.insert("cooldown", options_.cooldown);
  dict.insert("cooldown_counter", cooldown_counter_);
  dict.insert("mode", options_.mode);
  dict.insert("threshold", options_.threshold);
  dict.insert("threshold_mode", options_.threshold_mode);
  dict.insert("best", best_);
  dict.insert("num_bad_epochs", num_bad_epochs_);
  dict.insert("mode_worse", ModeWorse());
  dict.insert("eps", options_.eps);
  dict.insert("last_epoch", last_epoch_);
  if (stepped_) dict.insert("_last_lr", DoubleList(last_lr_));
  return dict;
}

absl::Status ReduceLrOnPlateau::LoadStateDict(const c10::IValue& state) {
  ASSIGN_OR_RETURN(const StateReader r, StateReader::Of(state, "ReduceLROnPlateau"));
  const size_t groups = optimizer_->param_groups().size();
  PlateauOptions o;
  ASSIGN_OR_RETURN(o.factor, r.Double("factor"));
  ASSIGN_OR_RETURN(o.min_lrs, r.Doubles("min_lrs", groups));
  ASSIGN_OR_RETURN(o.patience, r.Int("patience"));
  if (r.Has("verbose")) {  // torch < 2.x layouts; later ones dropped it
    ASSIGN_OR_RETURN(o.verbose, r.Bool("verbose"));
  }
  o.default_min_lr = std::nullopt;
  if (r.Has("default_min_lr")) {
    if (!r.IsNone("default_min_lr")) {
      ASSIGN_OR_RETURN(o.default_min_lr, r.Double("default_min_lr"));
    }
  } else if (std::adjacent_find(o.min_lrs.begin(), o.min_lrs.end(),
                                std::not_equal_to<double>()) == o.min_lrs.end()) {
    o.default_min_lr = o.min_lrs.empty() ? 0.0 : o.min_lrs.front();  // 1.13 file: as given
  }
  ASSIGN_OR_RETURN(o.cooldown, r.Int("cooldown"));
  ASSIGN_OR_RETURN(o.mode, r.String("mode"));
  ASSIGN_OR_RETURN(o.threshold, r.Double("threshold"));
  ASSIGN_OR_RETURN(o.threshold_mode, r.String("threshold_mode"));
  ASSIGN_OR_RETURN(o.eps, r.Double("eps"));
  ASSIGN_OR_RETURN(const int64_t cooldown_counter, r.Int("cooldown_counter"));
  ASSIGN_OR_RETURN(const double best, r.Double("best"));
  ASSIGN_OR_RETURN(const int64_t num_bad_epochs, r.Int("num_bad_epochs"));
  ASSIGN_OR_RETURN(const int64_t last_epoch, r.Int("last_epoch"));
  std::vector<double> last_lr;
  if (r.Has("_last_lr")) {
    ASSIGN_OR_RETURN(last_lr, r.Doubles("_last_lr", groups));
  }
  // Validates mode and threshold_mode as torch's _init_is_better does.
  RETURN_IF_ERROR(Create(optimizer_, o).status());
  options_ = std::move(o);
  cooldown_counter_ = cooldown_counter;
  best_ = best;
  num_bad_epochs_ = num_bad_epochs;
  last_epoch_ = last_epoch;
  stepped_ = r.Has("_last_lr");
  last_lr_ = std::move(last_lr);
  return absl::OkStatus();
}

}  // namespace loom::optim
