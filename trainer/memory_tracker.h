// MemoryTracker: HF's TrainerMemoryTracker (transformers 4.41 trainer_utils.py): memory
// deltas of the Trainer's outer stages, reported as metrics when skip_memory_metrics=false.
//
// Contract:
//   - Stages: "init" (construction), "train", "eval" (Evaluate), "test" (Predict). Start(stage)
//     records CPU RSS (/proc/self/statm) and, on CUDA builds with a GPU, the caching
//     allocator's allocated bytes on device 0, and resets the GPU peak; a sampling thread
//     tracks the CPU RSS peak (every `sample_interval`) until Stop(stage).
//   - Only the outermost stage is tracked: Start/Stop of another stage while one runs are
//     ignored (an evaluation inside training counts towards "train"), as HF does.
//   - UpdateMetrics(stage, metrics) adds <stage>_mem_cpu_alloc_delta (end - begin, may be
//     negative) and <stage>_mem_cpu_peaked_delta (max(0, peak - end)), and the _gpu_ pair on
//     CUDA builds; the "init" numbers are added (once) to the first stage reported.
//   - With skip = true (the default of skip_memory_metrics) everything is a no-op.
//
// Example:
//   MemoryTracker tracker(args.skip_memory_metrics());
//   tracker.Start("train");
//   ... train ...
//   tracker.StopAndUpdateMetrics("train", &metrics);
#ifndef LOOM_TRAINER_MEMORY_TRACKER_H_
#define LOOM_TRAINER_MEMORY_TRACKER_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <thread>

#include "trainer/metrics.h"

namespace loom::trainer {

// Resident set size of this process in bytes (0 when /proc is unreadable).
int64_t CpuMemoryUsed();

class MemoryTracker {
 public:
  explicit MemoryTracker(bool skip,
                         std::chrono::microseconds sample_interval = std::chrono::milliseconds(1));
  ~MemoryTracker();
  MemoryTracker(const MemoryTracker&) = delete;
  MemoryTracker& operator=(const MemoryTracker&) = delete;

  void Start(const std::string& stage);
  void Stop(const std::string& stage);
  void UpdateMetrics(const std::string& stage, Metrics* metrics);
  void StopAndUpdateMetrics(const std::string& stage, Metrics* metrics) {
    Stop(stage);
    UpdateMetrics(stage, metrics);
  }

 private:
  struct Deltas {
    int64_t alloc = 0;
    int64_t peaked = 0;
  };
  void StopSampler();

  const bool skip_;
  const std::chrono::microseconds interval_;
  std::optional<std::string> stage_;
  bool init_reported_ = false;
  int64_t cpu_begin_ = 0;
  int64_t gpu_begin_ = 0;
  std::atomic<int64_t> cpu_peak_{0};
  std::atomic<bool> sampling_{false};
  std::thread sampler_;
  std::map<std::string, Deltas> cpu_;
  std::map<std::string, Deltas> gpu_;
};

}  // namespace loom::trainer

#endif  // LOOM_TRAINER_MEMORY_TRACKER_H_
