// Learning-rate schedulers with torch 1.13 semantics and HF's schedule types
// (transformers 4.38–4.41 get_scheduler / Trainer.create_scheduler / get_warmup_steps;
// TrainingArguments `lr_scheduler_type`, `lr_scheduler_kwargs`, `warmup_*`: linear by default,
// warmup_steps overrides warmup_ratio, the first step runs with lr 0).
//
// LambdaLrScheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, λ), last_epoch = -1:
//   construction records base_lrs = each group's current lr (torch reuses a group's
//   'initial_lr' left by an earlier scheduler; LibTorch groups have no such entry, so create
//   one scheduler per optimizer) and sets lr = base_lr * λ(0)
//   (last_epoch 0, step count 1); Step() increments last_epoch and sets
//   lr = base_lr * λ(last_epoch). LastLr() = the lrs set last (get_last_lr()).
// ReduceLrOnPlateau = torch.optim.lr_scheduler.ReduceLROnPlateau: Step() does nothing;
//   StepOnMetric(m) after each evaluation: m better than best (mode min/max, threshold
//   rel/abs) resets the bad-epoch count, else it grows; during cooldown bad epochs are not
//   counted; more than `patience` bad epochs multiply every group's lr by `factor` (floored
//   at its min_lr, applied only when the change exceeds eps) and start the cooldown.
//   LastLr() = the optimizer's current group lrs (HF reads param_groups[0]["lr"] for it;
//   torch 1.13's class has no get_last_lr()).
// StateDict() is torch's scheduler.state_dict() as an IValue dict with the same keys and
// order (what HF saves as scheduler.pt); LoadStateDict() accepts it back (also with ints where
// Python wrote ints). Like torch, loading does not touch the optimizer's lrs (they come back
// with the optimizer's own state).
//
// CreateScheduler(args, optimizer, num_training_steps) = HF's get_scheduler with
//   num_warmup_steps = args::GetWarmupSteps(args, num_training_steps) and
//   scheduler_specific_kwargs = args.lr_scheduler_kwargs (a JSON object):
//     linear                 (no kwargs)
//     cosine                 num_cycles = 0.5
//     cosine_with_restarts   num_cycles = 1
//     polynomial             lr_end = 1e-7, power = 1.0; lr_init = optimizer defaults' lr,
//                            which must be > lr_end
//     constant, constant_with_warmup, inverse_sqrt   HF ignores kwargs (warning when given);
//                            inverse_sqrt's timescale = warmup, or 10000 without warmup
//     reduce_lr_on_plateau   mode = "min", factor = 0.1 (< 1), patience = 10,
//                            threshold = 1e-4, threshold_mode = "rel", cooldown = 0,
//                            min_lr = 0 (number or one per group), eps = 1e-8, verbose
//     cosine_with_min_lr     num_cycles = 0.5, exactly one of min_lr (divided by the
//                            defaults' lr) or min_lr_rate
//     warmup_stable_decay    num_stable_steps, num_decay_steps (required), min_lr_ratio = 0,
//                            num_cycles = 0.5
//   "last_epoch" is accepted by the λ schedules when it is -1 (torch's default).
// Errors (InvalidArgument, naming the flag): unknown --lr_scheduler_type (the message lists
// the types); --lr_scheduler_kwargs that is not a JSON object, has a key the type does not
// take, a value of the wrong type, or breaks a rule above; a null optimizer.
// Deviation: polynomial with num_training_steps == warmup fails here; Python fails with
// ZeroDivisionError when training reaches that step.
//
// Example:
//   ASSIGN_OR_RETURN(std::unique_ptr<LrScheduler> scheduler,
//                    CreateScheduler(args, optimizer.get(), max_steps));
//   ... optimizer->step(); if (!scheduler->steps_on_metric()) scheduler->Step(); ...
//   ... after evaluation: if (scheduler->steps_on_metric()) scheduler->StepOnMetric(eval_loss);
#ifndef LOOM_OPTIM_LR_SCHEDULER_H_
#define LOOM_OPTIM_LR_SCHEDULER_H_

#include <ATen/core/ivalue.h>
#include <torch/optim/optimizer.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "args/training_args.pb.h"

namespace loom::optim {

class LrScheduler {
 public:
  virtual ~LrScheduler();
  // Once per optimizer step, after optimizer.step() (no-op for reduce_lr_on_plateau).
  virtual void Step() = 0;
  // reduce_lr_on_plateau only: after each evaluation. Other schedulers ignore it.
  virtual void StepOnMetric(double metric);
  virtual bool steps_on_metric() const;
  // Per param group, like get_last_lr().
  virtual std::vector<double> LastLr() const = 0;
  // torch's last_epoch: the number of Step() / StepOnMetric() calls so far.
  virtual int64_t last_epoch() const = 0;
  // torch's state_dict() / load_state_dict(); see the header comment.
  virtual c10::IValue StateDict() const = 0;
  virtual absl::Status LoadStateDict(const c10::IValue& state) = 0;
};

// The group lrs of `optimizer`, in group order.
std::vector<double> GroupLrs(const torch::optim::Optimizer& optimizer);

class LambdaLrScheduler : public LrScheduler {
 public:
  using Lambda = std::function<double(int64_t step)>;
  // `lambda_is_callable_object`: whether Python's λ is an object (functools.partial, as in
  // HF's schedules; saved as {}) or a plain function (HF's constant schedule; saved as None).
  LambdaLrScheduler(torch::optim::Optimizer* optimizer, Lambda lambda,
                    bool lambda_is_callable_object = true);

  void Step() override;
  std::vector<double> LastLr() const override { return last_lr_; }
  int64_t last_epoch() const override { return last_epoch_; }
  c10::IValue StateDict() const override;
  absl::Status LoadStateDict(const c10::IValue& state) override;

  const std::vector<double>& base_lrs() const { return base_lrs_; }
  int64_t step_count() const { return step_count_; }  // torch's _step_count
  double Factor(int64_t step) const { return lambda_(step); }

 private:
  void Apply();  // lr = base_lr * λ(last_epoch) for every group

  torch::optim::Optimizer* optimizer_;
  Lambda lambda_;
  bool lambda_is_callable_object_;
  std::vector<double> base_lrs_;
  std::vector<double> last_lr_;
  int64_t last_epoch_ = -1;
  int64_t step_count_ = 0;
};

struct PlateauOptions {
  std::string mode = "min";  // "min" or "max"
  double factor = 0.1;       // < 1
  int64_t patience = 10;
  double threshold = 1e-4;
  std::string threshold_mode = "rel";  // "rel" or "abs"
  int64_t cooldown = 0;
  std::vector<double> min_lrs;  // one per group; empty = 0 for every group
  // The scalar min_lr it was given (torch >= 2.x keeps it as default_min_lr; None, here
  // nullopt, when min_lr was a list).
  std::optional<double> default_min_lr = 0.0;
  double eps = 1e-8;
  bool verbose = false;  // kept for the state dict; loom does not print
};

class ReduceLrOnPlateau : public LrScheduler {
 public:
  // InvalidArgument for a bad mode / threshold_mode, factor >= 1, or a min_lrs list whose
  // length is not the number of param groups.
  static absl::StatusOr<std::unique_ptr<ReduceLrOnPlateau>> Create(
      torch::optim::Optimizer* optimizer, PlateauOptions options);

  void Step() override {}
  void StepOnMetric(double metric) override;
  bool steps_on_metric() const override { return true; }
  std::vector<double> LastLr() const override { return GroupLrs(*optimizer_); }
  int64_t last_epoch() const override { return last_epoch_; }
  c10::IValue StateDict() const override;
  absl::Status LoadStateDict(const c10::IValue& state) override;

  const PlateauOptions& options() const { return options_; }
  double best() const { return best_; }
  int64_t num_bad_epochs() const { return num_bad_epochs_; }
  int64_t cooldown_counter() const { return cooldown_counter_; }

 private:
  ReduceLrOnPlateau(torch::optim::Optimizer* optimizer, PlateauOptions options);
  bool IsBetter(double a, double best) const;
  double ModeWorse() const;
  c10::IValue StateDict211() const;
  c10::IValue StateDict113() const;

  torch::optim::Optimizer* optimizer_;
  PlateauOptions options_;
  double best_;
  int64_t num_bad_epochs_ = 0;
  int64_t cooldown_counter_ = 0;
  int64_t last_epoch_ = 0;
  bool stepped_ = false;  // torch sets _last_lr on the first step only
  std::vector<double> last_lr_;
};

// The --lr_scheduler_type values, in HF's SchedulerType order.
const std::vector<std::string>& SchedulerTypeNames();

// `warnings` receives notes about ignored kwargs (logged when null).
absl::StatusOr<std::unique_ptr<LrScheduler>> CreateScheduler(
    const args::TrainingArguments& args, torch::optim::Optimizer* optimizer,
    int64_t num_training_steps, std::vector<std::string>* warnings = nullptr);

// transformers.get_scheduler(name, optimizer, num_warmup_steps, num_training_steps): the
// schedule --lr_scheduler_type `name` with --warmup_steps num_warmup_steps gives (what custom
// loops call, e.g. the Accelerate tutorial's get_scheduler("linear", ...)).
absl::StatusOr<std::unique_ptr<LrScheduler>> GetScheduler(const std::string& name,
                                                          torch::optim::Optimizer* optimizer,
                                                          int64_t num_warmup_steps,
                                                          int64_t num_training_steps);

}  // namespace loom::optim

#endif  // LOOM_OPTIM_LR_SCHEDULER_H_
