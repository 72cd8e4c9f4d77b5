// FullParametersScope: every parameter of the model whole on this rank for as long as the scope
// lives (the strategy's BeginFullParameters / EndFullParameters), for saving or loading the
// model's weights — the one place both front ends gather sharded parameters.
//
// Contract:
//   - Begin(strategy) gathers (a collective under parameter sharding: every rank calls it, in
//     the same order); a null strategy means the parameters are whole already.
//   - End(work, write_back) releases once: with write_back only when `work` is OK (weights put
//     into the parameters meanwhile become the strategy's shards). It returns the first error:
//     `work`'s, else the release's.
//   - A scope destroyed without End (an early return, an exception) releases without write-back
//     and logs a failed release: the parameters are never left gathered.
//   - WithFullParameters(strategy, write_back, fn) is Begin, fn, End; fn's exceptions are caught
//     (c10::Error and std::exception become Internal naming `what`).
//
// Example:
//   RETURN_IF_ERROR(WithFullParameters(strategy, /*write_back=*/true, "loading the weights",
//                                      [&] { return LoadModelFiles(dir, model); }));
#ifndef LOOM_RUNTIME_FULL_PARAMETERS_H_
#define LOOM_RUNTIME_FULL_PARAMETERS_H_

#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "sharding/strategy.h"

namespace loom::runtime {

class FullParametersScope {
 public:
  static absl::StatusOr<FullParametersScope> Begin(sharding::ShardingStrategy* strategy);
  FullParametersScope(FullParametersScope&& other) noexcept;
  FullParametersScope& operator=(FullParametersScope&&) = delete;
  FullParametersScope(const FullParametersScope&) = delete;
  ~FullParametersScope();

  absl::Status End(const absl::Status& work, bool write_back);

 private:
  explicit FullParametersScope(sharding::ShardingStrategy* strategy) : strategy_(strategy) {}
  sharding::ShardingStrategy* strategy_;  // null once released (or for whole parameters)
};

absl::Status WithFullParameters(sharding::ShardingStrategy* strategy, bool write_back,
                                const std::string& what, const std::function<absl::Status()>& fn);

}  // namespace loom::runtime

#endif  // LOOM_RUNTIME_FULL_PARAMETERS_H_
