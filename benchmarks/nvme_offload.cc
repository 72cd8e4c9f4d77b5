// nvme_offload: ZeRO-Infinity's disk path on this machine, in one run:
//   1. the disk: a raw O_DIRECT sequential loop (pwrite/pread one block at a time, over the
//      same bytes the engine moves, and dd-style with one reused block buffer), against loom's
//      aio engine (//aio) on the same bytes, both ways;
//   2. the optimizer step of a 200M-parameter model (50 fp32 shards of 4M) with loom's fused
//      CPU AdamW, its state in memory (the baseline) and swapped to NVMe by
//      sharding/offload/optimizer_swapper.h (sub_group_size 50M: 5 sub-groups, buffer_count 4), with
//      the bytes the swap moves per step and their rate.
//
//   ./bazelw run -c opt //benchmarks:nvme_offload [-- FOLDER [PARAMS]]
//       FOLDER default /tmp (a folder on the disk nvme_path would name); PARAMS default 200000000
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>

#include "aio/aio_bench.h"
#include "optim/fused_cpu_optim.h"
#include "sharding/offload/optimizer_swapper.h"

namespace {

double Seconds(const std::function<void()>& fn) {
  const auto start = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

int Fail(const absl::Status& s) {
  std::fprintf(stderr, "nvme_offload: %s\n", std::string(s.message()).c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string folder = argc > 1 ? argv[1] : "/tmp";
  const int64_t params = argc > 2 ? std::atoll(argv[2]) : 200'000'000;
  constexpr int64_t kShard = 4'000'000;
  constexpr int64_t kDiskBytes = int64_t{512} << 20;
  constexpr int kSteps = 3;
  absl::StatusOr<bool> direct = loom::aio::CheckDirectIo(folder);
  if (!direct.ok()) return Fail(direct.status());
  std::printf("nvme_offload: %s (%s), intra-op threads %d\n", folder.c_str(),
              *direct ? "O_DIRECT" : "buffered: no O_DIRECT here", at::get_num_threads());

  // 1. The disk, 512 MiB per measurement, block 1 MiB.
  const auto engine_options = loom::aio::AioOptions().set_block_size(1 << 20).set_queue_depth(8);
  absl::StatusOr<loom::aio::Rates> raw =
      loom::aio::RawDirectRates(folder, kDiskBytes, 1 << 20, 3);
  absl::StatusOr<loom::aio::Rates> dd =
      loom::aio::RawDirectRates(folder, kDiskBytes, 1 << 20, 3, /*reuse_block=*/true);
  absl::StatusOr<loom::aio::Rates> engine =
      loom::aio::EngineRates(folder, kDiskBytes, engine_options, 3);
  if (!raw.ok()) return Fail(raw.status());
  if (!dd.ok()) return Fail(dd.status());
  if (!engine.ok()) return Fail(engine.status());
  std::printf("disk, 512 MiB sequential, 1 MiB requests (best of 3):\n");
  std::printf("  raw O_DIRECT loop, same bytes   read %6.2f GB/s  write %6.2f GB/s\n",
              raw->read / 1e9, raw->write / 1e9);
  std::printf("  raw O_DIRECT loop, dd-style     read %6.2f GB/s  write %6.2f GB/s\n",
              dd->read / 1e9, dd->write / 1e9);
  std::printf("  loom aio engine (queue_depth 8) read %6.2f GB/s  write %6.2f GB/s"
              "  (%.0f%% / %.0f%% of the raw loop on the same bytes)\n",
              engine->read / 1e9, engine->write / 1e9, 100 * engine->read / raw->read,
              100 * engine->write / raw->write);

  // 2. The optimizer step.
  torch::manual_seed(0);
  std::vector<torch::Tensor> shards;
  for (int64_t left = params; left > 0; left -= kShard) {
    torch::Tensor p = torch::randn({std::min(kShard, left)});
    p.mutable_grad() = torch::randn(p.sizes()) * 1e-3;
    shards.push_back(p);
  }
  const auto options = torch::optim::AdamWOptions(1e-4).weight_decay(0.01);
  double in_memory = std::numeric_limits<double>::infinity();
  {
    loom::optim::FusedCpuAdamW opt(shards, options);
    for (int s = 0; s < kSteps + 1; ++s) {
      const double t = Seconds([&] { opt.step(); });
      if (s > 0) in_memory = std::min(in_memory, t);  // the first makes the state
    }
  }
  loom::optim::FusedCpuAdamW opt(shards, options);
  loom::sharding::OptimizerSwapperOptions so;
  so.nvme_path = folder;
  so.aio = engine_options;
  so.buffer_count = 4;
  so.sub_group_size = 50'000'000;
  absl::StatusOr<std::unique_ptr<loom::sharding::OptimizerSwapper>> swapper =
      loom::sharding::OptimizerSwapper::Create(so, &opt, shards);
  if (!swapper.ok()) return Fail(swapper.status());
  double swapped = std::numeric_limits<double>::infinity();
  for (int s = 0; s < kSteps + 1; ++s) {
    absl::Status status = absl::OkStatus();
    const double t = Seconds([&] {
      status = (*swapper)->Step([&] {
        opt.step();
        return absl::OkStatus();
      });
    });
    if (!status.ok()) return Fail(status);
    if (s > 0) swapped = std::min(swapped, t);  // the first only writes
  }
  const double moved = 2.0 * 8.0 * static_cast<double>(params);  // states read + written
  std::printf("optimizer step, %lld parameters, fused CPU AdamW (best of %d):\n",
              static_cast<long long>(params), kSteps);
  std::printf("  state in memory                   %8.3f s\n", in_memory);
  std::printf("  state on NVMe (%zu sub-groups)     %8.3f s  (%.1fx; %.2f GB of state read and "
              "written per step at %.2f GB/s; %s)\n",
              (*swapper)->num_sub_groups(), swapped, swapped / in_memory, moved / 1e9,
              moved / swapped / 1e9, (*swapper)->Describe().c_str());
  return 0;
}
