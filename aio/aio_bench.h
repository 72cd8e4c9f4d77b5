// Disk bandwidth measurements for the aio engine: a raw O_DIRECT sequential loop
// (dd's idea: pwrite/pread of one block at a time, nothing in flight beside it), the engine on
// the same bytes, and DeepSpeed's aio-benchmark idea — a sweep of block_size x queue_depth x
// thread_count for reads and writes that proposes the `aio` section to paste into a DeepSpeed
// config (DeepSpeed's docs: tune it per machine).
//
// Contract: every measurement writes (then reads) one file of `bytes` under `folder`, removed
// afterwards; rates are bytes per second of the best of `repeats` runs. Errors name the folder.
// Reads are of a file just written: with O_DIRECT they come from the disk; where the
// filesystem takes no O_DIRECT (the engine falls back to buffered I/O) they may come from the
// page cache, and Sweep's result says which.
//
// Example:
//   ASSIGN_OR_RETURN(SweepResult r, Sweep(SweepOptions().set_folder("/local_nvme")));
//   std::cout << r.Table() << r.BestAioSection() << "\n";
#ifndef LOOM_AIO_AIO_BENCH_H_
#define LOOM_AIO_AIO_BENCH_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "aio/aio_engine.h"

namespace loom::aio {

struct Rates {
  double read = 0;   // bytes/s
  double write = 0;  // bytes/s
};

// dd-like: one block_size request at a time with pwrite/pread and O_DIRECT (buffered where
// refused). `reuse_block` true: every request from/into the same block-sized buffer, as dd
// does; false: through a buffer of all `bytes`, the same memory the engine moves (a reused
// buffer stays in the CPU caches, which on a virtual disk made writes ~30% faster here — not
// what a swap of distinct data sees).
absl::StatusOr<Rates> RawDirectRates(const std::string& folder, int64_t bytes, int64_t block_size,
                                     int repeats, bool reuse_block = false);
// The engine with `options` on the same bytes.
absl::StatusOr<Rates> EngineRates(const std::string& folder, int64_t bytes,
                                  const AioOptions& options, int repeats);

struct SweepOptions {
  std::string folder;
  int64_t bytes = int64_t{256} << 20;
  std::vector<int64_t> block_sizes = {int64_t{128} << 10, int64_t{256} << 10, int64_t{1} << 20,
                                      int64_t{4} << 20};
  std::vector<int64_t> queue_depths = {4, 8, 16, 32};
  std::vector<int64_t> thread_counts = {1, 2};
  int repeats = 2;

  SweepOptions& set_folder(std::string v) {
    folder = std::move(v);
    return *this;
  }
  SweepOptions& set_bytes(int64_t v) {
    bytes = v;
    return *this;
  }
};

struct SweepPoint {
  AioOptions options;
  Rates rates;
};

struct SweepResult {
  bool direct = true;  // O_DIRECT taken by the folder's filesystem
  std::vector<SweepPoint> points;
  // The point with the best harmonic mean of read and write rates (one section serves both).
  const SweepPoint& Best() const;
  std::string Table() const;           // one line per point, GB/s
  std::string BestAioSection() const;  // {"aio": {...}} to paste into a DeepSpeed config
};

absl::StatusOr<SweepResult> Sweep(const SweepOptions& options);

}  // namespace loom::aio

#endif  // LOOM_AIO_AIO_BENCH_H_
