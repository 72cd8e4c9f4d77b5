#include "logging/metrics_sink.h"

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace loom::logging {

MetricsSink::~MetricsSink() = default;

double WallTimeSeconds() { return absl::ToDoubleSeconds(absl::Now() - absl::UnixEpoch()); }

}  // namespace loom::logging
