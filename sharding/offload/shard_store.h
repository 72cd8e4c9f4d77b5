// ShardStore: where a parameter shard's data lives between its uses (ZeRO-Infinity's
// offload_param "nvme", param_swapper.h). A FlatParamUnit with a store fetches its shard before
// each gather (and write-back) and evicts it after; the strategy does the same around the
// optimizer step and checkpoints.
//
// Contract: the shard tensor keeps its identity, sizes and gradient throughout (optimizers and
// autograd key on it); only its storage's bytes come and go. Fetch makes the data resident and
// current; Evict(dirty) lets go of it — writing it out first when `dirty` (its values changed
// since the last Fetch). Both are no-ops for a shard the store does not hold.
//
// Example:
//   RETURN_IF_ERROR(store->Fetch(shard));
//   ... read or update shard ...
//   RETURN_IF_ERROR(store->Evict(shard, /*dirty=*/true));
#ifndef LOOM_SHARDING_OFFLOAD_SHARD_STORE_H_
#define LOOM_SHARDING_OFFLOAD_SHARD_STORE_H_

#include <ATen/ATen.h>

#include "absl/status/status.h"

namespace loom::sharding {

class ShardStore {
 public:
  virtual ~ShardStore() = default;
  virtual absl::Status Fetch(const at::Tensor& shard) = 0;
  virtual absl::Status Evict(const at::Tensor& shard, bool dirty) = 0;
};

}  // namespace loom::sharding

#endif  // LOOM_SHARDING_OFFLOAD_SHARD_STORE_H_
