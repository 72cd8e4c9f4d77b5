// FullShardRunner: FSDP full_shard's (ZeRO-3's) life cycle of a model's wrap units, as a
// modeling::UnitRunner (issue 14 groundwork; no strategy uses it yet).
//
// Contract:
//   - Create(units, pg): every unit's parameters become a FlatParamUnit (flat_param.h) sharded
//     over the group (null: one process) and are released: between uses each rank holds only
//     its shards.
//   - Run(unit, forward) (the model calls it per unit): the unit is gathered, forward() runs,
//     the unit is released again (reshard after forward); when the result requires grad, a
//     hook on it gathers the unit again before the unit's backward (FSDP's pre-backward), and
//     hooks after each parameter's gradient accumulation, once all of the unit's parameters
//     have theirs, reduce-scatter the unit's flat gradient (averaged over ranks) into
//     shard_grad(u) (accumulated across backward passes), drop the full gradients and release
//     the unit (FSDP's post-backward). A unit that is not one of `units` runs as it is.
//   - The caller owns `units`' modules; the runner must outlive every forward and backward run
//     through it.
//
// Example:
//   ASSIGN_OR_RETURN(auto units, modeling::FindUnits(model, model.UnitClassNames()));
//   ASSIGN_OR_RETURN(auto runner, FullShardRunner::Create(units, &pg));
//   RETURN_IF_ERROR(model.SetUnitRunner(runner.get()));
#ifndef LOOM_SHARDING_FULL_SHARD_RUNNER_H_
#define LOOM_SHARDING_FULL_SHARD_RUNNER_H_

#include <ATen/ATen.h>

#include <map>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "distributed/grad_ready_hooks.h"
#include "distributed/process_group.h"
#include "modeling/unit_runner.h"
#include "sharding/flat_param.h"

namespace loom::sharding {

class FullShardRunner : public modeling::UnitRunner {
 public:
  static absl::StatusOr<std::unique_ptr<FullShardRunner>> Create(
      const std::vector<modeling::FoundUnit>& units, distributed::ProcessGroup* pg);
  ~FullShardRunner() override;

  at::Tensor Run(torch::nn::Module& unit, const std::function<at::Tensor()>& forward) override;

  size_t unit_count() const { return units_.size(); }
  FlatParamUnit& unit(size_t u) { return *units_[u].flat; }
  // Unit u's averaged gradient shard (zeros until a backward reached it).
  at::Tensor& shard_grad(size_t u) { return units_[u].shard_grad; }
  // The first error a hook met (hooks cannot return one); OK otherwise.
  const absl::Status& status() const { return status_; }

 private:
  struct Unit {
    torch::nn::Module* module = nullptr;
    std::unique_ptr<FlatParamUnit> flat;
    at::Tensor shard_grad;
    int64_t pending = 0;  // parameters whose gradient has not arrived in this backward
  };

  FullShardRunner() = default;
  void OnGradReady(size_t u);
  void Fail(const absl::Status& s) {
    if (status_.ok()) status_ = s;
  }

  distributed::ProcessGroup* pg_ = nullptr;
  std::vector<Unit> units_;
  std::map<const torch::nn::Module*, size_t> index_;
  absl::Status status_;
  distributed::GradReadyHooks hooks_;  // declared last: its hooks go first
};

}  // namespace loom::sharding

#endif  // LOOM_SHARDING_FULL_SHARD_RUNNER_H_
