#include "logging/log_level.h"

#include <cstdlib>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "glog/logging.h"

namespace loom::logging {
namespace {

struct NamedLevel {
  const char* name;
  int level;
};

constexpr NamedLevel kLevels[] = {
    {"debug", kLogLevelDebug}, {"info", kLogLevelInfo},         {"warning", kLogLevelWarning},
    {"error", kLogLevelError}, {"critical", kLogLevelCritical}, {"passive", kLogLevelPassive},
};

constexpr char kChoices[] = "debug, info, warning, error, critical, passive";

// glog severities.
constexpr int kGlogInfo = 0;
constexpr int kGlogWarning = 1;
constexpr int kGlogError = 2;
constexpr int kGlogFatal = 3;

}  // namespace

absl::StatusOr<int> ParseLogLevel(absl::string_view name) {
  for (const NamedLevel& l : kLevels) {
    if (name == l.name) return l.level;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("invalid log level '", name, "'; valid choices: ", kChoices));
}

std::string LogLevelName(int level) {
  for (const NamedLevel& l : kLevels) {
    if (level == l.level) return l.name;
  }
  return absl::StrCat("level ", level);
}

bool ShouldLog(const ProcessLogPolicy& policy, const ProcessPlacement& placement) {
  return policy.log_on_each_node ? placement.local_process_index == 0
                                 : placement.process_index == 0;
}

absl::StatusOr<int> ProcessLogLevel(const ProcessLogPolicy& policy,
                                    const ProcessPlacement& placement, int current_library_level) {
  absl::StatusOr<int> main_level = ParseLogLevel(policy.log_level);
  if (!main_level.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--log_level: ", main_level.status().message()));
  }
  absl::StatusOr<int> replica_level = ParseLogLevel(policy.log_level_replica);
  if (!replica_level.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--log_level_replica: ", replica_level.status().message()));
  }
  const int level = ShouldLog(policy, placement) ? *main_level : *replica_level;
  return level == kLogLevelPassive ? current_library_level : level;
}

absl::Status ApplyLogLevel(int level) {
  if (level == kLogLevelPassive) return absl::OkStatus();
  if (level < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "invalid log level ", level, "; expected passive (-1) or a logging level >= 0"));
  }
  int min_severity = kGlogFatal;
  if (level <= kLogLevelInfo) {
    min_severity = kGlogInfo;
  } else if (level <= kLogLevelWarning) {
    min_severity = kGlogWarning;
  } else if (level <= kLogLevelError) {
    min_severity = kGlogError;
  }
  FLAGS_minloglevel = min_severity;
  FLAGS_v = level <= kLogLevelDebug ? 1 : 0;
  return absl::OkStatus();
}

int CurrentLogLevel() {
  if (FLAGS_minloglevel <= kGlogInfo) return FLAGS_v >= 1 ? kLogLevelDebug : kLogLevelInfo;
  if (FLAGS_minloglevel == kGlogWarning) return kLogLevelWarning;
  if (FLAGS_minloglevel == kGlogError) return kLogLevelError;
  return kLogLevelCritical;
}

ProcessPlacement PlacementFromEnvironment() {
  const auto env_int = [](const char* name, int fallback) {
    const char* v = std::getenv(name);
    int out = fallback;
    return v != nullptr && absl::SimpleAtoi(v, &out) ? out : fallback;
  };
  ProcessPlacement placement;
  placement.process_index = env_int("RANK", 0);
  placement.local_process_index = env_int("LOCAL_RANK", 0);
  placement.node_rank = env_int("GROUP_RANK", 0);
  placement.world_size = env_int("WORLD_SIZE", 1);
  return placement;
}

absl::Status ApplyScriptLogLevel(const ProcessLogPolicy& policy,
                                 const ProcessPlacement& placement) {
  const int start = ShouldLog(policy, placement) ? kLogLevelInfo : CurrentLogLevel();
  ASSIGN_OR_RETURN(const int level, ProcessLogLevel(policy, placement, start));
  return ApplyLogLevel(level);
}

}  // namespace loom::logging
