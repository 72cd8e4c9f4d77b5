#include "aio/aio_bench.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace loom::aio {
namespace {

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string BenchFile(const std::string& folder) {
  return absl::StrCat(folder, "/.loom-aio-bench-", ::getpid(), ".bin");
}

absl::Status IoError(const std::string& what, const std::string& path) {
  return absl::InternalError(absl::StrCat(what, " ", path, ": ", std::strerror(errno)));
}

int OpenMaybeDirect(const std::string& path, int flags) {
  int fd = ::open(path.c_str(), flags | O_DIRECT | O_CLOEXEC, 0644);
  if (fd < 0 && errno == EINVAL) fd = ::open(path.c_str(), flags | O_CLOEXEC, 0644);
  return fd;
}

double Harmonic(const Rates& r) {
  return r.read > 0 && r.write > 0 ? 2 / (1 / r.read + 1 / r.write) : 0;
}

}  // namespace

absl::StatusOr<Rates> RawDirectRates(const std::string& folder, int64_t bytes, int64_t block_size,
                                     int repeats, bool reuse_block) {
  bytes = AlignUp(bytes);
  block_size = AlignUp(block_size);
  AlignedBuffer buffer(reuse_block ? block_size : bytes);
  std::memset(buffer.data(), 0x5a, static_cast<size_t>(buffer.size()));
  const auto at = [&](int64_t off) {
    return static_cast<char*>(buffer.data()) + (reuse_block ? 0 : off);
  };
  const std::string path = BenchFile(folder);
  Rates best;
  for (int r = 0; r < repeats; ++r) {
    int fd = OpenMaybeDirect(path, O_WRONLY | O_CREAT | O_TRUNC);
    if (fd < 0) return IoError("creating", path);
    double start = Now();
    for (int64_t off = 0; off < bytes; off += block_size) {
      const int64_t len = std::min(block_size, bytes - off);
      if (::pwrite(fd, at(off), static_cast<size_t>(len), off) != len) {
        ::close(fd);
        ::unlink(path.c_str());
        return IoError("writing", path);
      }
    }
    ::fdatasync(fd);
    best.write = std::max(best.write, bytes / (Now() - start));
    ::close(fd);
    fd = OpenMaybeDirect(path, O_RDONLY);
    if (fd < 0) return IoError("opening", path);
    start = Now();
    for (int64_t off = 0; off < bytes; off += block_size) {
      const int64_t len = std::min(block_size, bytes - off);
      if (::pread(fd, at(off), static_cast<size_t>(len), off) != len) {
        ::close(fd);
        ::unlink(path.c_str());
        return IoError("reading", path);
      }
    }
    best.read = std::max(best.read, bytes / (Now() - start));
    ::close(fd);
  }
  ::unlink(path.c_str());
  return best;
}

absl::StatusOr<Rates> EngineRates(const std::string& folder, int64_t bytes,
                                  const AioOptions& options, int repeats) {
  absl::StatusOr<std::unique_ptr<AioEngine>> engine = AioEngine::Create(options);
  if (!engine.ok()) return engine.status();
  bytes = AlignUp(bytes);
  AlignedBuffer buffer(bytes);
  std::memset(buffer.data(), 0x5a, static_cast<size_t>(bytes));
  const std::string path = BenchFile(folder);
  Rates best;
  for (int r = 0; r < repeats; ++r) {
    double start = Now();
    absl::Status s = (*engine)->Write(path, buffer.data(), bytes);
    if (!s.ok()) {
      ::unlink(path.c_str());
      return s;
    }
    best.write = std::max(best.write, bytes / (Now() - start));
    start = Now();
    s = (*engine)->Read(path, buffer.data(), bytes);
    if (!s.ok()) {
      ::unlink(path.c_str());
      return s;
    }
    best.read = std::max(best.read, bytes / (Now() - start));
  }
  ::unlink(path.c_str());
  return best;
}

const SweepPoint& SweepResult::Best() const {
  return *std::max_element(points.begin(), points.end(), [](const auto& a, const auto& b) {
    return Harmonic(a.rates) < Harmonic(b.rates);
  });
}

std::string SweepResult::Table() const {
  std::string out = absl::StrFormat("%10s %11s %8s %10s %10s\n", "block_size", "queue_depth",
                                    "threads", "read GB/s", "write GB/s");
  for (const SweepPoint& p : points) {
    absl::StrAppendFormat(&out, "%10d %11d %8d %10.2f %10.2f\n", p.options.block_size,
                          p.options.queue_depth, p.options.thread_count, p.rates.read / 1e9,
                          p.rates.write / 1e9);
  }
  return out;
}

std::string SweepResult::BestAioSection() const {
  const AioOptions& o = Best().options;
  return absl::StrCat("{\"aio\": {\"block_size\": ", o.block_size,
                      ", \"queue_depth\": ", o.queue_depth, ", \"thread_count\": ", o.thread_count,
                      ", \"single_submit\": ", o.single_submit ? "true" : "false",
                      ", \"overlap_events\": ", o.overlap_events ? "true" : "false", "}}");
}

absl::StatusOr<SweepResult> Sweep(const SweepOptions& o) {
  SweepResult result;
  absl::StatusOr<bool> direct = CheckDirectIo(o.folder);
  if (!direct.ok()) return direct.status();
  result.direct = *direct;
  for (int64_t block : o.block_sizes) {
    for (int64_t depth : o.queue_depths) {
      for (int64_t threads : o.thread_counts) {
        SweepPoint p;
        p.options = AioOptions().set_block_size(block).set_queue_depth(depth).set_thread_count(
            threads);
        absl::StatusOr<Rates> rates = EngineRates(o.folder, o.bytes, p.options, o.repeats);
        if (!rates.ok()) return rates.status();
        p.rates = *rates;
        result.points.push_back(p);
      }
    }
  }
  if (result.points.empty()) {
    return absl::InvalidArgumentError("aio_bench: nothing to sweep (empty lists)");
  }
  return result;
}

}  // namespace loom::aio
