// ResumePosition: what loom adds to an HF checkpoint folder so that a resumed run continues
// bit for bit (exact continuation); HF's own resume recomputes the data position
// from global_step (which is wrong when accumulation windows straddle epochs) and restarts
// the running loss at zero. Stored as loom_resume.json next to trainer_state.json (HF tools
// ignore the extra file; trainer_state.json keeps HF's schema so HF can load it).
//
// Contract: ToJson()/FromJson() round-trip every field exactly (doubles are written with
// shortest round-trip digits; tr_loss is the float32 bits HF's running-loss tensor held).
//
// Example:
//   ResumePosition p{.epoch = 1, .micro_batches_in_epoch = 12, .total_batched_samples = 52};
//   RETURN_IF_ERROR(base::WriteFileAtomically(dir + "/" + kResumePositionFile, p.ToJson()));
#ifndef LOOM_TRAINER_RESUME_POSITION_H_
#define LOOM_TRAINER_RESUME_POSITION_H_

#include <cstdint>
#include <string>
#include <utility>

#include "absl/status/statusor.h"

namespace loom::trainer {

inline constexpr char kResumePositionFile[] = "loom_resume.json";

// Where Train() resumes from (HF train(resume_from_checkpoint=...)): the newest complete
// checkpoint-<N> in output_dir (HF's True), or a given folder.
struct ResumeFrom {
  static ResumeFrom Latest() {
    ResumeFrom r;
    r.latest = true;
    return r;
  }
  static ResumeFrom Path(std::string path) {
    ResumeFrom r;
    r.path = std::move(path);
    return r;
  }
  bool latest = false;
  std::string path;
};

struct ResumePosition {
  // The epoch in progress and how many of its micro-batches were consumed. With
  // epoch_finished, the epoch ended (on_epoch_end ran) and training resumes at epoch + 1.
  int64_t epoch = 0;
  int64_t micro_batches_in_epoch = 0;
  bool epoch_finished = false;
  // HF's micro-batch counter across epochs (decides when the optimizer steps).
  int64_t total_batched_samples = 0;
  // The loss bookkeeping of HF's loop: the running float32 loss since the last log, the sum of
  // logged losses, the step of the last log and the FLOPs not yet added to total_flos.
  float tr_loss = 0;
  double total_loss_scalar = 0;
  int64_t globalstep_last_logged = 0;
  double current_flos = 0;

  std::string ToJson() const;
  static absl::StatusOr<ResumePosition> FromJson(const std::string& text);
};

}  // namespace loom::trainer

#endif  // LOOM_TRAINER_RESUME_POSITION_H_
