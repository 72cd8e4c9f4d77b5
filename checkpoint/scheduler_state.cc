#include "checkpoint/scheduler_state.h"

#include "base/status_macros.h"
#include "checkpoint/torch_pickle.h"

namespace loom::checkpoint {

absl::Status SaveSchedulerState(const std::string& path, const optim::LrScheduler& scheduler) {
  return SavePickle(path, scheduler.StateDict());
}

absl::Status LoadSchedulerState(const std::string& path, optim::LrScheduler& scheduler) {
  ASSIGN_OR_RETURN(const c10::IValue state, LoadPickle(path));
  RETURN_IF_ERROR_CTX(scheduler.LoadStateDict(state), path);
  return absl::OkStatus();
}

}  // namespace loom::checkpoint
