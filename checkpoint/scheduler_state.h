// scheduler.pt: an optim::LrScheduler's state dict (torch's scheduler.state_dict() layout,
// see optim/lr_scheduler.h) as a torch pickle, the file HF's Trainer saves beside
// optimizer.pt. Python's torch.load reads it and LambdaLR / ReduceLROnPlateau.load_state_dict
// accept it; loom reads back its own files (and Python's where LibTorch's unpickler can, see
// torch_pickle.h).
//
// Example:
//   RETURN_IF_ERROR(SaveSchedulerState(dir + "/scheduler.pt", *scheduler));
//   RETURN_IF_ERROR(LoadSchedulerState(dir + "/scheduler.pt", *scheduler));
#ifndef LOOM_CHECKPOINT_SCHEDULER_STATE_H_
#define LOOM_CHECKPOINT_SCHEDULER_STATE_H_

#include <string>

#include "absl/status/status.h"
#include "optim/lr_scheduler.h"

namespace loom::checkpoint {

absl::Status SaveSchedulerState(const std::string& path, const optim::LrScheduler& scheduler);
// Errors from the scheduler's LoadStateDict are prefixed with `path`.
absl::Status LoadSchedulerState(const std::string& path, optim::LrScheduler& scheduler);

}  // namespace loom::checkpoint

#endif  // LOOM_CHECKPOINT_SCHEDULER_STATE_H_
