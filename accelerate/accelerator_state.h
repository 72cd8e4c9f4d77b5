// AcceleratorState: what an Accelerator and the objects it prepared share (accelerate's
// AcceleratorState + GradientState): the process's place in the run, the device and
// precision, the one sharding strategy, the micro-step bookkeeping and the loaders' end.
// Internal to //accelerate; tests read it through Accelerator::state().
#ifndef LOOM_ACCELERATE_ACCELERATOR_STATE_H_
#define LOOM_ACCELERATE_ACCELERATOR_STATE_H_

#include <torch/optim/optimizer.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "args/training_args.pb.h"
#include "modeling/model.h"
#include "optim/lr_scheduler.h"
#include "precision/training_precision.h"
#include "rng/host_generator.h"
#include "sharding/zero/deepspeed_plan.h"
#include "sharding/strategy.h"
#include "sharding/strategy_registry.h"
#include "runtime/parallel_context.h"

namespace loom::accelerate {

struct AcceleratorState {
  // The TrainingArguments the shared pieces are configured from (ddp_*, precision flags,
  // gradient_accumulation_steps, accelerator_config's split/even batches).
  args::TrainingArguments args;
  runtime::ParallelContext parallel;
  // How the ranks split the data (the strategy factory's answer): loaders are sharded over the
  // data-parallel replicas, and GatherForMetrics counts each replica once.
  sharding::DataParallelTopology topology;
  // A program's own strategy factory (AcceleratorOptions::strategy_factory); null: the
  // registered one the strategy flags select.
  std::shared_ptr<const sharding::StrategyFactory> strategy_factory;
  // The DeepSpeed plan of a DeepSpeed config (runtime::PlanDeepSpeedForModel), once prepared.
  std::optional<sharding::DeepSpeedPlan> deepspeed;
  at::Device device{at::kCPU};
  std::string mixed_precision = "no";
  std::unique_ptr<precision::TrainingPrecision> precision;
  rng::GeneratorSet generators;
  int gradient_accumulation_steps = 1;
  bool split_batches = false;
  bool even_batches = true;
  // The per-process batch size of the first prepared loader (DeepSpeed's
  // train_micro_batch_size_per_gpu "auto"), 0 before one.
  int64_t loader_batch_size = 0;
  // The norm a step clips to when the loop did not clip (a DeepSpeed config's
  // gradient_clipping, which its engine applies by itself); 0: none.
  double auto_clip = 0;

  // Prepared objects (one model and one optimizer: the strategy's pair). The wrappers hold this
  // state; it holds the originals, and the wrappers only weakly (no reference cycle).
  std::shared_ptr<modeling::Model> model;               // the original module
  std::weak_ptr<modeling::Model> prepared_model;        // its wrapper
  std::shared_ptr<torch::optim::Optimizer> optimizer;   // the original optimizer
  std::weak_ptr<torch::optim::Optimizer> prepared_optimizer;
  std::vector<std::shared_ptr<optim::LrScheduler>> schedulers;  // the originals, in order
  std::unique_ptr<sharding::ShardingStrategy> strategy;

  // GradientState.
  bool sync_gradients = true;
  int64_t step = 0;                 // micro-steps counted by Accumulate scopes
  bool end_of_dataloader = false;   // the last batch of a prepared loader was handed out
  int64_t remainder = -1;           // its real samples beyond full rounds (-1: unknown)
  bool clipped_this_window = false;
  bool step_was_skipped = false;
  // Gradients of a window that has not synchronized yet, kept aside between micro-steps.
  std::vector<at::Tensor> stashed_grads;
  bool grads_stashed = false;
  int64_t communicating_backwards = 0;  // backwards that reduced gradients (tests count them)
};

}  // namespace loom::accelerate

#endif  // LOOM_ACCELERATE_ACCELERATOR_STATE_H_
