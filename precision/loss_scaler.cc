#include "precision/loss_scaler.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace loom::precision {
namespace {

// Python's str(int(x)) of a float scale, as DeepSpeed prints it: the exact decimal digits of the
// truncated double (Python's ints are unbounded; a scale of 2^64 prints all 20 digits).
std::string PyInt(double x) { return absl::StrFormat("%.0f", std::trunc(x)); }

}  // namespace

LossScalerOptions FromDeepSpeedFp16(const args::Fp16Config& fp16,
                                    const nlohmann::ordered_json& raw_fp16, bool enabled) {
  LossScalerOptions o;
  o.half = enabled;
  if (!enabled) {  // CreateLossScaler: bf16 / fp32 train with a static scale of 1
    o.dynamic = false;
    o.init_scale = 1.0;
    return o;
  }
  if (fp16.loss_scale != 0) {
    o.dynamic = false;
    o.init_scale = fp16.loss_scale;
    return o;
  }
  bool any = false;
  if (raw_fp16.is_object()) {
    for (const char* key : {"initial_scale_power", "loss_scale_window", "hysteresis",
                            "consecutive_hysteresis", "min_loss_scale"}) {
      if (raw_fp16.contains(key) && !raw_fp16[key].is_null()) any = true;
    }
  }
  if (!any) return o;  // DynamicLossScaler(dtype=torch.half): 2^32, delayed_shift 1
  o.init_scale = std::ldexp(1.0, static_cast<int>(fp16.initial_scale_power));
  o.scale_window = fp16.loss_scale_window;
  o.delayed_shift = fp16.hysteresis;
  o.consecutive_hysteresis = fp16.consecutive_hysteresis;
  o.min_scale = fp16.min_loss_scale;
  return o;
}

DeepSpeedLossScaler::DeepSpeedLossScaler(const LossScalerOptions& options) : options_(options) {
  state_.cur_scale = options.init_scale;
  state_.cur_hysteresis = options.delayed_shift;
}

absl::StatusOr<std::string> DeepSpeedLossScaler::Update(bool overflow, int rank) {
  if (!options_.dynamic) return std::string();
  std::string line;
  LossScalerState& s = state_;
  const std::string prefix = absl::StrCat("[deepspeed] OVERFLOW! Rank ", rank, " Skipping step.");
  if (overflow) {
    if (options_.delayed_shift == 1 || s.cur_hysteresis == 1) {
      if (s.cur_scale == options_.min_scale && options_.raise_error_at_min_scale) {
        return absl::FailedPreconditionError(
            "Current loss scale already at minimum - cannot decrease scale anymore. Exiting run.");
      }
      const double next = std::max(s.cur_scale / options_.scale_factor, options_.min_scale);
      line = prefix;
      if (options_.half) {
        absl::StrAppend(&line, " Attempted loss scale: ", PyInt(s.cur_scale), ", reducing to ",
                        PyInt(next));
      }
      s.cur_scale = next;
    } else {
      line = prefix;
      if (options_.half) {
        absl::StrAppend(&line, " Attempted loss scale: ", PyInt(s.cur_scale),
                        ", but hysteresis is ", s.cur_hysteresis, ". Reducing hysteresis to ",
                        s.cur_hysteresis - 1);
      }
      s.cur_hysteresis -= 1;
    }
    s.last_overflow_iter = s.cur_iter;
  } else {
    if (options_.consecutive_hysteresis) s.cur_hysteresis = options_.delayed_shift;
    if ((s.cur_iter - s.last_overflow_iter) % options_.scale_window == 0) {
      if (!options_.consecutive_hysteresis) s.cur_hysteresis = options_.delayed_shift;
      s.cur_scale *= options_.scale_factor;
    }
  }
  s.cur_iter += 1;
  return line;
}

}  // namespace loom::precision
