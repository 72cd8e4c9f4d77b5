#include "trainer/memory_tracker.h"

#include <unistd.h>

#include <algorithm>
#include <fstream>

#ifdef LOOM_HAS_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#include <torch/cuda.h>
#endif

namespace loom::trainer {
namespace {

#ifdef LOOM_HAS_CUDA
bool HasGpu() { return torch::cuda::is_available(); }
int64_t GpuAllocated() {
  auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(0);
  return stats.allocated_bytes[0].current;  // StatType::AGGREGATE
}
int64_t GpuPeak() {
  auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(0);
  return stats.allocated_bytes[0].peak;
}
void ResetGpuPeak() { c10::cuda::CUDACachingAllocator::resetPeakStats(0); }
#else
bool HasGpu() { return false; }
int64_t GpuAllocated() { return 0; }
int64_t GpuPeak() { return 0; }
void ResetGpuPeak() {}
#endif

}  // namespace

int64_t CpuMemoryUsed() {
  std::ifstream statm("/proc/self/statm");
  int64_t size = 0, resident = 0;
  if (!(statm >> size >> resident)) return 0;
  return resident * static_cast<int64_t>(::sysconf(_SC_PAGESIZE));
}

MemoryTracker::MemoryTracker(bool skip, std::chrono::microseconds sample_interval)
    : skip_(skip), interval_(sample_interval) {}

MemoryTracker::~MemoryTracker() { StopSampler(); }

void MemoryTracker::StopSampler() {
  sampling_ = false;
  if (sampler_.joinable()) sampler_.join();
}

void MemoryTracker::Start(const std::string& stage) {
  if (skip_ || stage_.has_value()) return;
  stage_ = stage;
  if (HasGpu()) {
    ResetGpuPeak();
    gpu_begin_ = GpuAllocated();
  }
  cpu_begin_ = CpuMemoryUsed();
  cpu_peak_ = cpu_begin_;
  sampling_ = true;
  sampler_ = std::thread([this] {
    while (sampling_) {
      const int64_t now = CpuMemoryUsed();
      int64_t peak = cpu_peak_.load();
      while (now > peak && !cpu_peak_.compare_exchange_weak(peak, now)) {
      }
      std::this_thread::sleep_for(interval_);
    }
  });
}

void MemoryTracker::Stop(const std::string& stage) {
  if (skip_ || stage_ != stage) return;
  StopSampler();
  const int64_t cpu_end = CpuMemoryUsed();
  const int64_t cpu_peak = std::max(cpu_peak_.load(), cpu_end);
  cpu_[stage] = Deltas{cpu_end - cpu_begin_, std::max<int64_t>(0, cpu_peak - cpu_end)};
  if (HasGpu()) {
    const int64_t gpu_end = GpuAllocated();
    gpu_[stage] = Deltas{gpu_end - gpu_begin_, std::max<int64_t>(0, GpuPeak() - gpu_end)};
  }
  stage_.reset();
}

void MemoryTracker::UpdateMetrics(const std::string& stage, Metrics* metrics) {
  if (skip_ || stage_.has_value()) return;  // a nested stage: the outer one reports
  std::vector<std::string> stages = {stage};
  if (!init_reported_) {
    stages.insert(stages.begin(), "init");
    init_reported_ = true;
  }
  for (const std::string& s : stages) {
    for (const char* t : {"alloc", "peaked"}) {
      const bool alloc = std::string(t) == "alloc";
      if (auto it = cpu_.find(s); it != cpu_.end()) {
        (*metrics)[s + "_mem_cpu_" + t + "_delta"] = alloc ? it->second.alloc : it->second.peaked;
      }
      if (auto it = gpu_.find(s); it != gpu_.end()) {
        (*metrics)[s + "_mem_gpu_" + t + "_delta"] = alloc ? it->second.alloc : it->second.peaked;
      }
    }
  }
}

}  // namespace loom::trainer
