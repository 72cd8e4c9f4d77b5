// ResumeFromArgs: the output-directory check HF's example scripts (run_glue.py & co.) run
// before training, so a rerun of the same command continues where it stopped:
//   - --resume_from_checkpoint PATH: resume from PATH;
//   - else, with --do_train, an existing --output_dir and no --overwrite_output_dir: the newest
//     complete checkpoint-<N> there is resumed ("Checkpoint detected, resuming training at
//     ..."); an output dir that is not empty but has no checkpoint is an error
//     ("Output directory (...) already exists and is not empty. Use --overwrite_output_dir to
//     overcome.");
//   - else: a fresh start (std::nullopt).
//   It only reads the output dir (every rank of a launched run calls it): a checkpoint found
//   there comes back as ResumeFrom::Latest(), so Train() cleans up what an interrupted save
//   left (on the saving rank) and then resumes the newest complete checkpoint; the leftovers
//   of an interrupted save alone do not make the directory "not empty".
//
// Example:
//   ASSIGN_OR_RETURN(std::optional<ResumeFrom> resume, ResumeFromArgs(args));
//   ASSIGN_OR_RETURN(TrainOutput out, trainer->Train(resume));
#ifndef LOOM_EXAMPLES_SCRIPT_RESUME_H_
#define LOOM_EXAMPLES_SCRIPT_RESUME_H_

#include <optional>

#include "absl/status/statusor.h"
#include "args/training_args.pb.h"
#include "trainer/resume_position.h"

namespace loom::examples {

absl::StatusOr<std::optional<trainer::ResumeFrom>> ResumeFromArgs(
    const args::TrainingArguments& args);

}  // namespace loom::examples

#endif  // LOOM_EXAMPLES_SCRIPT_RESUME_H_
