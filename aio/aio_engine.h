// AioEngine: whole-file reads and writes through Linux native asynchronous I/O (libaio) with
// O_DIRECT and aligned buffers — DeepSpeed 0.13.5's aio handle (the config's `aio` section)
// for ZeRO-Infinity's swap files. libaio (Debian's libaio-dev) submits the requests;
// the engine splits each transfer into block_size requests, keeps queue_depth of them in
// flight (submitting one at a time with single_submit, else in batches), and waits for
// completions as they come (overlap_events) or a full batch at a time; thread_count transfers
// of one call run side by side on their own contexts.
//
// Contract:
//   - Buffers must be aligned to kAlignment bytes and sizes a multiple of it (AlignedBuffer
//     gives such memory); files are written whole, at their final size.
//   - O_DIRECT where the filesystem takes it; where it does not (e.g. tmpfs: open fails with
//     EINVAL), the file is opened without it and `direct()` turns false for that path — the
//     caller reports the fallback (CheckDirectIo says in advance).
//   - Every failure (open, a short or failed request, ENOSPC) is an error naming the file and
//     the operation; a write that fails leaves no partial file behind under its name (written
//     to NAME.partial, then renamed).
//   - ReadAsync / WriteAsync run the transfer on a thread of their own and return a future:
//     the caller overlaps I/O with compute (read-ahead, write-behind).
//   - io contexts are kept for reuse (io_destroy waits for an RCU grace period: creating one
//     per call cost ~20% of a 256 MB transfer here); the engine is safe to use from several
//     threads at once.
//
// Example:
//   ASSIGN_OR_RETURN(auto engine, AioEngine::Create(AioOptions().set_block_size(1 << 20)));
//   AlignedBuffer buf(bytes);
//   RETURN_IF_ERROR(engine->Write("/nvme/x.swp", buf.data(), buf.size()));
//   auto pending = engine->ReadAsync("/nvme/x.swp", buf.data(), buf.size());
//   RETURN_IF_ERROR(pending.get());
#ifndef LOOM_AIO_AIO_ENGINE_H_
#define LOOM_AIO_AIO_ENGINE_H_

#include <cstddef>
#include <cstdint>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <libaio.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace loom::aio {

inline constexpr int64_t kAlignment = 4096;

struct AioOptions {
  int64_t block_size = 1048576;  // bytes per request (DeepSpeed's default)
  int64_t queue_depth = 8;       // requests in flight
  int64_t thread_count = 1;      // transfers of one call side by side
  bool single_submit = false;
  bool overlap_events = true;

  AioOptions& set_block_size(int64_t v) {
    block_size = v;
    return *this;
  }
  AioOptions& set_queue_depth(int64_t v) {
    queue_depth = v;
    return *this;
  }
  AioOptions& set_thread_count(int64_t v) {
    thread_count = v;
    return *this;
  }
  AioOptions& set_single_submit(bool v) {
    single_submit = v;
    return *this;
  }
  AioOptions& set_overlap_events(bool v) {
    overlap_events = v;
    return *this;
  }
};

// Memory aligned for O_DIRECT, zero-filled, size rounded up to kAlignment; counted against
// LOOM_CPU_MEMORY_LIMIT like tensor memory (base/cpu_memory_limit.h: the constructor throws
// c10::OutOfMemoryError past it).
class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  explicit AlignedBuffer(int64_t bytes);
  ~AlignedBuffer();
  AlignedBuffer(AlignedBuffer&& other) noexcept;
  AlignedBuffer& operator=(AlignedBuffer&& other) noexcept;
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;

  void* data() const { return data_; }
  int64_t size() const { return size_; }

 private:
  void* data_ = nullptr;
  int64_t size_ = 0;
};

// A new AlignedBuffer of `bytes`, or ResourceExhausted in the limit's (or the system's) words
// when there is no memory for it.
absl::StatusOr<std::unique_ptr<AlignedBuffer>> NewAlignedBuffer(int64_t bytes);

inline int64_t AlignUp(int64_t bytes) { return (bytes + kAlignment - 1) / kAlignment * kAlignment; }

class AioEngine {
 public:
  // InvalidArgument naming `aio.<key>` for a block_size that is not a positive multiple of
  // kAlignment, or a queue_depth / thread_count below 1.
  static absl::StatusOr<std::unique_ptr<AioEngine>> Create(const AioOptions& options);
  ~AioEngine();

  absl::Status Write(const std::string& path, const void* data, int64_t bytes) const;
  absl::Status Read(const std::string& path, void* data, int64_t bytes) const;
  std::future<absl::Status> WriteAsync(std::string path, const void* data, int64_t bytes) const;
  std::future<absl::Status> ReadAsync(std::string path, void* data, int64_t bytes) const;

  const AioOptions& options() const { return options_; }

 private:
  explicit AioEngine(const AioOptions& o) : options_(o) {}
  io_context_t AcquireContext() const;  // null when io_setup fails
  void ReleaseContext(io_context_t ctx) const;
  // One file's transfer at [offset, offset + bytes) through its own io context.
  absl::Status Transfer(int fd, bool write, char* data, int64_t offset, int64_t bytes,
                        const std::string& path) const;
  absl::Status Run(const std::string& path, bool write, char* data, int64_t bytes) const;

  AioOptions options_;
  mutable std::mutex contexts_mu_;
  mutable std::vector<io_context_t> free_contexts_;  // io contexts kept for the next transfer
};

// Whether `folder` takes O_DIRECT (a probe file written and removed): true, false (the
// filesystem refuses it: EINVAL), or an error naming the folder (missing, not a folder, not
// writable).
absl::StatusOr<bool> CheckDirectIo(const std::string& folder);

}  // namespace loom::aio

#endif  // LOOM_AIO_AIO_ENGINE_H_
