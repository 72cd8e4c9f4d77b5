#include "precision/grad_scaler.h"

#include <cmath>
#include <unordered_map>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"

namespace loom::precision {

absl::StatusOr<GradScaler> GradScaler::Create(const GradScalerOptions& options) {
  if (!(options.growth_factor > 1.0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("GradScaler: growth_factor must be > 1.0, got ", options.growth_factor));
  }
  if (!(options.backoff_factor < 1.0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("GradScaler: backoff_factor must be < 1.0, got ", options.backoff_factor));
  }
  if (options.growth_interval < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("GradScaler: growth_interval must be >= 1, got ", options.growth_interval));
  }
  if (!(options.init_scale > 0) || !std::isfinite(static_cast<float>(options.init_scale))) {
    return absl::InvalidArgumentError(absl::StrCat(
        "GradScaler: init_scale must be a positive finite float32, got ", options.init_scale));
  }
  return GradScaler(options);
}

GradScaler::GradScaler(const GradScalerOptions& options)
    : scale_(static_cast<float>(options.init_scale)),
      growth_factor_(options.growth_factor),
      backoff_factor_(options.backoff_factor),
      growth_interval_(options.growth_interval) {}

at::Tensor GradScaler::Scale(const at::Tensor& loss) const {
  return loss * at::full({}, scale_, loss.options().dtype(at::kFloat));
}

absl::Status GradScaler::Unscale(const std::vector<at::Tensor>& params) {
  if (unscaled_) {
    return absl::FailedPreconditionError(
        "unscale_() has already been called on this optimizer since the last update().");
  }
  // torch: self._scale.double().reciprocal().float()
  const float inv_scale = static_cast<float>(1.0 / static_cast<double>(scale_));
  // Grads grouped by device, as torch's _unscale_grads_ does.
  std::unordered_map<c10::Device, std::vector<at::Tensor>> by_device;
  for (const at::Tensor& p : params) {
    const at::Tensor& g = p.grad();
    if (!g.defined()) continue;
    if (g.scalar_type() == at::kHalf) {
      return absl::InvalidArgumentError(
          "Attempting to unscale FP16 gradients: the GradScaler path keeps fp32 weights "
          "(autocast); half weights need precision/master_weights.h");
    }
    by_device[g.device()].push_back(g);
  }
  std::vector<at::Tensor> found;  // one float 0/1 per device
  for (auto& [device, grads] : by_device) {
    const auto on = at::TensorOptions().dtype(at::kFloat).device(device);
    at::Tensor device_found = at::zeros({1}, on);
    const at::Tensor inv = at::full({1}, inv_scale, on);
    if (device.is_cuda()) {
      at::_amp_foreach_non_finite_check_and_unscale_(grads, device_found, inv);
    } else {
      for (at::Tensor& g : grads) {
        device_found.logical_or_(g.isfinite().logical_not().any());
        g.mul_(inv);
      }
    }
    found.push_back(device_found.cpu());
  }
  found_inf_ = false;
  for (const at::Tensor& f : found) found_inf_ = found_inf_ || f.item<float>() != 0;
  unscaled_ = true;
  return absl::OkStatus();
}

absl::StatusOr<bool> GradScaler::Step(const std::function<void()>& step_fn,
                                      const std::vector<at::Tensor>& params) {
  if (!unscaled_) {
    absl::Status s = Unscale(params);
    if (!s.ok()) return s;
  }
  const bool run = !found_inf_;
  if (run) step_fn();
  Update();
  return run;
}

void GradScaler::Update() {
  if (found_inf_) {
    scale_ = static_cast<float>(static_cast<double>(scale_) * backoff_factor_);
    growth_tracker_ = 0;
  } else {
    const int64_t successful = growth_tracker_ + 1;
    if (successful == growth_interval_) {
      const float grown = static_cast<float>(static_cast<double>(scale_) * growth_factor_);
      if (std::isfinite(grown)) scale_ = grown;
      growth_tracker_ = 0;
    } else {
      growth_tracker_ = successful;
    }
  }
  unscaled_ = false;
  found_inf_ = false;
}

GradScalerState GradScaler::State() const {
  GradScalerState s;
  s.scale = scale_;
  s.growth_factor = growth_factor_;
  s.backoff_factor = backoff_factor_;
  s.growth_interval = growth_interval_;
  s.growth_tracker = growth_tracker_;
  return s;
}

c10::IValue GradScaler::StateDict() const {
  c10::impl::GenericDict dict(c10::StringType::get(), c10::AnyType::get());
  const GradScalerState s = State();
  dict.insert("scale", s.scale);
  dict.insert("growth_factor", s.growth_factor);
  dict.insert("backoff_factor", s.backoff_factor);
  dict.insert("growth_interval", s.growth_interval);
  dict.insert("_growth_tracker", s.growth_tracker);
  return dict;
}

absl::Status GradScaler::LoadStateDict(const c10::IValue& state) {
  if (!state.isGenericDict()) {
    return absl::InvalidArgumentError("GradScaler state: expected a dict");
  }
  const c10::impl::GenericDict dict = state.toGenericDict();
  if (dict.size() == 0) {
    return absl::InvalidArgumentError(
        "GradScaler state: the dict is empty, possibly because it was saved from a disabled "
        "GradScaler");
  }
  auto number = [&](const char* key, bool integral) -> absl::StatusOr<double> {
    auto it = dict.find(c10::IValue(std::string(key)));
    if (it == dict.end()) {
      return absl::InvalidArgumentError(absl::StrCat("GradScaler state: missing \"", key, "\""));
    }
    const c10::IValue& v = it->value();
    if (v.isInt()) return static_cast<double>(v.toInt());
    if (v.isDouble() && !integral) return v.toDouble();
    return absl::InvalidArgumentError(absl::StrCat("GradScaler state: \"", key, "\" must be ",
                                                   integral ? "an int" : "a number"));
  };
  GradScalerState s;
  for (auto [key, integral, target] :
       {std::tuple{"scale", false, &s.scale}, std::tuple{"growth_factor", false, &s.growth_factor},
        std::tuple{"backoff_factor", false, &s.backoff_factor}}) {
    absl::StatusOr<double> v = number(key, integral);
    if (!v.ok()) return v.status();
    *target = *v;
  }
  for (auto [key, target] : {std::pair{"growth_interval", &s.growth_interval},
                             std::pair{"_growth_tracker", &s.growth_tracker}}) {
    absl::StatusOr<double> v = number(key, true);
    if (!v.ok()) return v.status();
    *target = static_cast<int64_t>(*v);
  }
  return LoadState(s);
}

absl::Status GradScaler::LoadState(const GradScalerState& state) {
  GradScalerOptions o;
  o.init_scale = state.scale;
  o.growth_factor = state.growth_factor;
  o.backoff_factor = state.backoff_factor;
  o.growth_interval = state.growth_interval;
  absl::StatusOr<GradScaler> checked = Create(o);
  if (!checked.ok()) return checked.status();
  if (state.growth_tracker < 0 || state.growth_tracker >= state.growth_interval) {
    return absl::InvalidArgumentError(absl::StrCat("GradScaler state: _growth_tracker ",
                                                   state.growth_tracker, " is outside [0, ",
                                                   state.growth_interval, ")"));
  }
  *this = *checked;
  growth_tracker_ = state.growth_tracker;
  return absl::OkStatus();
}

}  // namespace loom::precision
