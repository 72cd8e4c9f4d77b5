// Where logged scalars go: the interface the Trainer's reporting callbacks write through
// (log history JSONL, TensorBoard event files, ...).
//
// Contract:
//   WriteScalars(step, scalars, wall_time) records the (tag, value) pairs logged at global step
//   `step`, at `wall_time` seconds since the Unix epoch (Python's time.time()). Tags are written
//   in the given order; values may be NaN or infinite (each sink documents how it stores them).
//   Flush() makes everything written so far durable (written through to the file and fsync'd).
//   Sinks are not thread-safe: the caller serializes calls. The destructor closes without
//   reporting errors, so call Flush() at the end of training to see them.
//
// Example:
//   ASSIGN_OR_RETURN(std::unique_ptr<MetricsSink> sink, JsonlSink::Create(dir + "/log.jsonl"));
//   RETURN_IF_ERROR(sink->WriteScalars(state.global_step,
//                                      {{"loss", 0.25}, {"learning_rate", 5e-5}},
//                                      WallTimeSeconds()));
//   RETURN_IF_ERROR(sink->Flush());
#ifndef LOOM_LOGGING_METRICS_SINK_H_
#define LOOM_LOGGING_METRICS_SINK_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"

namespace loom::logging {

// Ordered (tag, value) pairs.
using Scalars = std::vector<std::pair<std::string, double>>;

class MetricsSink {
 public:
  virtual ~MetricsSink();

  virtual absl::Status WriteScalars(int64_t step, const Scalars& scalars, double wall_time) = 0;
  virtual absl::Status Flush() = 0;
};

// Seconds since the Unix epoch, with sub-second precision (Python's time.time()).
double WallTimeSeconds();

}  // namespace loom::logging

#endif  // LOOM_LOGGING_METRICS_SINK_H_
