// The conformance suite every ShardingStrategy registers into (tensorstore's pattern).
// testonly.
//
// A strategy is described by a ConformanceCase: the TrainingArguments that make
// CreateStrategy choose it (e.g. a --deepspeed config), the world size, and the Name() it must
// report. RegisterStrategyConformanceTests(c) registers, under the test suite
// "StrategyConformance/<c.name>", tests that run real ranks (forked processes over Gloo on
// 127.0.0.1) through the strategy and compare them with an unsharded reference loop written
// independently in the suite (full global batch, torch's clip_grad_norm_, torch::optim::AdamW):
//   - MatchesUnshardedGa{1,2}Clip{On,Off}: per optimizer step the loss (mean over ranks), the
//     gradient norm ClipGradients returns, and at the end every parameter, equal to the
//     reference within 1e-6; the frozen parameter untouched; Name() as declared.
//   - StateBytesAfterAStep: after one step (before ZeroGrad) every rank's StateBytes() equals
//     the case's closed form (expected_bytes), and every optimizer-state element is held by
//     some rank.
//   - RefusesMissingPieces: CreateStrategy without a model / optimizer / precision fails with
//     InvalidArgument (checked in one process).
//   - ResumesFromItsCheckpoint: half the steps (accumulation 1, clipping on), a checkpoint as
//     the Trainer writes one (the weights and, unless the strategy owns it, the optimizer state
//     from rank 0; the strategy's SaveState on every rank), everything rebuilt from scratch and
//     loaded back (LoadState), the other half: losses, norms and weights as the reference's.
// Bad configs are the plan's (deepspeed_plan_test) and CreateStrategy's (create_strategy_test).
//
// Example (sharding/replicated_conformance_test.cc):
//   [[maybe_unused]] static const bool registered = [] {
//     RegisterStrategyConformanceTests({.name = "DDP", .world_size = 2, .strategy_name = "DDP",
//                                       .expected_bytes = ReplicatedBytes});
//     return true;
//   }();
#ifndef LOOM_SHARDING_STRATEGY_CONFORMANCE_H_
#define LOOM_SHARDING_STRATEGY_CONFORMANCE_H_

#include <functional>
#include <string>
#include <vector>

#include "args/training_args.pb.h"
#include "sharding/strategy.h"

namespace loom::sharding::testing {

// The suite's model as StateBytes formulas see it: fp32, one optimizer group (AdamW) holding
// every trainable parameter; two Linear layers (its wrap units), a trainable and a frozen
// parameter of its own.
struct SuiteModel {
  int64_t all_numel = 0;        // every parameter, the frozen one too
  int64_t trainable_numel = 0;  // those the optimizer steps
  int64_t trainable_tensors = 0;
  // For parameter sharding: the trainable elements of each wrap unit (the model's two Linear
  // layers, in order), of the model's own trainable parameter, and of the frozen one.
  std::vector<int64_t> unit_numels;
  int64_t root_trainable_numel = 0;
  int64_t frozen_numel = 0;
  int world_size = 1;
  int rank = 0;
};

struct ConformanceCase {
  std::string name;           // test-name part: letters, digits, '_'
  int world_size = 1;         // ranks forked for the case
  std::string strategy_name;  // what Name() must return
  // Sets what selects the strategy (e.g. args.set_deepspeed(...)); may be empty.
  std::function<void(args::TrainingArguments&)> configure;
  // What StateBytes() must report after one optimizer step, before ZeroGrad. AdamW's state
  // counts two moments per element and a float32 step per optimizer tensor (its state dict).
  std::function<ModelStateBytes(const SuiteModel&)> expected_bytes;
};

void RegisterStrategyConformanceTests(const ConformanceCase& c);

}  // namespace loom::sharding::testing

#endif  // LOOM_SHARDING_STRATEGY_CONFORMANCE_H_
