// FlatParamUnit: parameters as views of one padded flat buffer, the storage freed and gathered
// again — with autograd's saved references seeing the gathered data in backward (what lets a
// unit release its parameters between its forward and its backward), on one process and at 2
// ranks.
#include "sharding/param_shard/flat_param.h"

#include <torch/nn/modules/linear.h>

#include "base/free_port.h"
#include "base/status_matchers.h"
#include "distributed/multiprocess_testing.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::sharding {
namespace {

TEST(FlatParamUnitTest, ReleaseFreesTheBytesAndBackwardSeesTheGatheredWeights) {
  torch::manual_seed(4);
  torch::nn::Linear layer(3, 2);  // 8 parameters
  torch::nn::Linear twin(3, 2);
  twin->weight.set_data(layer->weight.detach().clone());
  twin->bias.set_data(layer->bias.detach().clone());
  const at::Tensor* weight_identity = &layer->weight;
  ASSERT_OK_AND_ASSIGN(auto unit, FlatParamUnit::Create(layer->parameters(), 0, 1));
  EXPECT_EQ(unit->numel(), 8);
  EXPECT_TRUE(at::equal(layer->weight, twin->weight));  // values kept
  EXPECT_EQ(&layer->weight, weight_identity);

  const at::Tensor x = torch::randn({4, 3});
  at::Tensor out = layer->forward(x).pow(2).sum();  // saves the weight for backward
  unit->Release();
  EXPECT_FALSE(unit->gathered());
  EXPECT_EQ(layer->weight.storage().nbytes(), 0u);
  ASSERT_OK(unit->Gather(nullptr));
  out.backward();
  twin->forward(x).pow(2).sum().backward();
  EXPECT_TRUE(at::equal(layer->weight.grad(), twin->weight.grad()));
  EXPECT_TRUE(at::equal(layer->bias.grad(), twin->bias.grad()));
  EXPECT_TRUE(at::equal(layer->weight, twin->weight));
}

int TwoRanks(int rank, int port) {
  auto pg = distributed::testing::JoinGroup(rank, 2, port);
  CHILD_CHECK_OK(pg.status());
  // 7 elements, padded to 8: rank r's shard is elements [4r, 4r + 4).
  at::Tensor a = at::arange(3, at::kFloat) + 10 * rank;
  at::Tensor b = at::arange(3, 7, at::kFloat).view({2, 2}) + 10 * rank;
  auto unit = FlatParamUnit::Create({a, b}, rank, 2);
  CHILD_CHECK_OK(unit.status());
  CHILD_CHECK((*unit)->padded_numel() == 8 && (*unit)->shard().numel() == 4);
  (*unit)->Release();
  CHILD_CHECK(a.storage().nbytes() == 0);
  CHILD_CHECK_OK((*unit)->Gather(&*pg));
  // Rank 0's shard holds its elements 0-3, rank 1's its elements 4-6 (+10) and the padding.
  CHILD_CHECK(at::equal(a, at::arange(3, at::kFloat)));
  CHILD_CHECK(at::equal(b, at::tensor({3.0f, 14.0f, 15.0f, 16.0f}).view({2, 2})));
  return 0;
}

// Backward reads the parameters' storage as gathered then, not as it was in forward: doubled
// shard values between forward and backward double the weight the input's gradient sees.
TEST(FlatParamUnitTest, BackwardUsesTheStorageAsGatheredThen) {
  torch::manual_seed(5);
  torch::nn::Linear layer(3, 2);
  const at::Tensor w0 = layer->weight.detach().clone();
  const at::Tensor b0 = layer->bias.detach().clone();
  ASSERT_OK_AND_ASSIGN(auto unit, FlatParamUnit::Create(layer->parameters(), 0, 1));
  const at::Tensor x = torch::randn({4, 3}).requires_grad_(true);
  at::Tensor out = layer->forward(x).pow(2).sum();
  unit->Release();
  unit->mutable_shard().mul_(2);
  ASSERT_OK(unit->Gather(nullptr));
  out.backward();
  const at::Tensor y = at::linear(x.detach(), w0, b0);
  EXPECT_TRUE(at::allclose(x.grad(), at::matmul(2 * y, 2 * w0), 1e-6, 1e-6));
}

TEST(FlatParamUnitTest, GatherJoinsEveryRanksShard) {
  ASSERT_OK_AND_ASSIGN(const int port, base::PickFreePort());
  ASSERT_GT(port, 0);
  EXPECT_THAT(distributed::testing::RunRanks(2, absl::Seconds(30),
                                             [&](int rank) { return TwoRanks(rank, port); }),
              ::testing::Each(0));
}

TEST(FlatParamUnitTest, RefusesMixedDtypes) {
  EXPECT_FALSE(FlatParamUnit::Create({at::zeros({2}), at::zeros({2}, at::kDouble)}, 0, 1).ok());
  EXPECT_FALSE(FlatParamUnit::Create({}, 0, 1).ok());
  EXPECT_FALSE(FlatParamUnit::Create({at::zeros({2})}, 2, 2).ok());
}

}  // namespace
}  // namespace loom::sharding
