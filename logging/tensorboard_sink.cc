#include "logging/tensorboard_sink.h"

#include <limits.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/file_util.h"
#include "base/status_macros.h"
#include "logging/event.pb.h"
#include "logging/tfrecord.h"

namespace loom::logging {
namespace {

// Bounds the ".N" search; reaching it means something is badly wrong with the directory.
constexpr int kMaxNameAttempts = 1000;

absl::StatusOr<std::string> Hostname() {
  char name[HOST_NAME_MAX + 1] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) {
    return absl::ErrnoToStatus(errno, "cannot read the hostname for the event file name");
  }
  return std::string(name);
}

std::string EncodeEvent(const tensorboard::Event& event) {
  return EncodeTFRecord(event.SerializeAsString());
}

}  // namespace

absl::StatusOr<std::unique_ptr<TensorBoardSink>> TensorBoardSink::Create(
    const std::string& log_dir, const TensorBoardSinkOptions& options) {
  std::string host = options.hostname;
  if (host.empty()) {
    ASSIGN_OR_RETURN(host, Hostname());
  }
  const double now = options.clock ? options.clock() : WallTimeSeconds();
  RETURN_IF_ERROR(base::MakeDirs(log_dir));
  const std::string base_name =
      absl::StrFormat("%s/events.out.tfevents.%010d.%s%s", log_dir,
                      static_cast<int64_t>(std::floor(now)), host, options.filename_suffix);
  std::unique_ptr<internal::AppendFile> file;
  for (int attempt = 0; attempt < kMaxNameAttempts && file == nullptr; ++attempt) {
    const std::string path = attempt == 0 ? base_name : absl::StrCat(base_name, ".", attempt);
    absl::StatusOr<std::unique_ptr<internal::AppendFile>> opened =
        internal::AppendFile::CreateNew(path);
    if (opened.ok()) {
      file = *std::move(opened);
    } else if (!absl::IsAlreadyExists(opened.status())) {
      return opened.status();
    }
  }
  if (file == nullptr) {
    return absl::AlreadyExistsError(absl::StrCat("cannot create an event file: ", base_name,
                                                 " and ", kMaxNameAttempts - 1,
                                                 " numbered variants exist"));
  }
  tensorboard::Event header;
  header.set_wall_time(now);
  header.set_file_version(kEventFileVersion);
  RETURN_IF_ERROR(file->Append(EncodeEvent(header)));
  RETURN_IF_ERROR(file->Flush());
  return std::unique_ptr<TensorBoardSink>(new TensorBoardSink(std::move(file)));
}

absl::Status TensorBoardSink::WriteScalars(int64_t step, const Scalars& scalars, double wall_time) {
  std::string records;
  for (const auto& [tag, value] : scalars) {
    tensorboard::Event event;
    event.set_wall_time(wall_time);
    event.set_step(step);
    tensorboard::Summary::Value* v = event.mutable_summary()->add_value();
    v->set_tag(tag);
    v->set_simple_value(static_cast<float>(value));
    records += EncodeEvent(event);
  }
  return file_->Append(records);
}

absl::Status TensorBoardSink::Flush() { return file_->Flush(); }

}  // namespace loom::logging
