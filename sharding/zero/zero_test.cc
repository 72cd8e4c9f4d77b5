// RoundRobinOrder: DeepSpeed's _round_robin_reorder on closed cases (the ZeroStrategy itself is
// covered by zero_conformance_test and the run_glue tests).
#include "sharding/zero/zero.h"

#include <torch/torch.h>

#include "gtest/gtest.h"

namespace loom::sharding {
namespace {

std::vector<int64_t> Order(int64_t n, int world) {
  std::vector<at::Tensor> params;
  for (int64_t i = 0; i < n; ++i) params.push_back(torch::full({1}, i, torch::kLong));
  std::vector<int64_t> out;
  for (const at::Tensor& t : RoundRobinOrder(params, world)) out.push_back(t.item<int64_t>());
  return out;
}

TEST(RoundRobinOrderTest, DeepSpeedsReorder) {
  EXPECT_EQ(Order(5, 2), (std::vector<int64_t>{0, 2, 4, 1, 3}));
  EXPECT_EQ(Order(7, 3), (std::vector<int64_t>{0, 3, 6, 1, 4, 2, 5}));
  EXPECT_EQ(Order(4, 1), (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(Order(2, 4), (std::vector<int64_t>{0, 1}));  // fewer parameters than ranks
  EXPECT_EQ(Order(0, 2), (std::vector<int64_t>{}));
}

}  // namespace
}  // namespace loom::sharding
