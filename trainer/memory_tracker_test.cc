#include "trainer/memory_tracker.h"

#include <cstring>
#include <memory>
#include <thread>

#include "gtest/gtest.h"

namespace loom::trainer {
namespace {

constexpr int64_t kMiB = 1 << 20;

// Allocates and touches `bytes` so they count in the RSS.
std::unique_ptr<char[]> Touch(int64_t bytes) {
  std::unique_ptr<char[]> p(new char[bytes]);
  std::memset(p.get(), 1, bytes);
  return p;
}

TEST(CpuMemoryUsedTest, GrowsWithTouchedMemory) {
  const int64_t before = CpuMemoryUsed();
  auto block = Touch(64 * kMiB);
  EXPECT_GE(CpuMemoryUsed() - before, 60 * kMiB);
}

TEST(MemoryTrackerTest, AllocDeltaAndInitReportedOnceWithFirstStage) {
  MemoryTracker tracker(/*skip=*/false);
  tracker.Start("init");
  auto kept_init = Touch(16 * kMiB);
  tracker.Stop("init");
  tracker.Start("train");
  auto kept = Touch(64 * kMiB);
  Metrics m = Metrics::object();
  tracker.StopAndUpdateMetrics("train", &m);
  EXPECT_GE(m["init_mem_cpu_alloc_delta"].get<int64_t>(), 15 * kMiB);
  EXPECT_GE(m["train_mem_cpu_alloc_delta"].get<int64_t>(), 60 * kMiB);
  EXPECT_GE(m["train_mem_cpu_peaked_delta"].get<int64_t>(), 0);
  EXPECT_EQ(m.size(), 4u);  // no GPU keys on a CPU build
  tracker.Start("eval");
  Metrics e = Metrics::object();
  tracker.StopAndUpdateMetrics("eval", &e);
  EXPECT_FALSE(e.contains("init_mem_cpu_alloc_delta"));
  EXPECT_TRUE(e.contains("eval_mem_cpu_alloc_delta"));
}

TEST(MemoryTrackerTest, PeakOfFreedMemoryIsSampled) {
  MemoryTracker tracker(/*skip=*/false);
  tracker.Start("train");
  {
    auto temporary = Touch(128 * kMiB);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // let the sampler see it
  }
  Metrics m = Metrics::object();
  tracker.StopAndUpdateMetrics("train", &m);
  EXPECT_GE(m["train_mem_cpu_peaked_delta"].get<int64_t>(), 100 * kMiB);
  EXPECT_LT(m["train_mem_cpu_alloc_delta"].get<int64_t>(), 32 * kMiB);
}

TEST(MemoryTrackerTest, NestedStageCountsTowardsTheOuterOne) {
  MemoryTracker tracker(/*skip=*/false);
  tracker.Start("train");
  tracker.Start("eval");
  auto kept = Touch(32 * kMiB);
  Metrics inner = Metrics::object();
  tracker.StopAndUpdateMetrics("eval", &inner);
  EXPECT_TRUE(inner.empty());
  Metrics outer = Metrics::object();
  tracker.StopAndUpdateMetrics("train", &outer);
  EXPECT_GE(outer["train_mem_cpu_alloc_delta"].get<int64_t>(), 30 * kMiB);
}

TEST(MemoryTrackerTest, SkipAddsNothing) {
  MemoryTracker tracker(/*skip=*/true);
  tracker.Start("train");
  Metrics m = Metrics::object();
  tracker.StopAndUpdateMetrics("train", &m);
  EXPECT_TRUE(m.empty());
}

}  // namespace
}  // namespace loom::trainer
