// CpuMemoryLimit: sizes parsed with their units; under a limit, allocations within it succeed,
// freed bytes come back, and one past it throws c10::OutOfMemoryError in the allocator's own
// wording (which the Trainer's out-of-memory check recognises) — without any crash.
#include "base/cpu_memory_limit.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include <cstdlib>

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::base {
namespace {

using ::loom::base::testing::IsOkAndHolds;
using ::loom::base::testing::StatusIs;
using ::testing::HasSubstr;

TEST(ParseMemorySizeTest, Units) {
  EXPECT_THAT(ParseMemorySize("1000"), IsOkAndHolds(1000));
  EXPECT_THAT(ParseMemorySize("350MB"), IsOkAndHolds(350000000));
  EXPECT_THAT(ParseMemorySize("1.5GiB"), IsOkAndHolds(int64_t{1610612736}));
  EXPECT_THAT(ParseMemorySize(" 2 kib "), IsOkAndHolds(2048));
  EXPECT_THAT(ParseMemorySize("3 TB"), IsOkAndHolds(int64_t{3000000000000}));
  for (const char* bad : {"", "MB", "12 parsecs", "-5MB", "0", "1e3"}) {
    EXPECT_THAT(ParseMemorySize(bad), StatusIs(absl::StatusCode::kInvalidArgument, ::testing::_))
        << bad;
  }
}

// One process-wide installation (LibTorch's allocator registry); everything in one test.
TEST(CpuMemoryLimitTest, AllocationsPastTheLimitThrowOutOfMemory) {
  ::setenv(kCpuMemoryLimitEnv, "not a size", 1);
  EXPECT_THAT(InstallCpuMemoryLimitFromEnv(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(kCpuMemoryLimitEnv)));
  ::setenv(kCpuMemoryLimitEnv, "8MiB", 1);
  ASSERT_THAT(InstallCpuMemoryLimitFromEnv(), IsOkAndHolds(8 * 1024 * 1024));
  {
    at::Tensor a = at::zeros({1024 * 1024}, at::kFloat);  // 4 MiB
    EXPECT_EQ(a.sum().item<float>(), 0.0f);
    try {
      at::Tensor b = at::empty({1024 * 1024 + 1024}, at::kFloat);  // 4 MiB + 4 KiB: past 8 MiB
      ADD_FAILURE() << "no out-of-memory error";
    } catch (const c10::OutOfMemoryError& e) {
      EXPECT_THAT(e.what_without_backtrace(),
                  HasSubstr("DefaultCPUAllocator: can't allocate memory: you tried to allocate"));
      EXPECT_THAT(e.what_without_backtrace(), HasSubstr("LOOM_CPU_MEMORY_LIMIT of 8388608 bytes"));
    }
  }
  // Freed: the same again fits.
  at::Tensor c = at::empty({1024 * 1024 + 1024}, at::kFloat);
  EXPECT_EQ(c.numel(), 1024 * 1024 + 1024);
  // Stats: the live bytes and the peak (c's bytes and the 4 MiB a held at once).
  std::optional<CpuMemoryStats> stats = CurrentCpuMemoryStats();
  ASSERT_TRUE(stats.has_value());
  EXPECT_EQ(stats->limit, 8 * 1024 * 1024);
  EXPECT_EQ(stats->live, (1024 * 1024 + 1024) * 4);
  EXPECT_GE(stats->peak, 4 * 1024 * 1024);
  ResetCpuMemoryPeak();
  EXPECT_EQ(CurrentCpuMemoryStats()->peak, stats->live);
  // Memory held outside the allocator counts too: a charge past the limit throws the same way.
  ChargeCpuMemory(2 * 1024 * 1024);
  EXPECT_EQ(CurrentCpuMemoryStats()->live, stats->live + 2 * 1024 * 1024);
  EXPECT_THROW(ChargeCpuMemory(2 * 1024 * 1024), c10::OutOfMemoryError);
  EXPECT_THROW(at::empty({512 * 1024}, at::kFloat), c10::OutOfMemoryError);  // 2 MiB more
  RefundCpuMemory(2 * 1024 * 1024);
  EXPECT_EQ(CurrentCpuMemoryStats()->live, stats->live);
  ::unsetenv(kCpuMemoryLimitEnv);
  EXPECT_THAT(InstallCpuMemoryLimitFromEnv(), IsOkAndHolds(0));
}

}  // namespace
}  // namespace loom::base
