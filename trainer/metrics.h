// Logged values and metrics as HF keeps them: an insertion-ordered name -> number map
// (Python dict of floats and ints), plus HF's helpers over it (transformers 4.41):
// speed_metrics, metrics_format, log_metrics text and save_metrics files.
//
// Values are JSON numbers: integers stay integers ("step": 10) and floats stay floats, so
// files we write read like HF's (json.dumps). NaN and infinities are written as Python's json
// writes them (NaN, Infinity, -Infinity).
//
// Example:
//   Metrics m = SpeedMetrics("train", start_seconds, /*num_samples=*/640, /*num_steps=*/80);
//   m["train_loss"] = 0.6931;
//   std::cout << FormatLogMetrics("train", m);
//   RETURN_IF_ERROR(SaveMetrics(args.output_dir(), "train", m, /*combined=*/true));
#ifndef LOOM_TRAINER_METRICS_H_
#define LOOM_TRAINER_METRICS_H_

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/python_json.h"
#include "nlohmann/json.hpp"

namespace loom::trainer {

using Metrics = nlohmann::ordered_json;

// Python's round(x, ndigits) for the values HF rounds (round-half-even on the decimal value of
// the double, as Python does).
double PyRound(double x, int ndigits);

// HF speed_metrics(split, start_time, num_samples, num_steps, num_tokens): <split>_runtime
// (rounded to 4 digits) and, when runtime > 0, <split>_samples_per_second, _steps_per_second,
// _tokens_per_second (rounded to 3 digits) for the counts given.
Metrics SpeedMetrics(const std::string& split, double start_time_seconds, double now_seconds,
                     std::optional<double> num_samples, std::optional<double> num_steps,
                     std::optional<double> num_tokens = std::nullopt);

// HF metrics_format: *_runtime as "h:mm:ss.ff", total_flos in GFLOPs (x / 2**30, int), *_mem_*
// in MB (x >> 20), other floats rounded to 4 digits.
Metrics MetricsFormat(const Metrics& metrics);

// HF log_metrics text: "***** <split> metrics *****" then one "  key = value" line per metric,
// keys sorted and padded to the longest key, values formatted as MetricsFormat does.
std::string FormatLogMetrics(const std::string& split, const Metrics& metrics);

// HF save_metrics: writes <dir>/<split>_results.json (or all_results.json when split is
// "all") with json.dump(indent=4, sort_keys=True); with `combined`, also merges the metrics
// into <dir>/all_results.json. Writes are atomic.
absl::Status SaveMetrics(const std::string& dir, const std::string& split, const Metrics& metrics,
                         bool combined = true);

// json.dumps text (base/python_json.h), under the name trainer code has always used.
using base::PyJsonDumps;

// Python str(dict) of the metrics, as HF's printer and progress callbacks print logs:
// {'loss': 0.6931, 'learning_rate': 5e-05, 'epoch': 0.5}
std::string PyDictRepr(const Metrics& metrics);

// A numeric metric value as double; InvalidArgument when missing or not a number.
absl::StatusOr<double> MetricValue(const Metrics& metrics, const std::string& name);

}  // namespace loom::trainer

#endif  // LOOM_TRAINER_METRICS_H_
