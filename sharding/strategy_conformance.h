// The conformance suite every ShardingStrategy registers into (tensorstore's pattern; issue 13).
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
//   - StateBytesHoldsTheModel: after a step, the ranks' StateBytes() are positive and each
//     part on a rank is at most the unsharded one (no strategy holds more than DDP).
//   - RefusesMissingPieces: CreateStrategy without a model / optimizer / precision fails with
//     InvalidArgument (checked in one process).
// Checkpoint round trips, resume and bad configs join the suite with the strategies' save/load.
//
// Example (sharding/replicated_conformance_test.cc):
//   [[maybe_unused]] static const bool registered = [] {
//     RegisterStrategyConformanceTests({.name = "DDP", .world_size = 2, .strategy_name = "DDP"});
//     return true;
//   }();
#ifndef LOOM_SHARDING_STRATEGY_CONFORMANCE_H_
#define LOOM_SHARDING_STRATEGY_CONFORMANCE_H_

#include <functional>
#include <string>

#include "args/training_args.pb.h"

namespace loom::sharding::testing {

struct ConformanceCase {
  std::string name;           // test-name part: letters, digits, '_'
  int world_size = 1;         // ranks forked for the case
  std::string strategy_name;  // what Name() must return
  // Sets what selects the strategy (e.g. args.set_deepspeed(...)); may be empty.
  std::function<void(args::TrainingArguments&)> configure;
};

void RegisterStrategyConformanceTests(const ConformanceCase& c);

}  // namespace loom::sharding::testing

#endif  // LOOM_SHARDING_STRATEGY_CONFORMANCE_H_
