// A MetricsSink appending one JSON object per WriteScalars() call to a file (JSON Lines):
//   {"step": 10, "wall_time": 1700000000.5, "loss": 0.25, "learning_rate": 5e-05}
//
// Contract:
//   Create(path) opens `path` for appending (creating it and its parent directories; an
//   existing file is extended, so a resumed run continues its log). Keys are "step",
//   "wall_time", then the tags in the given order; a tag equal to "step" or "wall_time", or
//   repeated within one call, is InvalidArgument naming the tag and the file, and nothing is
//   written. Numbers are written in the shortest form that reads back to the same double.
//   Non-finite values are written as the bare tokens NaN, Infinity and -Infinity: Python's
//   json.loads (and so pandas / HF tooling) reads them back as float('nan') / float('inf'),
//   whereas strict JSON has no way to say them (nlohmann would write null, losing the fact that
//   a loss diverged). Strict parsers (jq, JavaScript's JSON.parse) reject such lines.
//   Tags that are not valid UTF-8 have the bad bytes replaced by U+FFFD.
//   Each call reaches the file with one write(2); Flush() fsyncs it.
//
// Example:
//   ASSIGN_OR_RETURN(std::unique_ptr<JsonlSink> sink, JsonlSink::Create(dir + "/metrics.jsonl"));
//   RETURN_IF_ERROR(sink->WriteScalars(10, {{"loss", 0.25}}, WallTimeSeconds()));
#ifndef LOOM_LOGGING_JSONL_SINK_H_
#define LOOM_LOGGING_JSONL_SINK_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "logging/internal/append_file.h"
#include "logging/metrics_sink.h"

namespace loom::logging {

// The line (without '\n') JsonlSink writes for one call; errors as in the header comment
// (without the file name).
absl::StatusOr<std::string> FormatJsonlRecord(int64_t step, const Scalars& scalars,
                                              double wall_time);

class JsonlSink : public MetricsSink {
 public:
  static absl::StatusOr<std::unique_ptr<JsonlSink>> Create(const std::string& path);

  absl::Status WriteScalars(int64_t step, const Scalars& scalars, double wall_time) override;
  absl::Status Flush() override;

  const std::string& path() const { return file_->path(); }

 private:
  explicit JsonlSink(std::unique_ptr<internal::AppendFile> file) : file_(std::move(file)) {}

  std::unique_ptr<internal::AppendFile> file_;
};

}  // namespace loom::logging

#endif  // LOOM_LOGGING_JSONL_SINK_H_
