// estimate_memory --check at 2 ranks: every strategy trains, and what rank 0 holds is the
// estimate's closed form — exactly for DDP and ZeRO-1/2 (their bytes are the formula: the
// model's parameter count splits evenly here), within 3% for ZeRO-3 / FSDP, whose root unit
// (embeddings, pooler, classifier) is a little more than the largest layer the formula counts.
#include "estimate/memory_check.h"

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::estimate {
namespace {

TEST(MemoryCheckTest, MeasuredBytesMatchTheEstimate) {
  ASSERT_OK_AND_ASSIGN(std::vector<CheckRow> rows, RunMemoryCheck(2));
  ASSERT_EQ(rows.size(), 5u);
  for (const CheckRow& r : rows) {
    ASSERT_GT(r.measured_bytes, 0) << r.strategy;
    const double ratio = static_cast<double>(r.measured_bytes) / r.estimated_bytes;
    EXPECT_GT(ratio, 0.99) << r.strategy;
    EXPECT_LT(ratio, 1.03) << r.strategy;
  }
  EXPECT_THAT(FormatCheck(rows, 2), ::testing::HasSubstr("ZeRO-3"));
}

}  // namespace
}  // namespace loom::estimate
