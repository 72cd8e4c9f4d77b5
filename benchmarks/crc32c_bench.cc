// crc32c_bench: GB/s of //logging:crc32c's two paths in the same process, the SSE4.2 `crc32`
// instruction path (three interleaved lanes; what Crc32cExtend runs on x86-64) against the
// portable byte-at-a-time table.
//
//   ./bazelw run -c opt //benchmarks:crc32c_bench
//
// Sizes: 64 B (a TFRecord-sized message), 4 KiB, 64 KiB, 1 MiB (checkpoint/folder's read size,
// the case that matters for checkpoints) and 64 MiB (beyond the caches). Each size runs in
// alternating rounds (table, hardware, table, ...) so load from other processes hits both alike;
// the summary lines use each side's best round. GB/s here is 10^9 bytes per second.
#include <cstdint>
#include <iostream>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "benchmark/benchmark.h"
#include "logging/crc32c_internal.h"
#include "logging/process_logging.h"

namespace loom::benchmarks {
namespace {

using logging::crc32c_internal::Crc32cExtendHardware;
using logging::crc32c_internal::Crc32cExtendPortable;
using logging::crc32c_internal::HardwareCrc32cAvailable;

constexpr int kRounds = 3;
const std::vector<int64_t> kSizes = {64, 4 << 10, 64 << 10, 1 << 20, 64 << 20};

const std::string& Buffer() {
  static const std::string* data = [] {
    auto* s = new std::string(64 << 20, '\0');
    uint64_t x = 0x9E3779B97F4A7C15ull;
    for (char& c : *s) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      c = static_cast<char>(x);
    }
    return s;
  }();
  return *data;
}

template <uint32_t (*kExtend)(uint32_t, absl::string_view)>
void BM_Crc32c(benchmark::State& state) {
  const absl::string_view data = absl::string_view(Buffer()).substr(0, state.range(0));
  uint32_t crc = 0;
  for (auto _ : state) {
    crc = kExtend(crc, data);
    benchmark::DoNotOptimize(crc);
  }
  state.SetBytesProcessed(state.iterations() * state.range(0));
}

void RegisterRounds() {
  for (int64_t size : kSizes) {
    for (int r = 0; r < kRounds; ++r) {
      benchmark::RegisterBenchmark(absl::StrFormat("Table/round:%d", r).c_str(),
                                   BM_Crc32c<Crc32cExtendPortable>)
          ->Arg(size)
          ->MinTime(0.2)
          ->UseRealTime();
      benchmark::RegisterBenchmark(absl::StrFormat("Hardware/round:%d", r).c_str(),
                                   BM_Crc32c<Crc32cExtendHardware>)
          ->Arg(size)
          ->MinTime(0.2)
          ->UseRealTime();
    }
  }
}

// Console output as usual, plus each side's best GB/s per size for the summary.
class GbpsReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& r : runs) {
      if (r.error_occurred || r.iterations == 0 || r.real_accumulated_time <= 0) continue;
      const std::string& name = r.run_name.function_name;
      const std::string side = name.substr(0, name.find('/'));
      const int64_t size = std::stoll(r.run_name.args);
      const double gbps = static_cast<double>(size) * r.iterations / r.real_accumulated_time / 1e9;
      double& best = best_[{size, side}];
      if (gbps > best) best = gbps;
    }
  }
  std::map<std::pair<int64_t, std::string>, double> best_;
};

}  // namespace
}  // namespace loom::benchmarks

int main(int argc, char** argv) {
  loom::logging::InitProcessLogging(argv[0]);
  using loom::benchmarks::kSizes;
  benchmark::Initialize(&argc, argv);
  loom::benchmarks::RegisterRounds();
  loom::benchmarks::GbpsReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  std::cout << "crc32c_bench: hardware path = "
            << (loom::benchmarks::HardwareCrc32cAvailable() ? "SSE4.2 crc32, 3 lanes"
                                                            : "unavailable (runs the table)")
            << "; best of " << loom::benchmarks::kRounds << " alternating rounds\n";
  for (int64_t size : kSizes) {
    const auto& best = reporter.best_;
    auto hw = best.find({size, "Hardware"});
    auto table = best.find({size, "Table"});
    if (hw == best.end() || table == best.end()) continue;
    std::cout << absl::StrFormat(
        "crc32c_bench: %9d B  hardware %6.2f GB/s  table %5.2f GB/s  (%.1fx)\n", size, hw->second,
        table->second, hw->second / table->second);
  }
  benchmark::Shutdown();
  return 0;
}
