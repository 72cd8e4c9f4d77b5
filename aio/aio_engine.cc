#include "aio/aio_engine.h"

#include <fcntl.h>
#include <libaio.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <c10/util/Exception.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/cpu_memory_limit.h"

namespace loom::aio {
namespace {

absl::Status Errno(int err, const std::string& what, const std::string& path) {
  const std::string text = absl::StrCat(what, " ", path, ": ", std::strerror(err));
  if (err == ENOSPC || err == EDQUOT) {
    return absl::ResourceExhaustedError(
        absl::StrCat(text, " (the disk is full: free space there or point nvme_path elsewhere)"));
  }
  if (err == ENOENT || err == ENOTDIR) return absl::NotFoundError(text);
  if (err == EACCES || err == EPERM || err == EROFS) return absl::PermissionDeniedError(text);
  return absl::InternalError(text);
}

// The io_getevents system call itself (libaio's wrapper returned EFAULT here with a null
// timeout under some builds); negative errno on failure, as libaio's.
int GetEvents(io_context_t ctx, long min_nr, long nr, io_event* events) {
  const long rc = ::syscall(SYS_io_getevents, ctx, min_nr, nr, events, nullptr);
  return rc < 0 ? -errno : static_cast<int>(rc);
}

// open() with O_DIRECT, and without it where the filesystem refuses it.
int OpenFile(const std::string& path, int flags, bool* direct) {
  int fd = ::open(path.c_str(), flags | O_DIRECT | O_CLOEXEC, 0644);
  *direct = fd >= 0;
  if (fd < 0 && errno == EINVAL) fd = ::open(path.c_str(), flags | O_CLOEXEC, 0644);
  return fd;
}

}  // namespace

AlignedBuffer::AlignedBuffer(int64_t bytes) : size_(AlignUp(std::max<int64_t>(bytes, 1))) {
  base::ChargeCpuMemory(size_);  // throws past LOOM_CPU_MEMORY_LIMIT
  if (posix_memalign(&data_, kAlignment, static_cast<size_t>(size_)) != 0) {
    base::RefundCpuMemory(size_);
    data_ = nullptr;
    size_ = 0;
    throw std::bad_alloc();
  }
  std::memset(data_, 0, static_cast<size_t>(size_));
}

AlignedBuffer::~AlignedBuffer() {
  if (data_ != nullptr) base::RefundCpuMemory(size_);
  std::free(data_);
}

AlignedBuffer::AlignedBuffer(AlignedBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

AlignedBuffer& AlignedBuffer::operator=(AlignedBuffer&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) base::RefundCpuMemory(size_);
    std::free(data_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

absl::StatusOr<std::unique_ptr<AlignedBuffer>> NewAlignedBuffer(int64_t bytes) {
  try {
    return std::make_unique<AlignedBuffer>(bytes);
  } catch (const c10::Error& e) {  // past LOOM_CPU_MEMORY_LIMIT
    return absl::ResourceExhaustedError(
        absl::StrCat("a ", bytes, "-byte O_DIRECT buffer: ", e.what_without_backtrace()));
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(
        absl::StrCat("no host memory for a ", bytes, "-byte O_DIRECT buffer"));
  }
}

absl::StatusOr<std::unique_ptr<AioEngine>> AioEngine::Create(const AioOptions& o) {
  if (o.block_size <= 0 || o.block_size % kAlignment != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "aio.block_size: ", o.block_size, " must be a positive multiple of ", kAlignment,
        " bytes (the filesystem's logical block for O_DIRECT); DeepSpeed's default is 1048576"));
  }
  if (o.queue_depth < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("aio.queue_depth: ", o.queue_depth, " must be >= 1"));
  }
  if (o.thread_count < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("aio.thread_count (intra_op_parallelism): ", o.thread_count, " must be >= 1"));
  }
  return std::unique_ptr<AioEngine>(new AioEngine(o));
}

absl::Status AioEngine::Transfer(int fd, bool write, char* data, int64_t offset, int64_t bytes,
                                 const std::string& path) const {
  const int depth = static_cast<int>(options_.queue_depth);
  io_context_t ctx = AcquireContext();
  if (ctx == nullptr) return Errno(EAGAIN, "io_setup for", path);
  std::vector<iocb> cbs(static_cast<size_t>(depth));
  std::vector<iocb*> free_cbs;
  for (iocb& cb : cbs) free_cbs.push_back(&cb);
  std::vector<io_event> events(static_cast<size_t>(depth));
  absl::Status status = absl::OkStatus();
  int64_t next = offset;
  const int64_t end = offset + bytes;
  int in_flight = 0;
  const char* op = write ? "writing" : "reading";
  while (status.ok() && (next < end || in_flight > 0)) {
    // Submit what the queue takes (one request per call with single_submit).
    std::vector<iocb*> batch;
    while (next < end && !free_cbs.empty()) {
      iocb* cb = free_cbs.back();
      free_cbs.pop_back();
      const int64_t len = std::min(options_.block_size, end - next);
      if (write) {
        io_prep_pwrite(cb, fd, data + (next - offset), static_cast<size_t>(len), next);
      } else {
        io_prep_pread(cb, fd, data + (next - offset), static_cast<size_t>(len), next);
      }
      batch.push_back(cb);
      next += len;
      if (options_.single_submit) {
        if (int rc = io_submit(ctx, 1, &batch.back()); rc != 1) {
          status = Errno(rc < 0 ? -rc : EIO, absl::StrCat("submitting ", op), path);
          break;
        }
        ++in_flight;
        batch.pop_back();
      }
    }
    if (status.ok() && !batch.empty()) {
      int rc = io_submit(ctx, static_cast<long>(batch.size()), batch.data());
      if (rc != static_cast<int>(batch.size())) {
        status = Errno(rc < 0 ? -rc : EIO, absl::StrCat("submitting ", op), path);
        in_flight += std::max(rc, 0);
        break;
      }
      in_flight += rc;
    }
    if (in_flight == 0) continue;
    // Completions: as they come (overlap_events), or the whole batch.
    const long min_nr = options_.overlap_events ? 1 : in_flight;
    const int got = GetEvents(ctx, min_nr, depth, events.data());
    if (got < 0) {
      status = Errno(-got, absl::StrCat("waiting for ", op), path);
      break;
    }
    for (int i = 0; i < got; ++i) {
      const io_event& e = events[static_cast<size_t>(i)];
      const long res = static_cast<long>(e.res);
      if (res < 0 || static_cast<unsigned long>(res) != e.obj->u.c.nbytes) {
        if (status.ok()) {
          status = res < 0 ? Errno(static_cast<int>(-res), op, path)
                           : Errno(write ? ENOSPC : EIO, absl::StrCat("short ", op), path);
        }
      }
      free_cbs.push_back(e.obj);
      --in_flight;
    }
  }
  // Drain whatever is still in flight after an error.
  while (in_flight > 0) {
    const int got = GetEvents(ctx, 1, depth, events.data());
    if (got <= 0) break;
    in_flight -= got;
  }
  ReleaseContext(ctx);
  return status;
}

// io_destroy waits for an RCU grace period (milliseconds), so contexts are kept for reuse.
io_context_t AioEngine::AcquireContext() const {
  {
    std::lock_guard<std::mutex> lock(contexts_mu_);
    if (!free_contexts_.empty()) {
      io_context_t ctx = free_contexts_.back();
      free_contexts_.pop_back();
      return ctx;
    }
  }
  io_context_t ctx = nullptr;
  return io_setup(static_cast<int>(options_.queue_depth), &ctx) < 0 ? nullptr : ctx;
}

void AioEngine::ReleaseContext(io_context_t ctx) const {
  std::lock_guard<std::mutex> lock(contexts_mu_);
  free_contexts_.push_back(ctx);
}

AioEngine::~AioEngine() {
  for (io_context_t ctx : free_contexts_) io_destroy(ctx);
}

absl::Status AioEngine::Run(const std::string& path, bool write, char* data, int64_t bytes) const {
  if (bytes % kAlignment != 0 || reinterpret_cast<uintptr_t>(data) % kAlignment != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "AioEngine: ", path, ": buffer and size must be aligned to ", kAlignment, " bytes"));
  }
  const std::string target = write ? absl::StrCat(path, ".partial") : path;
  bool direct = false;
  const int fd = OpenFile(target, write ? (O_WRONLY | O_CREAT | O_TRUNC) : O_RDONLY, &direct);
  if (fd < 0) return Errno(errno, write ? "creating" : "opening", target);
  absl::Status status = absl::OkStatus();
  // thread_count ranges of the file side by side, each on its own context.
  const int64_t threads = std::min<int64_t>(options_.thread_count,
                                            std::max<int64_t>(1, bytes / options_.block_size));
  const int64_t per = AlignUp((bytes + threads - 1) / threads);
  std::vector<absl::Status> results(static_cast<size_t>(threads));
  if (status.ok()) {
    std::vector<std::thread> pool;
    for (int64_t t = 1; t < threads; ++t) {
      const int64_t begin = std::min(bytes, t * per), len = std::min(bytes, begin + per) - begin;
      pool.emplace_back([&, t, begin, len] {
        results[static_cast<size_t>(t)] = Transfer(fd, write, data + begin, begin, len, target);
      });
    }
    results[0] = Transfer(fd, write, data, 0, std::min(bytes, per), target);
    for (std::thread& th : pool) th.join();
    for (const absl::Status& s : results) {
      if (status.ok()) status = s;
    }
  }
  if (status.ok() && write && ::fdatasync(fd) != 0) status = Errno(errno, "syncing", target);
  ::close(fd);
  if (write) {
    if (status.ok() && ::rename(target.c_str(), path.c_str()) != 0) {
      status = Errno(errno, "renaming into", path);
    }
    if (!status.ok()) ::unlink(target.c_str());
  }
  return status;
}

absl::Status AioEngine::Write(const std::string& path, const void* data, int64_t bytes) const {
  return Run(path, true, static_cast<char*>(const_cast<void*>(data)), bytes);
}

absl::Status AioEngine::Read(const std::string& path, void* data, int64_t bytes) const {
  return Run(path, false, static_cast<char*>(data), bytes);
}

std::future<absl::Status> AioEngine::WriteAsync(std::string path, const void* data,
                                                 int64_t bytes) const {
  return std::async(std::launch::async,
                    [this, path = std::move(path), data, bytes] { return Write(path, data, bytes); });
}

std::future<absl::Status> AioEngine::ReadAsync(std::string path, void* data, int64_t bytes) const {
  return std::async(std::launch::async,
                    [this, path = std::move(path), data, bytes] { return Read(path, data, bytes); });
}

absl::StatusOr<bool> CheckDirectIo(const std::string& folder) {
  struct stat st;
  if (::stat(folder.c_str(), &st) != 0) return Errno(errno, "folder", folder);
  if (!S_ISDIR(st.st_mode)) {
    return absl::InvalidArgumentError(absl::StrCat(folder, " is not a folder"));
  }
  const std::string probe = absl::StrCat(folder, "/.loom-odirect-probe-", ::getpid());
  bool direct = false;
  const int fd = OpenFile(probe, O_WRONLY | O_CREAT | O_TRUNC, &direct);
  if (fd < 0) return Errno(errno, "cannot create files in", folder);
  ::close(fd);
  ::unlink(probe.c_str());
  return direct;
}

}  // namespace loom::aio
