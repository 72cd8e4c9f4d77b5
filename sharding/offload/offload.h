// OffloadOptions: where a ZeRO strategy keeps what it offloads (DeepSpeed 0.13.5
// zero_optimization offload_optimizer / offload_param, ZeRO-Infinity's nvme device) — one plain
// struct that the DeepSpeed plan fills and ZeroStrategy / ParamShardStrategy read.
//
// Contract:
//   - optimizer: the fp32 master partitions, their gradients and the optimizer state live in
//     host memory (HostOptions: CPU, page-locked when pin_memory and CUDA is present); the
//     reduced gradients are copied there, the optimizer (loom's fused CPU optimizer, chosen by
//     the Trainer) steps there, and the updated masters are copied back to the device. On a CPU
//     build the host is the device: the same code runs and only the copies are local.
//   - optimizer_nvme_path non-empty (stage 3, ZeRO-Infinity): the optimizer state also lives
//     in swap files under that folder (optimizer_swapper.h), sub_group_size elements at a
//     time, with buffer_count buffers, through //aio configured by `aio`.
//   - params (stage 3): the parameter shards live in host memory between uses; with
//     param_nvme_path, the wrapped units' shards in swap files there (param_swapper.h).
//
// Example:
//   OffloadOptions off; off.optimizer = true; off.pin_memory = true;
//   at::Tensor master = shard.to(HostOptions(off), false, /*copy=*/true);
#ifndef LOOM_SHARDING_OFFLOAD_OFFLOAD_H_
#define LOOM_SHARDING_OFFLOAD_OFFLOAD_H_

#include <ATen/ATen.h>

#include <cstdint>
#include <string>

#include "aio/aio_engine.h"
#include "args/deepspeed_config.h"

namespace loom::sharding {

struct OffloadOptions {
  bool optimizer = false;
  bool params = false;
  bool pin_memory = false;
  std::string optimizer_nvme_path;  // empty: host memory only
  int64_t buffer_count = 4;
  int64_t sub_group_size = 1000000000;
  args::AioConfig aio;
  // offload_param "nvme" (stage 3): the wrapped units' parameter shards in swap files
  // (param_swapper.h), with offload_param's buffer_count, buffer_size and max_in_cpu.
  std::string param_nvme_path;  // empty: host memory only
  int64_t param_buffer_count = 5;
  int64_t param_buffer_size = 100000000;
  int64_t max_in_cpu = 1000000000;

  bool any() const { return optimizer || params; }
};

// What the strategy names in its Name(): "" without offload, else e.g.
// " (offload: optimizer cpu, params cpu)" or " (offload: optimizer nvme)".
inline std::string OffloadSuffix(const OffloadOptions& o) {
  if (!o.any()) return "";
  std::string out = " (offload:";
  if (o.optimizer) out += o.optimizer_nvme_path.empty() ? " optimizer cpu" : " optimizer nvme";
  if (o.optimizer && o.params) out += ",";
  if (o.params) out += o.param_nvme_path.empty() ? " params cpu" : " params nvme";
  return out + ")";
}

// The `aio` section as the engine takes it (thread_count: newer DeepSpeed's
// intra_op_parallelism too).
inline aio::AioOptions AioOptionsOf(const args::AioConfig& c) {
  return aio::AioOptions()
      .set_block_size(c.block_size)
      .set_queue_depth(c.queue_depth)
      .set_thread_count(c.thread_count)
      .set_single_submit(c.single_submit)
      .set_overlap_events(c.overlap_events);
}

// fp32 tensors in host memory: CPU, pinned when asked and CUDA is there to use it.
inline at::TensorOptions HostOptions(const OffloadOptions& o) {
  return at::TensorOptions()
      .dtype(at::kFloat)
      .device(at::kCPU)
      .pinned_memory(o.pin_memory && at::hasCUDA());
}

}  // namespace loom::sharding

#endif  // LOOM_SHARDING_OFFLOAD_OFFLOAD_H_
