// Process-wide glog set-up for loom's binaries: call InitProcessLogging(argv[0]) first thing in
// main(), before anything logs, so that no binary starts with glog's "Logging before
// InitGoogleLogging() is written to STDERR" warning.
//
// Contract:
//   - Log lines go to stderr only (no log files under /tmp), in glog's usual format; the level
//     stays glog's default until logging/log_level.h applies the run's --log_level.
//   - Safe to call more than once (later calls change nothing) and from tests.
//
// Example:
//   int main(int argc, char** argv) {
//     loom::logging::InitProcessLogging(argv[0]);
//     ...
//   }
#ifndef LOOM_LOGGING_PROCESS_LOGGING_H_
#define LOOM_LOGGING_PROCESS_LOGGING_H_

namespace loom::logging {

void InitProcessLogging(const char* argv0);

}  // namespace loom::logging

#endif  // LOOM_LOGGING_PROCESS_LOGGING_H_
