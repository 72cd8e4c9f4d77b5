#include "runtime/full_parameters.h"

#include "base/status_macros.h"
#include "base/torch_status.h"
#include "glog/logging.h"

namespace loom::runtime {

absl::StatusOr<FullParametersScope> FullParametersScope::Begin(
    sharding::ShardingStrategy* strategy) {
  if (strategy != nullptr) {
    RETURN_IF_ERROR_CTX(strategy->BeginFullParameters(), "gathering the sharded parameters");
  }
  return FullParametersScope(strategy);
}

FullParametersScope::FullParametersScope(FullParametersScope&& other) noexcept
    : strategy_(other.strategy_) {
  other.strategy_ = nullptr;
}

FullParametersScope::~FullParametersScope() {
  if (strategy_ == nullptr) return;
  const absl::Status released = strategy_->EndFullParameters(/*write_back=*/false);
  LOG_IF(ERROR, !released.ok()) << "releasing the gathered parameters: " << released.message();
}

absl::Status FullParametersScope::End(const absl::Status& work, bool write_back) {
  sharding::ShardingStrategy* strategy = strategy_;
  strategy_ = nullptr;
  const absl::Status released = strategy != nullptr
                                    ? strategy->EndFullParameters(write_back && work.ok())
                                    : absl::OkStatus();
  RETURN_IF_ERROR(work);
  return released;
}

absl::Status WithFullParameters(sharding::ShardingStrategy* strategy, bool write_back,
                                const std::string& what, const std::function<absl::Status()>& fn) {
  ASSIGN_OR_RETURN(FullParametersScope scope, FullParametersScope::Begin(strategy));
  absl::Status work;
  try {
    work = fn();
  } catch (const std::exception& e) {
    work = base::TorchErrorToStatus(e, absl::StatusCode::kInternal, what);
  }
  return scope.End(work, write_back);
}

}  // namespace loom::runtime
