// C++ half of //tests/precision:scaler_parity_test ("Scaler parity"): runs loom's
// real loss scalers on the scripted gradient sequences of a scenario file written by
// scaler_reference.py and records what they do after every step; scaler_reference.py then
// replays the same scenarios with its own implementation of torch's and DeepSpeed's published
// rules and compares every field exactly.
//
//   scaler_trace_tool SCENARIOS.json RESULTS.json
//
// Scenario kinds (see scaler_reference.py scenarios()):
//   "torch":     GradScalerOptions from "options"; each step sets the grads of real float32
//                parameter tensors to float32(values * scale) — the scenario's "bad" element
//                replaced by inf / -inf / nan on a non-finite step — and calls
//                GradScaler::Step. Recorded: scale (the float32 scale as a double),
//                growth_tracker, Step's result, whether step_fn ran, and the bits of the
//                unscaled grads.
//   "deepspeed": LossScalerOptions from "options", or from a DeepSpeed fp16 "config" section
//                through args::ParseDeepSpeedConfig + FromDeepSpeedFp16 (with "enabled");
//                each step calls Update(overflow, /*rank=*/0). Recorded: the effective
//                options, scale, cur_hysteresis, cur_iter, last_overflow_iter (dynamic only),
//                skipped (= overflow, the caller's decision) and the returned overflow line;
//                an Update error (the min-scale exception) ends the scenario and is recorded.
// Exits 1 when a scenario cannot be run (the error is also recorded for the report).
#include <ATen/ATen.h>

#include <cstdint>
#include <cstring>
#include <iostream>
#include <limits>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "args/deepspeed_config.h"
#include "base/file_util.h"
#include "base/status_macros.h"
#include "logging/process_logging.h"
#include "nlohmann/json.hpp"
#include "precision/grad_scaler.h"
#include "precision/loss_scaler.h"

namespace loom::precision {
namespace {

using json = nlohmann::ordered_json;

absl::StatusOr<float> BadValue(const std::string& kind) {
  if (kind == "inf") return std::numeric_limits<float>::infinity();
  if (kind == "-inf") return -std::numeric_limits<float>::infinity();
  if (kind == "nan") return std::numeric_limits<float>::quiet_NaN();
  return absl::InvalidArgumentError(absl::StrCat("unknown gradient kind \"", kind, "\""));
}

std::vector<uint32_t> Bits(const at::Tensor& t) {
  const at::Tensor c = t.contiguous();
  std::vector<uint32_t> bits(c.numel());
  std::memcpy(bits.data(), c.data_ptr<float>(), bits.size() * sizeof(float));
  return bits;
}

absl::StatusOr<json> RunTorch(const json& s) {
  const json& opt = s.at("options");
  GradScalerOptions o;
  o.init_scale = opt.value("init_scale", o.init_scale);
  o.growth_factor = opt.value("growth_factor", o.growth_factor);
  o.backoff_factor = opt.value("backoff_factor", o.backoff_factor);
  o.growth_interval = opt.value("growth_interval", o.growth_interval);
  ASSIGN_OR_RETURN(GradScaler scaler, GradScaler::Create(o));

  std::vector<at::Tensor> values, params;
  for (const json& v : s.at("values")) {
    values.push_back(at::tensor(v.get<std::vector<float>>(), at::kFloat));
    params.push_back(at::zeros_like(values.back()));
  }
  const int64_t bad_param = s.at("bad").at(0).get<int64_t>();
  const int64_t bad_index = s.at("bad").at(1).get<int64_t>();

  json out = {{"initial", {{"scale", static_cast<double>(scaler.scale())},
                           {"growth_tracker", scaler.growth_tracker()}}},
              {"steps", json::array()}};
  for (const json& g : s.at("grads")) {
    const std::string kind = g.get<std::string>();
    const at::Tensor scale = at::full({}, scaler.scale(), at::kFloat);
    for (size_t p = 0; p < params.size(); ++p) {
      at::Tensor grad = values[p] * scale;  // float32 product, as loss * scale makes it
      if (kind != "finite" && static_cast<int64_t>(p) == bad_param) {
        ASSIGN_OR_RETURN(const float bad, BadValue(kind));
        grad.select(0, bad_index).fill_(bad);
      }
      params[p].mutable_grad() = grad;
    }
    bool step_fn_ran = false;
    ASSIGN_OR_RETURN(const bool stepped, scaler.Step([&] { step_fn_ran = true; }, params));
    json grad_bits = json::array();
    for (const at::Tensor& p : params) grad_bits.push_back(Bits(p.grad()));
    out["steps"].push_back({{"scale", static_cast<double>(scaler.scale())},
                            {"growth_tracker", scaler.growth_tracker()},
                            {"stepped", stepped},
                            {"step_fn_ran", step_fn_ran},
                            {"grad_bits", grad_bits}});
  }
  return out;
}

absl::StatusOr<LossScalerOptions> DeepSpeedOptions(const json& s) {
  if (s.contains("config")) {
    std::vector<std::string> warnings;
    ASSIGN_OR_RETURN(const args::DeepSpeedConfig config,
                     args::ParseDeepSpeedConfig(json{{"fp16", s["config"]}},
                                                s.at("name").get<std::string>(), &warnings));
    for (const std::string& w : warnings) std::cerr << "config warning: " << w << "\n";
    return FromDeepSpeedFp16(config.fp16, s["config"], s.at("enabled").get<bool>());
  }
  const json& opt = s.at("options");
  LossScalerOptions o;
  o.dynamic = opt.value("dynamic", o.dynamic);
  o.init_scale = opt.value("init_scale", o.init_scale);
  o.scale_factor = opt.value("scale_factor", o.scale_factor);
  o.scale_window = opt.value("scale_window", o.scale_window);
  o.min_scale = opt.value("min_scale", o.min_scale);
  o.delayed_shift = opt.value("delayed_shift", o.delayed_shift);
  o.consecutive_hysteresis = opt.value("consecutive_hysteresis", o.consecutive_hysteresis);
  o.raise_error_at_min_scale = opt.value("raise_error_at_min_scale", o.raise_error_at_min_scale);
  o.half = opt.value("half", o.half);
  return o;
}

// The scaler's counters (a static scaler has only its scale).
json Counters(const DeepSpeedLossScaler& scaler) {
  const LossScalerState& st = scaler.State();
  if (!scaler.dynamic()) return {{"scale", st.cur_scale}};
  return {{"scale", st.cur_scale},
          {"cur_hysteresis", st.cur_hysteresis},
          {"cur_iter", st.cur_iter},
          {"last_overflow_iter", st.last_overflow_iter}};
}

absl::StatusOr<json> RunDeepSpeed(const json& s) {
  ASSIGN_OR_RETURN(const LossScalerOptions o, DeepSpeedOptions(s));
  DeepSpeedLossScaler scaler(o);
  json options = {{"dynamic", o.dynamic}, {"init_scale", o.init_scale}, {"half", o.half}};
  if (o.dynamic) {
    options["scale_factor"] = o.scale_factor;
    options["scale_window"] = o.scale_window;
    options["min_scale"] = o.min_scale;
    options["delayed_shift"] = o.delayed_shift;
    options["consecutive_hysteresis"] = o.consecutive_hysteresis;
    options["raise_error_at_min_scale"] = o.raise_error_at_min_scale;
  }
  json out = {{"options", options},
              {"initial", Counters(scaler)},
              {"steps", json::array()},
              {"error", nullptr}};
  int64_t k = 0;
  for (const json& g : s.at("grads")) {
    const bool overflow = g.get<std::string>() != "finite";
    absl::StatusOr<std::string> line = scaler.Update(overflow, /*rank=*/0);
    if (!line.ok()) {
      out["error"] = {{"step", k}, {"message", std::string(line.status().message())}};
      break;
    }
    json step = Counters(scaler);
    step["skipped"] = overflow;
    step["line"] = *line;
    out["steps"].push_back(step);
    ++k;
  }
  return out;
}

int Main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: scaler_trace_tool SCENARIOS.json RESULTS.json\n";
    return 2;
  }
  absl::StatusOr<std::string> text = base::ReadFile(argv[1]);
  if (!text.ok()) {
    std::cerr << text.status() << "\n";
    return 1;
  }
  json results = {{"scenarios", json::array()}};
  int failures = 0;
  for (const json& s : json::parse(*text)) {
    const std::string name = s.at("name").get<std::string>();
    const std::string kind = s.at("kind").get<std::string>();
    absl::StatusOr<json> r;
    if (kind == "torch") {
      r = RunTorch(s);
    } else if (kind == "deepspeed") {
      r = RunDeepSpeed(s);
    } else {
      r = absl::InvalidArgumentError(absl::StrCat("unknown kind \"", kind, "\""));
    }
    json entry;
    if (r.ok()) {
      entry = *std::move(r);
    } else {
      std::cerr << "FAIL: " << name << ": " << r.status() << "\n";
      entry["tool_error"] = r.status().ToString();
      ++failures;
    }
    entry["name"] = name;
    results["scenarios"].push_back(std::move(entry));
  }
  const absl::Status written = base::WriteFileAtomically(argv[2], results.dump(1));
  if (!written.ok()) {
    std::cerr << written << "\n";
    return 1;
  }
  std::cout << "scaler_trace_tool: " << results["scenarios"].size() << " scenarios traced\n";
  return failures == 0 ? 0 : 1;
}

}  // namespace
}  // namespace loom::precision

int main(int argc, char** argv) {
  loom::logging::InitProcessLogging(argv[0]);
  return loom::precision::Main(argc, argv);
}
