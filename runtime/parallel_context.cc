#include "runtime/parallel_context.h"

#include <random>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "distributed/collectives.h"
#include "distributed/distributed_env.h"

namespace loom::runtime {

absl::StatusOr<ParallelContext> ParallelContext::Create(std::optional<distributed::ProcessGroup> pg,
                                                        const args::TrainingArguments& args) {
  ASSIGN_OR_RETURN(distributed::DistributedEnv env, distributed::DistributedEnvFromProcess(),
                   "reading the launcher's environment (RANK, WORLD_SIZE, ...)");
  ParallelContext context;
  if (!pg.has_value() && env.is_distributed()) {
    ASSIGN_OR_RETURN(
        pg, distributed::CreateProcessGroup(env, distributed::ProcessGroupOptionsFromArgs(args)));
  }
  if (pg.has_value()) {
    context.rank_ = pg->rank();
    context.world_size_ = pg->world_size();
    const bool env_matches = env.rank == pg->rank() && env.world_size == pg->world_size();
    context.local_rank_ = env_matches ? env.local_rank : pg->rank();
    context.node_rank_ = env_matches ? env.group_rank : 0;
    context.pg_ = std::move(pg);
  }
  if (context.pg_) {
    // Several contexts may share one group (and its store): key their entries apart.
    std::random_device random;
    std::string token = absl::StrCat(absl::Hex((static_cast<uint64_t>(random()) << 32) | random()));
    RETURN_IF_ERROR(context.BroadcastString(token));
    context.store_prefix_ = absl::StrCat("loom/", token, "/");
  }
  return context;
}

bool ParallelContext::ShouldSave(const args::TrainingArguments& args) const {
  return args.save_on_each_node() ? is_local_zero() : is_world_zero();
}

logging::ProcessPlacement ParallelContext::Placement() const {
  logging::ProcessPlacement placement;
  placement.process_index = rank_;
  placement.local_process_index = local_rank_;
  placement.node_rank = node_rank_;
  placement.world_size = world_size_;
  return placement;
}

absl::Status ParallelContext::Barrier() {
  if (!pg_) return absl::OkStatus();
  return distributed::Barrier(*pg_);
}

absl::Status ParallelContext::BroadcastString(std::string& value) {
  if (!pg_) return absl::OkStatus();
  return distributed::BroadcastString(*pg_, value, 0);
}

absl::Status ParallelContext::ShareFromSaver(const args::TrainingArguments& args,
                                             std::string& value) {
  if (!pg_) return absl::OkStatus();
  if (!args.save_on_each_node()) return BroadcastString(value);
  const std::string key =
      absl::StrCat(store_prefix_, "save_on_each_node/", node_rank_, "/", shares_++);
  try {
    if (is_local_zero()) {
      pg_->store().set(key, std::vector<uint8_t>(value.begin(), value.end()));
    } else {
      const std::vector<uint8_t> bytes = pg_->store().get(key);
      value.assign(bytes.begin(), bytes.end());
    }
  } catch (const std::exception& e) {
    return distributed::CollectiveFailure(e, "sharing the checkpoint folder (save_on_each_node)",
                                          *pg_);
  }
  return absl::OkStatus();
}

absl::StatusOr<float> ParallelContext::MeanFloat(float value) {
  if (!pg_) return value;
  ASSIGN_OR_RETURN(std::vector<at::Tensor> all,
                   distributed::AllGather(*pg_, at::full({1}, value, at::kFloat)));
  return at::cat(all).mean().item<float>();
}

absl::StatusOr<std::vector<at::Tensor>> ParallelContext::GatherRows(const at::Tensor& tensor) {
  if (!pg_) return std::vector<at::Tensor>{tensor};
  return distributed::AllGatherVariableLength(*pg_, tensor.contiguous());
}

absl::StatusOr<at::Tensor> ParallelContext::PadAcrossProcesses(const at::Tensor& t, int64_t dim,
                                                               double pad_index, bool pad_first) {
  if (!pg_ || t.dim() == 0) return t;
  if (dim < 0) dim += t.dim();
  if (dim < 0 || dim >= t.dim()) {
    return absl::InvalidArgumentError(absl::StrCat("PadAcrossProcesses: dim ", dim,
                                                   " is outside a tensor of ", t.dim(), " dims"));
  }
  ASSIGN_OR_RETURN(std::vector<at::Tensor> sizes,
                   GatherRows(at::full({1}, t.size(dim), at::kLong)), "pad_across_processes");
  int64_t longest = 0;
  for (const at::Tensor& l : sizes) longest = std::max(longest, l.item<int64_t>());
  if (t.size(dim) == longest) return t;
  std::vector<int64_t> shape = t.sizes().vec();
  shape[static_cast<size_t>(dim)] = longest;
  at::Tensor padded = at::full(shape, pad_index, t.options());
  padded.narrow(dim, pad_first ? longest - t.size(dim) : 0, t.size(dim)).copy_(t);
  return padded;
}

absl::Status ParallelContext::AgreeOnStatus(const absl::Status& mine, const std::string& what) {
  if (!pg_) return mine;
  ASSIGN_OR_RETURN(const float all_ok, MeanFloat(mine.ok() ? 1.0f : 0.0f), what);
  if (!mine.ok()) return mine;
  if (all_ok != 1.0f) {
    return absl::InternalError(absl::StrCat(what, ": another rank failed (its log says why)"));
  }
  return absl::OkStatus();
}

absl::Status ParallelContext::MainProcessFirst(bool local,
                                               const std::function<absl::Status()>& fn) {
  const bool main = local ? is_local_zero() : is_world_zero();
  absl::Status status;
  if (main) status = fn();
  RETURN_IF_ERROR_CTX(Barrier(), "main_process_first");
  if (!main) status = fn();
  return status;
}

}  // namespace loom::runtime
