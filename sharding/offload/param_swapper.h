// ParamSwapper: ZeRO-Infinity's parameter offload to NVMe (DeepSpeed 0.13.5
// offload_param with "device": "nvme", buffer_count, buffer_size, max_in_cpu) — a
// ShardStore (shard_store.h) keeping ZeRO-3 parameter shards in swap files between their uses,
// through //aio.
//
// Contract:
//   - Create(options, shards): each shard (contiguous CPU fp32, storage of its own) gets a file
//     in a scratch folder nvme_path/loom-swap-rank<R>-params-XXXXXX (removed with the swapper
//     and on SIGINT/SIGTERM/SIGHUP, base/scratch_folder.h), is written there and evicted.
//     Errors: the nvme_path and free-space checks of swap_space.h, and a shard
//     of more than buffer_size elements (DeepSpeed's buffers hold one parameter each: raise
//     offload_param.buffer_size).
//   - Fetch(shard): its bytes back in memory (read straight into page-aligned memory that
//     becomes the shard's storage). Fetching shard k starts reading up to buffer_count - 1
//     shards ahead in the direction the fetches travel (forward: k+1, ...; backward: k-1, ...),
//     so the reads overlap the compute of the unit in hand.
//   - Evict(shard, dirty): dirty shards are written out; the storage is then freed, unless the
//     resident shards total at most max_in_cpu elements (DeepSpeed's budget of parameter
//     elements kept in CPU memory), in which case it stays (the file is current either way).
//   - resident_elements(): elements of shard data in memory now.
//
// Example:
//   ASSIGN_OR_RETURN(auto swapper, ParamSwapper::Create(opts, shards));
//   for (auto& unit : units) unit.set_store(swapper.get());
#ifndef LOOM_SHARDING_OFFLOAD_PARAM_SWAPPER_H_
#define LOOM_SHARDING_OFFLOAD_PARAM_SWAPPER_H_

#include <ATen/ATen.h>

#include <future>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "aio/aio_engine.h"
#include "sharding/offload/shard_store.h"
#include "sharding/offload/swap_space.h"

namespace loom::sharding {

struct ParamSwapperOptions {
  std::string nvme_path;
  int rank = 0;
  aio::AioOptions aio;
  int64_t buffer_count = 5;
  int64_t buffer_size = 100000000;
  int64_t max_in_cpu = 1000000000;
};

class ParamSwapper : public ShardStore {
 public:
  static absl::StatusOr<std::unique_ptr<ParamSwapper>> Create(const ParamSwapperOptions& options,
                                                              std::vector<at::Tensor> shards);
  ~ParamSwapper() override;

  absl::Status Fetch(const at::Tensor& shard) override;
  absl::Status Evict(const at::Tensor& shard, bool dirty) override;

  int64_t resident_elements() const { return resident_elements_; }
  const std::string& folder() const { return space_.folder->path(); }
  std::string Describe() const;

 private:
  struct Entry {
    at::Tensor shard;
    std::string file;
    int64_t bytes = 0;  // the file's size (aligned)
    bool resident = true;
    std::shared_ptr<aio::AlignedBuffer> ahead;  // a read-ahead's buffer
    std::future<absl::Status> reading;
  };

  ParamSwapper() = default;
  Entry* Find(const at::Tensor& shard);
  void StartReadAhead(size_t k);
  absl::Status Write(Entry& e);

  ParamSwapperOptions options_;
  SwapSpace space_;
  std::vector<Entry> entries_;
  std::map<const c10::TensorImpl*, size_t> index_;
  int64_t resident_elements_ = 0;
  int64_t last_fetched_ = -1;
  int direction_ = 1;
};

}  // namespace loom::sharding

#endif  // LOOM_SHARDING_OFFLOAD_PARAM_SWAPPER_H_
