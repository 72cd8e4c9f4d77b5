// The Trainer's checkpoint glue: which files an HF checkpoint folder holds and how each piece
// of training state goes in and out of them (transformers 4.41 Trainer._save_checkpoint; the
// file formats: checkpoint/README.md). The folder mechanics (staging, atomic commit, checksums, discovery,
// rotation) are checkpoint/folder's; the file formats are checkpoint/'s; the model files
// and scaler.pt are runtime/model_files.h's (shared with the Accelerator).
//
// A checkpoint folder written by WriteCheckpointFiles holds:
//   model.safetensors (save_safetensors, with {"format": "pt"}) or pytorch_model.bin,
//   config.json (when the model has one), training_args.bin, trainer_state.json,
//   and unless save_only_model: optimizer.pt, scheduler.pt, rng_state.pth, scaler.pt (with a
//   GradScaler: --fp16; torch's GradScaler.state_dict(), the file accelerate's save_state
//   writes — HF 4.38–4.41's Trainer no longer saves it, so its resumed fp16 runs restart the
//   scale),
//   plus loom's loom_resume.json, loom_epoch_rng_state.pth and, when a save falls inside an
//   open accumulation window (an epoch-end save), loom_pending_grads.safetensors (exact
//   continuation). checkpoint/folder adds loom_manifest.json when the folder is committed.
//
// Example:
//   CheckpointContents c{.model = &model, .optimizer = opt, ...};
//   RETURN_IF_ERROR(WriteCheckpointFiles(staged->path(), c));
//   ...
//   RETURN_IF_ERROR(runtime::LoadModelFiles(folder, &model));
#ifndef LOOM_TRAINER_CHECKPOINT_IO_H_
#define LOOM_TRAINER_CHECKPOINT_IO_H_

#include <torch/optim/optimizer.h>

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "args/training_args.pb.h"
#include "optim/lr_scheduler.h"
#include "precision/grad_scaler.h"
#include "rng/rng_state.h"
#include "runtime/model_files.h"
#include "trainer/model.h"
#include "trainer/resume_position.h"
#include "trainer/trainer_state.h"

namespace loom::trainer {

using runtime::kConfigFile;
using runtime::kTrainingArgsFile;
using runtime::kScalerFile;
inline constexpr char kTrainerStateFile[] = "trainer_state.json";
inline constexpr char kOptimizerFile[] = "optimizer.pt";
inline constexpr char kSchedulerFile[] = "scheduler.pt";
inline constexpr char kRngStateFile[] = "rng_state.pth";
inline constexpr char kEpochStartRngFile[] = "loom_epoch_rng_state.pth";
inline constexpr char kPendingGradsFile[] = "loom_pending_grads.safetensors";

// The files each process of a run writes for itself: rank r of a multi-process run uses
// rng_state_<r>.pth (HF's name), loom_epoch_rng_state_<r>.pth and
// loom_pending_grads_<r>.safetensors; a single process uses the plain names above.
struct ProcessFileNames {
  std::string rng;
  std::string epoch_start_rng;
  std::string pending_grads;
};
ProcessFileNames ProcessFiles(int rank, int world_size);

struct CheckpointContents {
  // The folder's shared files (weights, optimizer, scheduler, state, args, position) are
  // written only when true (the saving rank); every rank writes its own process files.
  bool write_shared = true;
  int rank = 0;
  int world_size = 1;
  const Model* model = nullptr;
  // false: config.json and training_args.bin without the weights file (ZeRO-3 without
  // stage3_gather_16bit_weights_on_model_save).
  bool model_weights = true;
  const torch::optim::Optimizer* optimizer = nullptr;
  const optim::LrScheduler* scheduler = nullptr;
  const precision::GradScaler* grad_scaler = nullptr;  // scaler.pt when set
  const TrainerState* state = nullptr;
  const args::TrainingArguments* args = nullptr;
  const rng::RngState* rng = nullptr;
  const rng::RngState* epoch_start_rng = nullptr;
  const ResumePosition* position = nullptr;
  // Gradients accumulated but not yet applied (parameter name -> grad); empty when none.
  std::vector<std::pair<std::string, at::Tensor>> pending_grads;
};

// Everything of a checkpoint into `dir` (a staged folder).
absl::Status WriteCheckpointFiles(const std::string& dir, const CheckpointContents& contents);

absl::Status LoadOptimizerAndSchedulerFiles(const std::string& dir,
                                            torch::optim::Optimizer* optimizer,
                                            optim::LrScheduler* scheduler);
// How many processes wrote `dir`: the number of rng_state_<r>.pth files (r = 0, 1, ...), 1
// for a lone rng_state.pth, 0 when there is none (e.g. --save_only_model).
int SavedWorldSize(const std::string& dir);
// scheduler.pt alone (the optimizer state came from elsewhere, e.g. ZeRO's files).
absl::Status LoadSchedulerFile(const std::string& dir, optim::LrScheduler* scheduler);
// Puts this process's pending-gradients file (when present) back into the parameters' grads.
absl::Status LoadPendingGrads(const std::string& dir, Model* model, int rank = 0,
                              int world_size = 1);

}  // namespace loom::trainer

#endif  // LOOM_TRAINER_CHECKPOINT_IO_H_
