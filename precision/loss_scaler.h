// DeepSpeed's fp16 loss scalers (deepspeed/runtime/fp16/loss_scaler.py, v0.10–v0.17.0, the
// scaler ZeRO stages 1–3 use; DeepSpeed 0.13.5 `DynamicLossScaler`), for the half-weights path of
// precision/master_weights.h.
//
// Contract:
//   - Options come from a DeepSpeed config's fp16 section (FromDeepSpeedFp16):
//       loss_scale 0 -> dynamic; > 0 -> static at that value (DeepSpeed's `loss_scale == 0`);
//       dynamic with any of initial_scale_power / loss_scale_window / hysteresis /
//       consecutive_hysteresis / min_loss_scale in the section -> init 2^initial_scale_power,
//       scale_window, delayed_shift = hysteresis, consecutive_hysteresis, min_scale with the
//       config defaults (16, 1000, 2, false, 1) for the absent ones; none of them present ->
//       DynamicLossScaler's constructor defaults (init 2^32, window 1000, delayed_shift 1,
//       min 1): DeepSpeed passes no dynamic_loss_args then. scale_factor is always 2.
//       bf16 / fp32 (half = false) -> static scale 1.
//   - Update(overflow) applies DynamicLossScaler.update_scale: on overflow with
//     delayed_shift == 1 or cur_hysteresis == 1 the scale becomes max(scale / 2, min_scale)
//     — an overflow while the scale already equals min_scale is FailedPrecondition ("Current
//     loss scale already at minimum - cannot decrease scale anymore. Exiting run.") when
//     raise_error_at_min_scale — otherwise cur_hysteresis -= 1; last_overflow_iter = cur_iter.
//     Without overflow: consecutive_hysteresis restores cur_hysteresis; when
//     (cur_iter - last_overflow_iter) % scale_window == 0 the scale doubles (and without
//     consecutive_hysteresis cur_hysteresis is restored). cur_iter += 1 always.
//     A static scaler changes nothing (DeepSpeed still skips the overflowing step).
//     It returns DeepSpeed's rank-0 overflow line (empty when none):
//       "[deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 65536, reducing to 32768"
//       "... Attempted loss scale: 65536, but hysteresis is 2. Reducing hysteresis to 1"
//     (scales printed as int(), the suffix only for fp16; `rank` is the caller's).
//   - State()/LoadState() hold every counter, so a resumed run continues exactly.
//
// Example:
//   ASSIGN_OR_RETURN(LossScalerOptions o, FromDeepSpeedFp16(ds.fp16, ds.raw["fp16"]));
//   DeepSpeedLossScaler scaler(o);
//   ASSIGN_OR_RETURN(std::string line, scaler.Update(overflow, /*rank=*/0));
//   if (!line.empty()) LOG(INFO) << line;
#ifndef LOOM_PRECISION_LOSS_SCALER_H_
#define LOOM_PRECISION_LOSS_SCALER_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "args/deepspeed_config.h"
#include "nlohmann/json.hpp"

namespace loom::precision {

struct LossScalerOptions {
  bool dynamic = true;
  double init_scale = 4294967296.0;  // 2^32: DynamicLossScaler's default
  double scale_factor = 2.0;
  int64_t scale_window = 1000;
  double min_scale = 1.0;
  int64_t delayed_shift = 1;
  bool consecutive_hysteresis = false;
  bool raise_error_at_min_scale = true;
  bool half = true;  // fp16 (the overflow line names the scale only for fp16)
};

// The ZeRO optimizers' scaler for a DeepSpeed config: `fp16` is the typed section, `raw_fp16`
// the section as written (which keys are present decides DeepSpeed's defaults). `enabled` is
// whether fp16 training is on (after "auto" resolution).
LossScalerOptions FromDeepSpeedFp16(const args::Fp16Config& fp16,
                                    const nlohmann::ordered_json& raw_fp16, bool enabled);

struct LossScalerState {
  double cur_scale = 1;
  int64_t cur_iter = 0;
  int64_t last_overflow_iter = -1;
  int64_t cur_hysteresis = 1;

  bool operator==(const LossScalerState& o) const {
    return cur_scale == o.cur_scale && cur_iter == o.cur_iter &&
           last_overflow_iter == o.last_overflow_iter && cur_hysteresis == o.cur_hysteresis;
  }
};

class DeepSpeedLossScaler {
 public:
  explicit DeepSpeedLossScaler(const LossScalerOptions& options);

  double loss_scale() const { return state_.cur_scale; }
  bool dynamic() const { return options_.dynamic; }
  // See the contract; `rank` is printed in the overflow line.
  absl::StatusOr<std::string> Update(bool overflow, int rank = 0);

  const LossScalerState& State() const { return state_; }
  void LoadState(const LossScalerState& state) { state_ = state; }
  const LossScalerOptions& options() const { return options_; }

 private:
  LossScalerOptions options_;
  LossScalerState state_;
};

}  // namespace loom::precision

#endif  // LOOM_PRECISION_LOSS_SCALER_H_
