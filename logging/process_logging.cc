#include "logging/process_logging.h"

#include "glog/logging.h"

namespace loom::logging {

void InitProcessLogging(const char* argv0) {
  if (google::IsGoogleLoggingInitialized()) return;
  FLAGS_logtostderr = true;
  google::InitGoogleLogging(argv0 != nullptr ? argv0 : "loom");
}

}  // namespace loom::logging
