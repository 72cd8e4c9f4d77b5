#!/usr/bin/env python3
"""Scaler parity: the Python half of //tests/precision:scaler_parity_test.

What it checks: on scripted sequences of finite / inf / nan / -inf gradients, loom's two loss
scalers follow the published upstream rules exactly:
  * loom::precision::GradScaler            vs torch.cuda.amp.GradScaler (torch 1.13
    grad_scaler.py: unscale_ with inv_scale = float(1 / double(scale)), the step is skipped on
    inf/nan, then the CUDA _amp_update_scale_ kernel: backoff on inf, growth after
    growth_interval clean steps, the product computed in double and stored in a float32 tensor;
    plus the torch >= 2.1 guard (PR #98876) that does not take a growth whose float32 result
    is not finite);
  * loom::precision::DeepSpeedLossScaler   vs DeepSpeed v0.14 DynamicLossScaler.update_scale,
    the static LossScaler, CreateLossScaler and config.get_dynamic_loss_scale_args (which keys
    of the fp16 section switch DeepSpeed from DynamicLossScaler's constructor defaults to the
    config defaults).

How: this file holds its own implementation of those rules, transcribed from the upstream
sources (not from loom's C++). `scenarios OUT` writes the scenario file; scaler_trace_tool runs
the real C++ scalers on it and writes what it saw after every step; `check SCENARIOS RESULTS`
replays every scenario here and compares every recorded field exactly: float32 scales bit for
bit, growth tracker / hysteresis / iteration counters, skipped steps, the unscaled gradient
bits, the overflow log lines string for string and the min-scale exception. Any difference is
reported with the scenario name and the step index.

It then checks that the test can fail: a few deliberately wrong variants of the rules (growth
one step late, DeepSpeed's later `stable_interval` growth rule, torch 1.13 without the finite
guard, the product rounded in float32, ...) must each disagree with loom's results on at least
one scenario; a variant that slips through means the scenarios are too weak, and fails the test.

Deliberately outside the comparison: DeepSpeed's consecutive_hysteresis branch also logs
"Consecutive hysteresis is enabled. Restoring hysteresis to N" (logger.info, rank 0) on every
clean step; loom's Update() returns only the overflow line by contract.

Usage (Debian's /usr/bin/python3 with numpy):
  scaler_reference.py scenarios SCENARIOS.json
  scaler_reference.py check SCENARIOS.json RESULTS.json
"""

import json
import math
import sys

import numpy as np

F32 = np.float32
FLT_MAX = float(np.finfo(np.float32).max)


def f32(x):
    """A Python double rounded to float32 (C's (float)x), without numpy's overflow warning."""
    with np.errstate(over="ignore"):
        return F32(x)


# --------------------------------------------------------------------------------------------
# torch.cuda.amp.GradScaler (torch 1.13 grad_scaler.py + AmpKernels.cu _amp_update_scale_)
# --------------------------------------------------------------------------------------------


class TorchGradScalerRef:
    """GradScaler's scale state: `_scale` a float32 tensor, `_growth_tracker` an int32 one.

    `bug` names one of the deliberately wrong variants used by the self-check (MUTANTS).
    """

    def __init__(self, init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, bug=None):
        assert growth_factor > 1.0 and backoff_factor < 1.0
        self.scale = f32(init_scale)  # torch.full((1,), init_scale, dtype=torch.float32)
        self.growth_tracker = 0
        self.growth_factor = float(growth_factor)
        self.backoff_factor = float(backoff_factor)
        self.growth_interval = int(growth_interval)
        self.bug = bug

    def unscale(self, grads):
        """unscale_: inv_scale = self._scale.double().reciprocal().float(); then
        _amp_foreach_non_finite_check_and_unscale_ flags inf/nan in the (scaled) grads and
        multiplies them in place by inv_scale in float32. Returns (found_inf, unscaled)."""
        inv_scale = f32(1.0 / float(self.scale))
        found_inf = any(not np.all(np.isfinite(g)) for g in grads)
        with np.errstate(over="ignore", invalid="ignore"):
            unscaled = [(g * inv_scale).astype(F32) for g in grads]
        return found_inf, unscaled

    def times(self, factor):
        """(*current_scale) * factor with a float scale and a double factor, stored as float."""
        if self.bug == "float32_product":
            with np.errstate(over="ignore"):
                return F32(self.scale * F32(factor))
        return f32(float(self.scale) * factor)

    def update(self, found_inf):
        """The _amp_update_scale_ kernel (with torch >= 2.1's finite guard)."""
        if found_inf:
            self.scale = self.times(self.backoff_factor)
            if self.bug != "tracker_kept_on_inf":
                self.growth_tracker = 0
            return
        successful = self.growth_tracker + 1
        interval = self.growth_interval + (1 if self.bug == "late_growth" else 0)
        if successful == interval:
            new_scale = self.times(self.growth_factor)
            # "Do not grow the scale past fp32 bounds to inf." (torch >= 2.1)
            if math.isfinite(float(new_scale)) or self.bug == "no_finite_guard":
                self.scale = new_scale
            self.growth_tracker = 0
        else:
            self.growth_tracker = successful

    def step(self, grads):
        """scaler.step(optimizer) then scaler.update(): returns (stepped, unscaled grads)."""
        found_inf, unscaled = self.unscale(grads)
        stepped = not found_inf  # _maybe_opt_step: optimizer.step() only without inf/nan
        self.update(found_inf)
        return stepped, unscaled


BAD_VALUES = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}


def torch_scaled_grads(scenario, scale, kind):
    """The grads the tool sets for one step: values * scale in float32, with the scenario's
    `bad` element replaced by inf / -inf / nan on a non-finite step."""
    grads = []
    with np.errstate(over="ignore"):
        for values in scenario["values"]:
            grads.append((np.array(values, dtype=F32) * scale).astype(F32))
    if kind != "finite":
        p, i = scenario["bad"]
        grads[p][i] = F32(BAD_VALUES[kind])
    return grads


def replay_torch(scenario, bug=None):
    ref = TorchGradScalerRef(**scenario["options"], bug=bug)
    steps = []
    for kind in scenario["grads"]:
        grads = torch_scaled_grads(scenario, ref.scale, kind)
        stepped, unscaled = ref.step(grads)
        steps.append({
            "scale": float(ref.scale),
            "growth_tracker": ref.growth_tracker,
            "stepped": stepped,
            "step_fn_ran": stepped,
            "grad_bits": [[int(b) for b in g.view(np.uint32)] for g in unscaled],
        })
    return {"initial": {"scale": float(f32(scenario["options"].get("init_scale", 2.0**16))),
                        "growth_tracker": 0},
            "steps": steps}


# --------------------------------------------------------------------------------------------
# DeepSpeed v0.14 deepspeed/runtime/fp16/loss_scaler.py (+ config.py / constants.py)
# --------------------------------------------------------------------------------------------


class MinScaleError(Exception):
    pass


class DeepSpeedLossScalerRef:
    """LossScalerBase + LossScaler (static) + DynamicLossScaler, rank 0's view; `bug` as in
    TorchGradScalerRef."""

    def __init__(self, dynamic, init_scale=2**32, scale_factor=2., scale_window=1000,
                 min_scale=1, delayed_shift=1, consecutive_hysteresis=False,
                 raise_error_at_min_scale=True, half=True, bug=None):
        self.cur_scale = init_scale
        self.dynamic = dynamic
        self.half = half  # dtype == torch.half
        self.bug = bug
        if dynamic:
            self.cur_iter = 0
            self.last_overflow_iter = -1
            self.scale_factor = scale_factor
            self.scale_window = scale_window
            self.min_scale = min_scale
            self.delayed_shift = delayed_shift
            self.cur_hysteresis = delayed_shift
            self.consecutive_hysteresis = consecutive_hysteresis
            self.raise_error_at_min_scale = raise_error_at_min_scale

    def int_str(self, x):
        if self.bug == "float_in_log":
            return str(float(x))
        return str(int(x))

    def update_scale(self, overflow):
        """Returns the overflow line logged by rank 0 ("" when none)."""
        if not self.dynamic:
            return ""  # LossScalerBase.update_scale: pass
        line = ""
        if overflow:
            if self.delayed_shift == 1 or self.cur_hysteresis == 1:
                at_min = (self.cur_scale <= self.min_scale if self.bug == "min_le"
                          else self.cur_scale == self.min_scale)
                if at_min and self.raise_error_at_min_scale:
                    raise MinScaleError("Current loss scale already at minimum - cannot decrease "
                                        "scale anymore. Exiting run.")
                next_scale = max(self.cur_scale / self.scale_factor, self.min_scale)
                line = "[deepspeed] OVERFLOW! Rank 0 Skipping step."
                if self.half:
                    line += (f" Attempted loss scale: {self.int_str(self.cur_scale)}, reducing to "
                             f"{self.int_str(next_scale)}")
                self.cur_scale = next_scale
            else:
                line = "[deepspeed] OVERFLOW! Rank 0 Skipping step."
                if self.half:
                    line += (f" Attempted loss scale: {self.int_str(self.cur_scale)}, but "
                             f"hysteresis is {self.cur_hysteresis}. Reducing hysteresis to "
                             f"{self.cur_hysteresis - 1}")
                self.cur_hysteresis -= 1
                if self.bug == "overflow_iter_only_on_shrink":
                    self.cur_iter += 1
                    return line
            self.last_overflow_iter = self.cur_iter
        else:
            if self.consecutive_hysteresis and self.bug != "no_consecutive_restore":
                # (DeepSpeed also logs "Consecutive hysteresis is enabled. Restoring hysteresis
                # to {delayed_shift}" here; not part of loom's Update() contract.)
                self.cur_hysteresis = self.delayed_shift
            if self.bug == "stable_interval":  # v0.17.1+ / fused_optimizer.py's rule
                stable_interval = (self.cur_iter - self.last_overflow_iter) - 1
                grow = stable_interval > 0 and stable_interval % self.scale_window == 0
            else:
                grow = (self.cur_iter - self.last_overflow_iter) % self.scale_window == 0
            if grow:
                if not self.consecutive_hysteresis and self.bug != "no_refill":
                    self.cur_hysteresis = self.delayed_shift
                self.cur_scale *= self.scale_factor
        self.cur_iter += 1
        return line


# constants.py defaults of the fp16 section.
FP16_DEFAULTS = {
    "loss_scale": 0,
    "initial_scale_power": 16,
    "loss_scale_window": 1000,
    "hysteresis": 2,
    "consecutive_hysteresis": False,
    "min_loss_scale": 1,
}


def get_dynamic_loss_scale_args(fp16_dict):
    """config.py get_dynamic_loss_scale_args: None unless one of the dynamic keys is present."""
    keys = ["initial_scale_power", "loss_scale_window", "min_loss_scale", "hysteresis",
            "consecutive_hysteresis"]
    if not any(k in fp16_dict for k in keys):
        return None

    def get(k):  # get_scalar_param
        return fp16_dict.get(k, FP16_DEFAULTS[k])

    return {"init_scale": 2**get("initial_scale_power"),
            "scale_window": get("loss_scale_window"),
            "delayed_shift": get("hysteresis"),
            "consecutive_hysteresis": get("consecutive_hysteresis"),
            "min_scale": get("min_loss_scale")}


def create_loss_scaler(fp16_dict, half, bug=None):
    """CreateLossScaler(dtype, static_loss_scale, dynamic_scaling, dynamic_loss_args) as ZeRO
    1/2 calls it: dynamic iff fp16.loss_scale == 0 (engine.dynamic_loss_scale)."""
    static_loss_scale = fp16_dict.get("loss_scale", FP16_DEFAULTS["loss_scale"])
    dynamic_scaling = static_loss_scale == 0
    dynamic_loss_args = get_dynamic_loss_scale_args(fp16_dict)
    if bug == "config_defaults_always" and dynamic_loss_args is None:
        dynamic_loss_args = get_dynamic_loss_scale_args(dict(fp16_dict, hysteresis=2))
    if half and dynamic_scaling:
        if dynamic_loss_args is None:
            return DeepSpeedLossScalerRef(True, half=half, bug=bug)
        return DeepSpeedLossScalerRef(True, half=half, bug=bug, **dynamic_loss_args)
    return DeepSpeedLossScalerRef(False, init_scale=static_loss_scale if half else 1.0,
                                  half=half, bug=bug)


def ds_options(ref):
    o = {"dynamic": ref.dynamic, "init_scale": float(ref.cur_scale), "half": ref.half}
    if ref.dynamic:
        o.update({"scale_factor": float(ref.scale_factor), "scale_window": ref.scale_window,
                  "min_scale": float(ref.min_scale), "delayed_shift": ref.delayed_shift,
                  "consecutive_hysteresis": ref.consecutive_hysteresis,
                  "raise_error_at_min_scale": ref.raise_error_at_min_scale})
    return o


def ds_counters(ref):
    if not ref.dynamic:
        return {"scale": float(ref.cur_scale)}
    return {"scale": float(ref.cur_scale), "cur_hysteresis": ref.cur_hysteresis,
            "cur_iter": ref.cur_iter, "last_overflow_iter": ref.last_overflow_iter}


def replay_deepspeed(scenario, bug=None):
    if "config" in scenario:
        ref = create_loss_scaler(scenario["config"], scenario["enabled"], bug=bug)
    else:
        o = dict(scenario["options"])
        ref = DeepSpeedLossScalerRef(o.pop("dynamic", True), bug=bug, **o)
    out = {"options": ds_options(ref), "initial": ds_counters(ref), "steps": [], "error": None}
    for k, kind in enumerate(scenario["grads"]):
        overflow = kind != "finite"
        try:
            line = ref.update_scale(overflow)
        except MinScaleError as e:
            out["error"] = {"step": k, "message": str(e)}
            break
        out["steps"].append(dict(ds_counters(ref), skipped=overflow, line=line))
    return out


def replay(scenario, bug=None):
    if scenario["kind"] == "torch":
        return replay_torch(scenario, bug)
    return replay_deepspeed(scenario, bug)


# --------------------------------------------------------------------------------------------
# Scenarios
# --------------------------------------------------------------------------------------------


def seq(*parts):
    """seq(("finite", 3), "inf", ...) -> a flat list of gradient kinds."""
    out = []
    for p in parts:
        if isinstance(p, tuple):
            out.extend([p[0]] * p[1])
        else:
            out.append(p)
    return out


F, INF, NAN, NINF = "finite", "inf", "nan", "-inf"
DEFAULT_VALUES = [[1.0, -0.5, 0.003, 250.0]]


def torch_scenario(name, options, grads, values=None, bad=(0, 1)):
    return {"name": name, "kind": "torch", "options": options, "grads": grads,
            "values": values or DEFAULT_VALUES, "bad": list(bad)}


def ds_scenario(name, options, grads):
    return {"name": name, "kind": "deepspeed", "options": options, "grads": grads}


def ds_config_scenario(name, config, enabled, grads):
    return {"name": name, "kind": "deepspeed", "config": config, "enabled": enabled,
            "grads": grads}



def scenarios():
    t = [
        torch_scenario("torch_interval1", {"init_scale": 1.0, "growth_interval": 1},
                       seq((F, 3), INF, F, NAN, F, NINF, NINF, (F, 2))),
        torch_scenario("torch_interval2", {"init_scale": 65536.0, "growth_interval": 2},
                       seq((F, 3), INF, (F, 3), NAN, NAN, (F, 4), NINF, F)),
        torch_scenario("torch_interval3", {"init_scale": 1024.0, "growth_interval": 3},
                       seq(F, F, INF, (F, 6), NINF, F, F, NAN, (F, 3))),
        # Backoff below 1 (inv_scale > 1 while unscaling), then growth back above 1.
        torch_scenario("torch_interval5_below_one", {"init_scale": 8.0, "growth_interval": 5},
                       seq((INF, 6), (F, 11), NAN, (F, 5))),
        torch_scenario("torch_consecutive_infs", {"growth_interval": 3},
                       seq((INF, 20), (F, 7), (NAN, 3), (NINF, 3))),
        # Factors that are not powers of two: every product is rounded double -> float32, and
        # the unscaled grads are not the original values exactly.
        torch_scenario("torch_odd_factors",
                       {"init_scale": 1000.0, "growth_factor": 3.0, "backoff_factor": 0.3,
                        "growth_interval": 2},
                       seq((F, 5), INF, (F, 3), NAN, INF, (F, 6), NINF, (F, 4)),
                       values=[[0.1, 1.0 / 3.0, 1e-30, 123456.789], [-7.7, 2.5e-8]], bad=(1, 0)),
        torch_scenario("torch_odd_factors_near_one",
                       {"init_scale": 12345.678, "growth_factor": 1.1, "backoff_factor": 0.9,
                        "growth_interval": 1},
                       seq((F, 9), INF, INF, (F, 4), NAN, (F, 7)),
                       values=[[0.3, -0.7], [1e3, 3.14159, 2.71828]], bad=(1, 2)),
        # The float32 limit: a growth whose float32 result is inf is not taken (torch >= 2.1).
        torch_scenario("torch_float32_limit",
                       {"init_scale": 3e38, "growth_interval": 1},
                       seq(F, F, INF, F, F, F, NAN, NAN, (F, 4)), values=[[1e-3, -1e-5]]),
        torch_scenario("torch_float32_limit_2pow127",
                       {"init_scale": 2.0**127, "growth_interval": 2}, seq((F, 6), INF, (F, 5)),
                       values=[[1e-30, 2e-31]]),
        torch_scenario("torch_float32_limit_factor_1p1",
                       {"init_scale": 3e38, "growth_factor": 1.1, "growth_interval": 1},
                       seq((F, 3), INF, (F, 3)), values=[[1e-30]], bad=(0, 0)),
        # FLT_MAX * (1 + 2^-25) rounds back to FLT_MAX (taken); FLT_MAX * (1 + 2^-24) rounds to
        # inf (not taken).
        torch_scenario("torch_flt_max_round_down",
                       {"init_scale": FLT_MAX, "growth_factor": 1.0 + 2.0**-25,
                        "growth_interval": 1}, seq((F, 3), INF, (F, 3)), values=[[1e-30]],
                       bad=(0, 0)),
        torch_scenario("torch_flt_max_round_up",
                       {"init_scale": FLT_MAX, "growth_factor": 1.0 + 2.0**-24,
                        "growth_interval": 1}, seq((F, 3), INF, (F, 3)), values=[[1e-30]],
                       bad=(0, 0)),
        torch_scenario("torch_tiny_scale",
                       {"init_scale": 2.0**-10, "backoff_factor": 0.25, "growth_interval": 4},
                       seq((INF, 3), (F, 9), NAN, (F, 4))),
        # The defaults: growth after 2000 clean steps, counted again from 0 after an inf.
        torch_scenario("torch_defaults_long", {},
                       seq((F, 2000), (F, 1500), INF, (F, 1999), F, F)),
    ]
    d = [
        ds_scenario("ds_window1_h1",
                    {"init_scale": 65536.0, "scale_window": 1, "delayed_shift": 1},
                    seq(F, F, INF, F, NAN, INF, F, F, (NINF, 3), F)),
        ds_scenario("ds_window2_h2",
                    {"init_scale": 65536.0, "scale_window": 2, "delayed_shift": 2},
                    seq((F, 3), INF, F, INF, (F, 3), INF, INF, INF, (F, 5), INF, F, INF, F)),
        ds_scenario("ds_window3_h3_consecutive",
                    {"init_scale": 1024.0, "scale_window": 3, "delayed_shift": 3,
                     "consecutive_hysteresis": True},
                    seq(INF, F, INF, INF, (F, 3), (INF, 3), (F, 4), (INF, 4), (F, 7))),
        ds_scenario("ds_window3_h3_not_consecutive",
                    {"init_scale": 1024.0, "scale_window": 3, "delayed_shift": 3},
                    seq(INF, F, INF, INF, (F, 3), (INF, 3), (F, 4), (INF, 4), (F, 7))),
        ds_scenario("ds_window2_h2_consecutive",
                    {"init_scale": 256.0, "scale_window": 2, "delayed_shift": 2,
                     "consecutive_hysteresis": True},
                    seq(INF, F, INF, F, INF, INF, INF, (F, 4), INF, F, F, INF, INF)),
        ds_scenario("ds_window1000_short_runs", {"scale_window": 1000},
                    seq((F, 10), INF, (F, 5), INF, INF, (F, 20), NAN)),
        ds_scenario("ds_window1000_growth", {"scale_window": 1000, "delayed_shift": 2},
                    seq((F, 999), F, INF, (F, 998), F, F, INF, INF, (F, 1001))),
        ds_scenario("ds_min_scale_raise",
                    {"init_scale": 4.0, "scale_window": 100, "min_scale": 1.0},
                    seq(INF, F, INF, INF, F)),
        ds_scenario("ds_min_scale_no_raise",
                    {"init_scale": 4.0, "scale_window": 3, "min_scale": 1.0,
                     "raise_error_at_min_scale": False},
                    seq(INF, INF, INF, INF, (F, 3), INF, INF, (F, 2))),
        # A fractional min: int() truncation prints "reducing to 0".
        ds_scenario("ds_min_scale_fraction",
                    {"init_scale": 2.0, "scale_window": 2, "min_scale": 0.25},
                    seq(INF, INF, F, F, INF, INF, INF, INF)),
        # At the minimum, hysteresis still absorbs an overflow; the next one raises.
        ds_scenario("ds_min_scale_with_hysteresis",
                    {"init_scale": 2.0, "scale_window": 5, "min_scale": 1.0,
                     "delayed_shift": 2, "consecutive_hysteresis": True},
                    seq(INF, INF, F, INF, F, INF, INF, F)),
        # A scale below min_scale: the overflow "reduces" it to min_scale (max()), and only an
        # overflow at exactly min_scale raises (an equality test).
        ds_scenario("ds_init_below_min",
                    {"init_scale": 0.5, "scale_window": 2, "min_scale": 1.0},
                    seq(INF, F, INF, INF)),
        ds_scenario("ds_scale_factor_3",
                    {"init_scale": 1000.0, "scale_factor": 3.0, "scale_window": 2,
                     "min_scale": 1.0, "raise_error_at_min_scale": False},
                    seq(INF, INF, INF, INF, INF, INF, INF, (F, 4), INF)),
        ds_scenario("ds_bf16_lines",
                    {"init_scale": 65536.0, "scale_window": 2, "delayed_shift": 2,
                     "half": False},
                    seq(INF, INF, (F, 3), INF, F, INF, INF)),
        # Scales of 2^63 and above in the overflow line (growth from 2^60, and a config with
        # initial_scale_power 70).
        ds_scenario("ds_scale_above_int64",
                    {"init_scale": 2.0**60, "scale_window": 1},
                    seq((F, 4), INF, INF, INF, INF)),
        ds_scenario("ds_static", {"dynamic": False, "init_scale": 128.0},
                    seq(F, INF, F, NAN, INF, F)),
        ds_config_scenario("cfg_hf_doc_all_keys",
                           {"enabled": "auto", "loss_scale": 0, "loss_scale_window": 1000,
                            "initial_scale_power": 16, "hysteresis": 2, "min_loss_scale": 1},
                           True, seq((F, 3), INF, INF, INF, (F, 4))),
        ds_config_scenario("cfg_one_key_hysteresis", {"enabled": True, "hysteresis": 4}, True,
                           seq(INF, INF, INF, INF, INF, F)),
        ds_config_scenario("cfg_one_key_window", {"enabled": True, "loss_scale_window": 2}, True,
                           seq(F, F, INF, INF, INF, F, F, F)),
        ds_config_scenario("cfg_one_key_min", {"enabled": True, "min_loss_scale": 16384}, True,
                           seq(INF, INF, INF, INF, INF, INF)),
        ds_config_scenario("cfg_no_keys", {"enabled": True}, True, seq(F, INF, INF, F)),
        ds_config_scenario("cfg_loss_scale_zero_only", {"enabled": True, "loss_scale": 0}, True,
                           seq(INF, F, INF)),
        ds_config_scenario("cfg_all_custom",
                           {"enabled": True, "initial_scale_power": 8, "loss_scale_window": 2,
                            "hysteresis": 3, "consecutive_hysteresis": True,
                            "min_loss_scale": 32},
                           True, seq(INF, INF, F, INF, INF, INF, INF, INF, INF, INF, F, F)),
        ds_config_scenario("cfg_power0_below_min",
                           {"enabled": True, "initial_scale_power": 0, "min_loss_scale": 4},
                           True, seq(F, INF, (F, 999), INF, INF)),
        ds_config_scenario("cfg_power70", {"enabled": True, "initial_scale_power": 70}, True,
                           seq(INF, INF, F)),
        ds_config_scenario("cfg_static", {"enabled": True, "loss_scale": 1024}, True,
                           seq(F, INF, F)),
        ds_config_scenario("cfg_bf16", {"enabled": False, "hysteresis": 2}, False,
                           seq(F, INF, F)),
    ]
    return t + d


# --------------------------------------------------------------------------------------------
# Comparison
# --------------------------------------------------------------------------------------------


def same_bits(a, b):
    """Two lists (per parameter) of float32 bit patterns; any NaN equals any NaN."""
    def is_nan(bits):
        return (bits & 0x7F800000) == 0x7F800000 and (bits & 0x007FFFFF) != 0

    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if len(x) != len(y):
            return False
        for u, v in zip(x, y):
            if u != v and not (is_nan(u) and is_nan(v)):
                return False
    return True


def describe(v):
    if isinstance(v, float):
        return f"{v!r} ({v.hex()})"
    return repr(v)


def diff(scenario, expected, got):
    """The first difference between the reference trace and loom's, or None."""
    name = scenario["name"]
    for key in ("options", "initial"):
        if key in expected and expected[key] != got.get(key):
            return f"{name}: {key}: expected {expected[key]}, loom has {got.get(key)}"
    exp_steps, got_steps = expected["steps"], got["steps"]
    for k in range(min(len(exp_steps), len(got_steps))):
        e, g = exp_steps[k], got_steps[k]
        for field in e:
            ok = (same_bits(e[field], g.get(field, [])) if field == "grad_bits"
                  else e[field] == g.get(field))
            if not ok:
                return (f"{name}: step {k} (grad {scenario['grads'][k]}): {field}: expected "
                        f"{describe(e[field])}, loom has {describe(g.get(field))}")
    if len(exp_steps) != len(got_steps):
        return (f"{name}: expected {len(exp_steps)} recorded steps, loom has {len(got_steps)} "
                f"(error: expected {expected.get('error')}, loom has {got.get('error')})")
    if expected.get("error") != got.get("error"):
        return f"{name}: error: expected {expected.get('error')}, loom has {got.get('error')}"
    return None


# Deliberately wrong rules; each must be caught by at least one scenario.
MUTANTS = {
    "torch": ["late_growth", "no_finite_guard", "float32_product", "tracker_kept_on_inf"],
    "deepspeed": ["stable_interval", "no_refill", "no_consecutive_restore",
                  "overflow_iter_only_on_shrink", "min_le", "float_in_log",
                  "config_defaults_always"],
}


def check(scenarios_path, results_path):
    with open(scenarios_path) as f:
        scen = json.load(f)
    with open(results_path) as f:
        results = {r["name"]: r for r in json.load(f)["scenarios"]}
    failures = []
    n_steps = 0
    for s in scen:
        got = results.get(s["name"])
        if got is None:
            failures.append(f"{s['name']}: no result from scaler_trace_tool")
            continue
        if got.get("tool_error"):
            failures.append(f"{s['name']}: scaler_trace_tool failed: {got['tool_error']}")
            continue
        expected = replay(s)
        d = diff(s, expected, got)
        n_steps += len(expected["steps"])
        if d:
            failures.append(d)
    if failures:
        for msg in failures:
            print("FAIL: " + msg, file=sys.stderr)
        print(f"scaler_reference: {len(failures)} of {len(scen)} scenarios differ from the "
              "published rules", file=sys.stderr)
        return 1
    print(f"scaler_reference: {len(scen)} scenarios, {n_steps} steps: loom matches torch's "
          "GradScaler and DeepSpeed's loss scalers exactly")

    # Self-check: the comparison above would have caught each wrong rule.
    undetected = []
    for kind, bugs in MUTANTS.items():
        for bug in bugs:
            caught = [s["name"] for s in scen if s["kind"] == kind
                      and diff(s, replay(s, bug), results[s["name"]]) is not None]
            if caught:
                print(f"  self-check: wrong rule {kind}/{bug} is caught by {len(caught)} "
                      f"scenario(s), e.g. {caught[0]}")
            else:
                undetected.append(f"{kind}/{bug}")
    if undetected:
        print("FAIL: the scenarios do not detect these wrong rules: " + ", ".join(undetected),
              file=sys.stderr)
        return 1
    return 0


def main(argv):
    if len(argv) == 3 and argv[1] == "scenarios":
        with open(argv[2], "w") as f:
            json.dump(scenarios(), f, indent=1)
        return 0
    if len(argv) == 4 and argv[1] == "check":
        return check(argv[2], argv[3])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
