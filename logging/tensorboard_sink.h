// A MetricsSink writing a TensorBoard event file, like torch.utils.tensorboard.SummaryWriter
// (which Hugging Face's TensorBoardCallback uses) writing add_scalar() calls.
//
// Contract:
//   Create(log_dir, options) creates `log_dir` if missing and a new file in it named
//     events.out.tfevents.<unix seconds, %010d>.<hostname><filename_suffix>
//   (the name TensorFlow's EventsWriter gives); if that name is taken, ".1", ".2", ... is
//   appended until a new file can be created, so two sinks never share a file. Its first record
//   is Event{wall_time: now, file_version: "brain.Event:2"}, fsync'd at once.
//   WriteScalars(step, scalars, wall_time) appends one Event{wall_time, step,
//   summary{value{tag, simple_value}}} per scalar, in order; values are rounded to float32 as
//   TensorBoard stores them (NaN and infinities pass through). All events of one call reach the
//   file with one write(2); Flush() fsyncs.
//   Records use TFRecord framing (logging/tfrecord.h); messages are logging/event.proto.
//
// Example:
//   ASSIGN_OR_RETURN(std::unique_ptr<TensorBoardSink> tb,
//                    TensorBoardSink::Create(args.logging_dir));
//   RETURN_IF_ERROR(tb->WriteScalars(global_step, {{"train/loss", loss}}, WallTimeSeconds()));
//   RETURN_IF_ERROR(tb->Flush());
#ifndef LOOM_LOGGING_TENSORBOARD_SINK_H_
#define LOOM_LOGGING_TENSORBOARD_SINK_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "logging/internal/append_file.h"
#include "logging/metrics_sink.h"

namespace loom::logging {

inline constexpr char kEventFileVersion[] = "brain.Event:2";

struct TensorBoardSinkOptions {
  std::string hostname;           // empty: gethostname()
  std::function<double()> clock;  // seconds since the epoch; empty: WallTimeSeconds
  std::string filename_suffix;    // appended to the file name, e.g. ".eval"
};

class TensorBoardSink : public MetricsSink {
 public:
  static absl::StatusOr<std::unique_ptr<TensorBoardSink>> Create(
      const std::string& log_dir, const TensorBoardSinkOptions& options = {});

  absl::Status WriteScalars(int64_t step, const Scalars& scalars, double wall_time) override;
  absl::Status Flush() override;

  // The event file's full path.
  const std::string& path() const { return file_->path(); }

 private:
  explicit TensorBoardSink(std::unique_ptr<internal::AppendFile> file) : file_(std::move(file)) {}

  std::unique_ptr<internal::AppendFile> file_;
};

}  // namespace loom::logging

#endif  // LOOM_LOGGING_TENSORBOARD_SINK_H_
