#include "threads/host_heap.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <cstdlib>
#include <cstring>

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::threads {
namespace {

using ::testing::HasSubstr;

TEST(HostHeapTest, KeepsFreedBlocksByDefault) {
  const HeapPlan plan = DecideHeap({});
  EXPECT_TRUE(plan.keep_freed);
  EXPECT_EQ(plan.mmap_threshold, 32u << 20);
  EXPECT_EQ(plan.Describe(),
            "heap: freed blocks kept for reuse (mmap threshold 32 MiB, trim threshold 2 GiB)");
  // Variables that are not the allocator's leave the default.
  EXPECT_TRUE(DecideHeap({{"GLIBC_TUNABLES", "glibc.cpu.hwcaps=-AVX2"},
                          {"LD_PRELOAD", "/usr/lib/libfaketime.so"}})
                  .keep_freed);
}

TEST(HostHeapTest, TheUsersAllocatorSettingsWin) {
  for (const auto& [name, value] : std::map<std::string, std::string>{
           {"GLIBC_TUNABLES", "glibc.malloc.trim_threshold=0"},
           {"MALLOC_MMAP_THRESHOLD_", "65536"},
           {"MALLOC_TRIM_THRESHOLD_", "0"},
           {"MALLOC_TOP_PAD_", "0"},
           {"LD_PRELOAD", "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"}}) {
    const HeapPlan plan = DecideHeap({{name, value}});
    EXPECT_FALSE(plan.keep_freed) << name;
    EXPECT_EQ(plan.Describe(), "heap: left as set (" + name + "=" + value + ", yours)");
    EXPECT_OK(ApplyHeapPlan(plan));
  }
}

TEST(HostHeapTest, HeapEnvironmentReadsOnlyTheAllocatorsVariables) {
  setenv("MALLOC_TOP_PAD_", "4096", 1);
  setenv("LOOM_HOST_HEAP_TEST_OTHER", "1", 1);
  const auto env = HeapEnvironment();
  EXPECT_EQ(env.at("MALLOC_TOP_PAD_"), "4096");
  EXPECT_EQ(env.count("LOOM_HOST_HEAP_TEST_OTHER"), 0u);
  unsetenv("MALLOC_TOP_PAD_");
}

#if defined(__GLIBC__)
// After ApplyHeapPlan a 4 MiB block (above glibc's initial 128 KiB mmap threshold) comes from
// the heap instead of its own mmap, and freeing it keeps the memory in the process.
TEST(HostHeapTest, AppliedPlanServesLargeBlocksFromTheHeapAndKeepsThem) {
  ASSERT_OK(ApplyHeapPlan(DecideHeap({})));
  const size_t kBlock = 4u << 20;
  const struct mallinfo2 before = mallinfo2();
  void* p = std::malloc(kBlock);
  ASSERT_NE(p, nullptr);
  std::memset(p, 1, kBlock);
  const struct mallinfo2 during = mallinfo2();
  EXPECT_EQ(during.hblks, before.hblks) << "the block was mmapped on its own";
  EXPECT_GE(during.arena, before.arena + kBlock - (1u << 20));
  std::free(p);
  const struct mallinfo2 after = mallinfo2();
  EXPECT_GE(after.arena, during.arena) << "the heap was trimmed";
  EXPECT_GE(after.fordblks, kBlock);
  // A second plan application is harmless, and a bigger block than the threshold is mmapped.
  ASSERT_OK(ApplyHeapPlan(DecideHeap({})));
  void* big = std::malloc(64u << 20);
  ASSERT_NE(big, nullptr);
  EXPECT_EQ(mallinfo2().hblks, before.hblks + 1);
  std::free(big);
}
#endif

}  // namespace
}  // namespace loom::threads
