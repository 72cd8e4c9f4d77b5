#include "modeling/deferred_init.h"

#include <torch/torch.h>

#include <map>
#include <string>

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::modeling {
namespace {

using ::loom::base::testing::StatusIs;
using ::testing::HasSubstr;

struct Block : torch::nn::Module {
  Block() {
    a = register_module("a", torch::nn::Linear(64, 32));
    b = register_module("b", torch::nn::Linear(32, 8));
  }
  torch::nn::Linear a{nullptr}, b{nullptr};
};

TEST(DeferredInitTest, DeferredParametersKeepShapesAndIdentityButNoBytes) {
  auto block = std::make_shared<Block>();
  const at::Tensor weight = block->a->weight;  // the same tensor object throughout
  EXPECT_FALSE(AnyDeferred(*block));
  DeferParameters(*block);
  EXPECT_TRUE(AnyDeferred(*block));
  EXPECT_TRUE(IsDeferred(weight));
  EXPECT_EQ(weight.sizes(), (std::vector<int64_t>{32, 64}));
  EXPECT_EQ(weight.storage().nbytes(), 0u);
  DeferParameters(*block);  // idempotent
  std::map<std::string, int64_t> filled;
  ASSERT_OK(MaterializeParameters(*block, "layers.0.", [&](const std::string& name, at::Tensor& t) {
    filled[name] = t.numel();
    t.fill_(static_cast<double>(filled.size()));
    return absl::OkStatus();
  }));
  EXPECT_EQ(filled.size(), 4u);
  EXPECT_EQ(filled["layers.0.a.weight"], 32 * 64);
  EXPECT_EQ(filled["layers.0.b.bias"], 8);
  EXPECT_FALSE(AnyDeferred(*block));
  EXPECT_EQ(weight.storage().nbytes(), 32u * 64u * 4u);
  EXPECT_EQ(block->a->weight.data_ptr(), weight.data_ptr());
  EXPECT_EQ(weight.sum().item<double>(), 32.0 * 64.0 * 1.0);
  // The module works as before.
  EXPECT_EQ(block->b->forward(block->a->forward(torch::ones({2, 64}))).sizes(),
            (std::vector<int64_t>{2, 8}));
}

TEST(DeferredInitTest, AFillErrorStopsAndIsReturned) {
  auto block = std::make_shared<Block>();
  DeferParameters(*block);
  EXPECT_THAT(MaterializeParameters(*block, "", [](const std::string& name, at::Tensor&) {
                return absl::NotFoundError(name + " is not in the checkpoint");
              }),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("a.weight is not in the checkpoint")));
}

}  // namespace
}  // namespace loom::modeling
