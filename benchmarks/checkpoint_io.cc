// checkpoint_io: safetensors save and load throughput next to plain sequential file IO of the
// same bytes, in the same process.
//
//   ./bazelw run -c opt //benchmarks:checkpoint_io
//   LOOM_BENCH_DIR=/some/disk ./bazelw run -c opt //benchmarks:checkpoint_io   (default /tmp)
//
// The state dict: 26 tensors, 218 MB in all (fp32 matrices and vectors, bf16 and int64
// tensors), like a small model. Pairs, each alternating rounds so background load hits both:
//   Save          SaveSafetensors (header, per-tensor writes, fsync, rename, directory fsync)
//     vs RawWrite the same header and tensor bytes written sequentially from the same memory
//                 to a temporary file, fsync, rename
//   Load          LoadSafetensors(mmap = false): header parse + one pread per tensor into
//                 fresh tensors
//     vs RawRead  one pread of the whole file into a fresh buffer
//   LoadInto      LoadSafetensors (mmap, zero copy) + copy_ into preallocated tensors (how
//                 weights reach a model)
//     vs RawInto  pread of each tensor's bytes straight into the preallocated tensors
// Reads hit the page cache (the file was just written); the "cold" pair evicts it first with
// posix_fadvise(DONTNEED) so both sides read from disk. The last lines print GB/s (10^9 bytes
// per second of file bytes, best round) and the ratio safetensors / raw. Reading into fresh
// memory (Load, RawRead) pays a page fault per 4 KiB of new memory on both sides, which bounds
// those two on small VMs; LoadInto / RawInto show the copy cost without it.
#include <ATen/ATen.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "checkpoint/safetensors.h"
#include "logging/process_logging.h"

namespace loom::benchmarks {
namespace {

using checkpoint::NamedTensors;

constexpr int kRounds = 5;

std::string Dir() {
  const char* dir = std::getenv("LOOM_BENCH_DIR");
  return dir != nullptr ? dir : "/tmp";
}

const NamedTensors& StateDict() {
  static const NamedTensors* sd = [] {
    auto* out = new NamedTensors;
    at::manual_seed(0);
    for (int layer = 0; layer < 6; ++layer) {
      const std::string p = "layers." + std::to_string(layer) + ".";
      out->emplace_back(p + "attn.weight", at::randn({1024, 2048}));  // 8 MiB
      out->emplace_back(p + "mlp.weight", at::randn({2048, 3072}));   // 24 MiB
      out->emplace_back(p + "mlp.bias", at::randn({3072}));
      out->emplace_back(p + "norm.weight", at::randn({1024}).to(at::kBFloat16));
    }
    out->emplace_back("embed.weight", at::randn({4096, 1024}).to(at::kBFloat16));  // 8 MiB
    out->emplace_back("position_ids", at::arange(1 << 20, at::kLong));             // 8 MiB
    return out;
  }();
  return *sd;
}

std::string Path() { return Dir() + "/loom_checkpoint_io.safetensors"; }
std::string RawPath() { return Dir() + "/loom_checkpoint_io.raw"; }

void Check(bool ok, const std::string& what) {
  if (!ok) {
    std::cerr << "checkpoint_io: " << what << "\n";
    std::exit(1);
  }
}

void CheckStatus(const absl::Status& s) { Check(s.ok(), s.ToString()); }

// The saved file's size, header bytes and tensors in file order (set up in main()).
struct FileLayout {
  int64_t bytes = 0;
  std::string header;
  std::vector<const at::Tensor*> in_file_order;
};
FileLayout& Layout() {
  static FileLayout layout;
  return layout;
}
int64_t FileBytes() { return Layout().bytes; }

void WriteAll(int fd, const char* p, size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    Check(w > 0, "write failed");
    p += w;
    n -= static_cast<size_t>(w);
  }
}

void PreadAll(int fd, char* p, size_t n, off_t offset) {
  while (n > 0) {
    const ssize_t r = ::pread(fd, p, n, offset);
    Check(r > 0, "read failed");
    p += r;
    n -= static_cast<size_t>(r);
    offset += r;
  }
}

void Evict(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  Check(fd >= 0, "open " + path);
  ::fdatasync(fd);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
}

void BM_Save(benchmark::State& state) {
  for (auto _ : state) CheckStatus(checkpoint::SaveSafetensors(Path(), StateDict()));
  state.SetBytesProcessed(state.iterations() * FileBytes());
}

void BM_RawWrite(benchmark::State& state) {
  const std::string tmp = RawPath() + ".tmp";
  for (auto _ : state) {
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    Check(fd >= 0, "open " + tmp);
    WriteAll(fd, Layout().header.data(), Layout().header.size());
    for (const at::Tensor* t : Layout().in_file_order) {
      WriteAll(fd, static_cast<const char*>(t->data_ptr()), t->nbytes());
    }
    Check(::fsync(fd) == 0, "fsync");
    ::close(fd);
    Check(::rename(tmp.c_str(), RawPath().c_str()) == 0, "rename");
  }
  state.SetBytesProcessed(state.iterations() * FileBytes());
}

void BM_Load(benchmark::State& state) {
  const bool cold = state.range(0) != 0;
  for (auto _ : state) {
    if (cold) {
      state.PauseTiming();
      Evict(Path());
      state.ResumeTiming();
    }
    auto file = checkpoint::LoadSafetensors(Path(), {.mmap = false});
    CheckStatus(file.status());
    benchmark::DoNotOptimize(file->tensors.back().second.data_ptr());
  }
  state.SetBytesProcessed(state.iterations() * FileBytes());
}

void BM_RawRead(benchmark::State& state) {
  const bool cold = state.range(0) != 0;
  for (auto _ : state) {
    if (cold) {
      state.PauseTiming();
      Evict(Path());
      state.ResumeTiming();
    }
    const int fd = ::open(Path().c_str(), O_RDONLY);
    Check(fd >= 0, "open");
    std::unique_ptr<char[]> buffer(new char[FileBytes()]);
    PreadAll(fd, buffer.get(), FileBytes(), 0);
    ::close(fd);
    benchmark::DoNotOptimize(buffer.get());
  }
  state.SetBytesProcessed(state.iterations() * FileBytes());
}

NamedTensors& Destination() {
  static NamedTensors* dst = [] {
    auto* out = new NamedTensors;
    for (const auto& [name, t] : StateDict()) out->emplace_back(name, at::empty_like(t));
    for (auto& [name, t] : *out) t.zero_();  // fault the pages in once
    return out;
  }();
  return *dst;
}

void BM_LoadInto(benchmark::State& state) {
  NamedTensors& dst = Destination();
  for (auto _ : state) {
    auto file = checkpoint::LoadSafetensors(Path());
    CheckStatus(file.status());
    for (auto& [name, t] : dst) t.copy_(*checkpoint::FindTensor(file->tensors, name));
  }
  state.SetBytesProcessed(state.iterations() * FileBytes());
}

void BM_RawInto(benchmark::State& state) {
  NamedTensors& dst = Destination();
  auto header = checkpoint::ReadSafetensorsHeader(Path());
  CheckStatus(header.status());
  for (auto _ : state) {
    const int fd = ::open(Path().c_str(), O_RDONLY);
    Check(fd >= 0, "open");
    for (const auto& entry : header->tensors) {
      const at::Tensor& t = *checkpoint::FindTensor(dst, entry.name);
      PreadAll(fd, static_cast<char*>(t.data_ptr()), entry.end - entry.begin,
               static_cast<off_t>(header->data_start() + entry.begin));
    }
    ::close(fd);
  }
  state.SetBytesProcessed(state.iterations() * FileBytes());
}

struct Pair {
  const char* ours;
  const char* raw;
  void (*ours_fn)(benchmark::State&);
  void (*raw_fn)(benchmark::State&);
  int64_t arg;
};

const std::vector<Pair>& Pairs() {
  static const std::vector<Pair> pairs = {
      {"Save", "RawWrite", BM_Save, BM_RawWrite, 0},
      {"Load", "RawRead", BM_Load, BM_RawRead, 0},
      {"LoadCold", "RawReadCold", BM_Load, BM_RawRead, 1},
      {"LoadInto", "RawInto", BM_LoadInto, BM_RawInto, 0},
  };
  return pairs;
}

void RegisterRounds() {
  for (const Pair& p : Pairs()) {
    for (int r = 0; r < kRounds; ++r) {
      for (auto [name, fn] : {std::make_pair(p.raw, p.raw_fn), std::make_pair(p.ours, p.ours_fn)}) {
        benchmark::RegisterBenchmark((std::string(name) + "/round:" + std::to_string(r)).c_str(),
                                     fn)
            ->Arg(p.arg)
            ->Unit(benchmark::kMillisecond)
            ->UseRealTime()
            ->Iterations(2);
      }
    }
  }
}

class BestReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& r : runs) {
      const std::string name = r.run_name.function_name;
      const std::string side = name.substr(0, name.find('/'));
      const double seconds = r.real_accumulated_time / r.iterations;
      if (!best_.count(side) || seconds < best_[side]) best_[side] = seconds;
    }
  }
  std::map<std::string, double> best_;  // seconds per iteration
};

}  // namespace
}  // namespace loom::benchmarks

int main(int argc, char** argv) {
  loom::logging::InitProcessLogging(argv[0]);
  using namespace loom::benchmarks;  // NOLINT
  benchmark::Initialize(&argc, argv);
  // Write the file the read benchmarks use before any of them runs, and note its layout for
  // the raw writer (the same bytes in the same order).
  CheckStatus(loom::checkpoint::SaveSafetensors(Path(), StateDict()));
  auto header = loom::checkpoint::ReadSafetensorsHeader(Path());
  CheckStatus(header.status());
  FileLayout& layout = Layout();
  layout.bytes = static_cast<int64_t>(header->data_start() + header->data_size);
  layout.header.resize(header->data_start());
  const int fd = ::open(Path().c_str(), O_RDONLY);
  PreadAll(fd, layout.header.data(), layout.header.size(), 0);
  ::close(fd);
  for (const auto& entry : header->tensors) {
    layout.in_file_order.push_back(loom::checkpoint::FindTensor(StateDict(), entry.name));
  }
  RegisterRounds();
  BestReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  const double gb = static_cast<double>(FileBytes()) / 1e9;
  std::printf("checkpoint_io: %.1f MB safetensors file in %s, best of %d rounds per side\n",
              gb * 1000, Dir().c_str(), kRounds);
  for (const Pair& p : Pairs()) {
    const auto& best = reporter.best_;
    if (!best.count(p.ours) || !best.count(p.raw)) continue;
    const double ours = gb / best.at(p.ours);
    const double raw = gb / best.at(p.raw);
    std::printf("checkpoint_io: %-9s %6.2f GB/s   %-12s %6.2f GB/s   ratio %.2f\n", p.ours, ours,
                p.raw, raw, ours / raw);
  }
  std::remove(Path().c_str());
  std::remove(RawPath().c_str());
  benchmark::Shutdown();
  return 0;
}
