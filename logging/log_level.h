// Per-process log levels with Hugging Face Trainer semantics, applied over glog.
//
// Contract (transformers 4.38 `TrainingArguments.get_process_log_level`, fields `log_level`,
// `log_level_replica`, `log_on_each_node`):
//   Levels are Python `logging` ints: debug=10, info=20, warning=30, error=40, critical=50, and
//   passive=-1, which means "leave the level as it is". ParseLogLevel maps a name to its int;
//   an unknown name is InvalidArgument naming the value and listing the valid choices.
//
//   ShouldLog(policy, placement) is TrainingArguments.should_log:
//     log_on_each_node ? local_process_index == 0 : process_index == 0
//   so with log_on_each_node every node's local main process is "main", otherwise only global
//   rank 0 is.
//
//   ProcessLogLevel(policy, placement, current) is get_process_log_level(): main processes get
//   policy.log_level, the others policy.log_level_replica; a level that is passive resolves to
//   `current`, the library's level now (kDefaultLibraryLogLevel = warning when nothing set it).
//   Errors name the flag: "--log_level: invalid log level 'loud'; valid choices: ...".
//
//   ApplyLogLevel(level) sets glog's verbosity so that exactly the Python records at or above
//   `level` are emitted: FLAGS_minloglevel = INFO(0) for level <= info, WARNING(1) for
//   <= warning, ERROR(2) for <= error, FATAL(3) above; FLAGS_v = 1 for level <= debug (debug
//   messages are VLOG(1)), else 0. Passive (-1) changes nothing; other negative levels are
//   InvalidArgument. CurrentLogLevel() reads those two flags back as a named level.
//   These flags are glog's process-wide settings; this library keeps no state of its own.
//
// Example:
//   ProcessLogPolicy policy{.log_level = "warning", .log_level_replica = "error",
//                           .log_on_each_node = false};
//   ProcessPlacement here{.process_index = rank, .local_process_index = local_rank,
//                         .node_rank = node, .world_size = world};
//   ASSIGN_OR_RETURN(int level, ProcessLogLevel(policy, here, CurrentLogLevel()));
//   RETURN_IF_ERROR(ApplyLogLevel(level));   // rank 0: warning; every other rank: error
#ifndef LOOM_LOGGING_LOG_LEVEL_H_
#define LOOM_LOGGING_LOG_LEVEL_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace loom::logging {

inline constexpr int kLogLevelPassive = -1;
inline constexpr int kLogLevelDebug = 10;
inline constexpr int kLogLevelInfo = 20;
inline constexpr int kLogLevelWarning = 30;
inline constexpr int kLogLevelError = 40;
inline constexpr int kLogLevelCritical = 50;

// The transformers library's level when nothing has set it (logging.WARNING).
inline constexpr int kDefaultLibraryLogLevel = kLogLevelWarning;

// "debug" -> 10, ..., "critical" -> 50, "passive" -> -1. Case-sensitive, like HF's choices.
absl::StatusOr<int> ParseLogLevel(absl::string_view name);

// The name of a level ParseLogLevel accepts ("warning" for 30); "level <n>" for other ints.
std::string LogLevelName(int level);

// The log-level fields of TrainingArguments (a plain struct: this package does not know args).
struct ProcessLogPolicy {
  std::string log_level = "passive";
  std::string log_level_replica = "warning";
  bool log_on_each_node = true;
};

// Where this process sits in the job (torchrun's RANK, LOCAL_RANK, GROUP_RANK, WORLD_SIZE).
struct ProcessPlacement {
  int process_index = 0;        // global rank
  int local_process_index = 0;  // rank on this node
  int node_rank = 0;            // which node (informational: the rules only need the two above)
  int world_size = 1;
};

// TrainingArguments.should_log: whether this process logs as a main process.
bool ShouldLog(const ProcessLogPolicy& policy, const ProcessPlacement& placement);

// TrainingArguments.get_process_log_level(); `current_library_level` stands in for a passive
// level. Both policy levels are validated whichever one applies.
absl::StatusOr<int> ProcessLogLevel(const ProcessLogPolicy& policy,
                                    const ProcessPlacement& placement, int current_library_level);

// Sets glog's FLAGS_minloglevel and FLAGS_v for `level`; see the header comment.
absl::Status ApplyLogLevel(int level);

// The level glog's flags now express: 10, 20, 30, 40 or 50. (glog starts at INFO, i.e. 20.)
int CurrentLogLevel();

// This process's place from torchrun's environment (RANK, LOCAL_RANK, GROUP_RANK, WORLD_SIZE;
// one process when they are unset), for code that logs before the process group exists.
ProcessPlacement PlacementFromEnvironment();

// The example scripts' set-up (transformers 4.38 examples/pytorch/text-classification/run_glue.py:
// set_verbosity_info() when training_args.should_log, then get_process_log_level()): a process
// that ShouldLog starts from info, then ProcessLogLevel applies — so by default the main process
// logs at info and the replicas at warning (their argument dumps are not printed).
absl::Status ApplyScriptLogLevel(const ProcessLogPolicy& policy,
                                 const ProcessPlacement& placement);

}  // namespace loom::logging

#endif  // LOOM_LOGGING_LOG_LEVEL_H_
