// O_DIRECT buffers count against LOOM_CPU_MEMORY_LIMIT as tensor memory does: within the limit
// they are made and give their bytes back when freed (or moved from); past it NewAlignedBuffer
// is a ResourceExhausted naming the limit, never an exception out of a swapper. (Its own test
// binary: the limit is process-wide.)
#include <ATen/ATen.h>

#include <cstdlib>
#include <memory>
#include <utility>

#include "aio/aio_engine.h"
#include "base/cpu_memory_limit.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::aio {
namespace {

using ::loom::base::testing::StatusIs;
using ::testing::HasSubstr;

TEST(AlignedBufferLimitTest, BuffersAreCountedAndRefusedPastTheLimit) {
  ::setenv(base::kCpuMemoryLimitEnv, "8MiB", 1);
  ASSERT_OK(base::InstallCpuMemoryLimitFromEnv().status());
  const int64_t before = base::CurrentCpuMemoryStats()->live;
  {
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<AlignedBuffer> a, NewAlignedBuffer(5 << 20));
    EXPECT_EQ(base::CurrentCpuMemoryStats()->live, before + (5 << 20));
    EXPECT_THAT(NewAlignedBuffer(4 << 20),
                StatusIs(absl::StatusCode::kResourceExhausted,
                         HasSubstr("LOOM_CPU_MEMORY_LIMIT of 8388608 bytes")));
    EXPECT_THROW(at::empty({1 << 20}, at::kFloat), c10::OutOfMemoryError);  // 4 MiB tensor too
    AlignedBuffer moved = std::move(*a);  // the bytes move with the buffer, counted once
    EXPECT_EQ(base::CurrentCpuMemoryStats()->live, before + (5 << 20));
  }
  EXPECT_EQ(base::CurrentCpuMemoryStats()->live, before);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<AlignedBuffer> b, NewAlignedBuffer(7 << 20));
  EXPECT_EQ(b->size(), 7 << 20);
}

}  // namespace
}  // namespace loom::aio
