#include "trainer/metrics.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/file_util.h"
#include "base/python_float.h"
#include "base/status_macros.h"

namespace loom::trainer {
namespace {

using ojson = nlohmann::ordered_json;

std::string PyStr(const ojson& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_float()) return base::PyJsonFloatRepr(v.get<double>());
  if (v.is_boolean()) return v.get<bool>() ? "True" : "False";
  return v.dump();
}

// HF _secs2timedelta: "H:MM:SS.ff" (datetime.timedelta of the whole seconds, then hundredths).
std::string SecsToTimedelta(double secs) {
  const int64_t whole = static_cast<int64_t>(secs);
  const int msec = static_cast<int>(std::fabs(secs - whole) * 100);
  int64_t s = whole;
  std::string days;
  if (s < 0 || s >= 86400) {
    int64_t d = static_cast<int64_t>(std::floor(s / 86400.0));
    s -= d * 86400;
    days = absl::StrCat(d, std::abs(d) == 1 ? " day, " : " days, ");
  }
  return absl::StrFormat("%s%d:%02d:%02d.%02d", days, s / 3600, (s / 60) % 60, s % 60, msec);
}

}  // namespace

double PyRound(double x, int ndigits) {
  if (!std::isfinite(x)) return x;
  // glibc's printf rounds the exact binary value correctly, as Python's round() does.
  char buf[512];
  std::snprintf(buf, sizeof(buf), "%.*f", ndigits, x);
  return std::strtod(buf, nullptr);
}

Metrics SpeedMetrics(const std::string& split, double start_time_seconds, double now_seconds,
                     std::optional<double> num_samples, std::optional<double> num_steps,
                     std::optional<double> num_tokens) {
  const double runtime = now_seconds - start_time_seconds;
  Metrics result = Metrics::object();
  result[split + "_runtime"] = PyRound(runtime, 4);
  if (runtime == 0) return result;
  if (num_samples) result[split + "_samples_per_second"] = PyRound(*num_samples / runtime, 3);
  if (num_steps) result[split + "_steps_per_second"] = PyRound(*num_steps / runtime, 3);
  if (num_tokens) result[split + "_tokens_per_second"] = PyRound(*num_tokens / runtime, 3);
  return result;
}

Metrics MetricsFormat(const Metrics& metrics) {
  Metrics out = Metrics::object();
  for (auto it = metrics.begin(); it != metrics.end(); ++it) {
    const std::string& k = it.key();
    const ojson& v = it.value();
    if (absl::StrContains(k, "_mem_") && v.is_number()) {
      out[k] = absl::StrCat(static_cast<int64_t>(v.get<double>()) >> 20, "MB");
    } else if (absl::StrContains(k, "_runtime") && v.is_number()) {
      out[k] = SecsToTimedelta(v.get<double>());
    } else if (k == "total_flos" && v.is_number()) {
      out[k] = absl::StrCat(static_cast<int64_t>(v.get<double>()) >> 30, "GF");
    } else if (v.is_number_float()) {
      out[k] = PyRound(v.get<double>(), 4);
    } else {
      out[k] = v;
    }
  }
  return out;
}

std::string FormatLogMetrics(const std::string& split, const Metrics& metrics) {
  std::string text = absl::StrCat("***** ", split, " metrics *****\n");
  const Metrics formatted = MetricsFormat(metrics);
  size_t k_width = 0, v_width = 0;
  std::vector<std::string> keys;
  for (auto it = formatted.begin(); it != formatted.end(); ++it) {
    keys.push_back(it.key());
    k_width = std::max(k_width, it.key().size());
    v_width = std::max(v_width, PyStr(it.value()).size());
  }
  std::sort(keys.begin(), keys.end());
  for (const std::string& key : keys) {
    const std::string value = PyStr(formatted.at(key));
    absl::StrAppend(&text, "  ", key, std::string(k_width - key.size(), ' '), " = ",
                    std::string(v_width - value.size(), ' '), value, "\n");
  }
  return text;
}

absl::Status SaveMetrics(const std::string& dir, const std::string& split, const Metrics& metrics,
                         bool combined) {
  RETURN_IF_ERROR(base::WriteFileAtomically(absl::StrCat(dir, "/", split, "_results.json"),
                                            PyJsonDumps(metrics, 4, true)));
  if (!combined) return absl::OkStatus();
  const std::string all_path = dir + "/all_results.json";
  Metrics all = Metrics::object();
  absl::StatusOr<std::string> existing = base::ReadFile(all_path);
  if (existing.ok()) {
    all = base::ParsePythonJson(*existing).value_or(Metrics());
    if (!all.is_object()) {
      return absl::InvalidArgumentError(absl::StrCat(
          all_path, " is not a JSON object; move it away so save_metrics can rewrite it"));
    }
  } else if (!absl::IsNotFound(existing.status())) {
    return existing.status();
  }
  for (auto it = metrics.begin(); it != metrics.end(); ++it) all[it.key()] = it.value();
  return base::WriteFileAtomically(all_path, PyJsonDumps(all, 4, true));
}

std::string PyDictRepr(const Metrics& metrics) {
  std::string out = "{";
  for (auto it = metrics.begin(); it != metrics.end(); ++it) {
    if (it != metrics.begin()) out += ", ";
    absl::StrAppend(&out, "'", it.key(), "': ");
    const ojson& v = it.value();
    if (v.is_string()) {
      absl::StrAppend(&out, "'", v.get<std::string>(), "'");
    } else if (v.is_number_float()) {
      const double d = v.get<double>();
      out += base::PythonFloatRepr(d);
    } else {
      out += PyStr(v);
    }
  }
  return out + "}";
}

absl::StatusOr<double> MetricValue(const Metrics& metrics, const std::string& name) {
  auto it = metrics.find(name);
  if (it == metrics.end()) {
    std::string keys;
    for (auto k = metrics.begin(); k != metrics.end(); ++k) {
      absl::StrAppend(&keys, keys.empty() ? "" : ", ", k.key());
    }
    return absl::InvalidArgumentError(
        absl::StrCat("metric '", name, "' was not computed; the metrics are: ", keys));
  }
  if (!it->is_number()) {
    return absl::InvalidArgumentError(absl::StrCat("metric '", name, "' is not a number"));
  }
  return it->get<double>();
}

}  // namespace loom::trainer
