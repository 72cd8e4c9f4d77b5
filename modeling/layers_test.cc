#include "modeling/layers.h"

#include <torch/torch.h>

#include <limits>

#include "gtest/gtest.h"

namespace loom::modeling {
namespace {

TEST(LayersTest, FinfoMinAndDtypeNames) {
  EXPECT_EQ(FinfoMin(at::kFloat), std::numeric_limits<float>::lowest());
  EXPECT_EQ(FinfoMin(at::kBFloat16), -3.3895313892515355e38);  // torch.finfo(bfloat16).min
  EXPECT_EQ(FinfoMin(at::kHalf), -65504.0);
  EXPECT_EQ(TorchDtypeName(at::kFloat), "float32");
  EXPECT_EQ(TorchDtypeName(at::kBFloat16), "bfloat16");
}

struct TwoParts : torch::nn::Module {
  TwoParts() {
    register_module("embed", torch::nn::Embedding(10, 4));  // 40, excluded
    register_module("proj", torch::nn::Linear(4, 3));       // 12 + 3
  }
};

TEST(LayersTest, NonEmbeddingParameterCountLeavesEmbeddingsOut) {
  EXPECT_EQ(NonEmbeddingParameterCount(TwoParts()), 15);
}

TEST(LayersTest, DenseIsLinearWithBias) {
  torch::nn::Linear layer(2, 1);
  const at::Tensor x = torch::tensor({{1.0f, 2.0f}});
  EXPECT_TRUE(torch::allclose(Dense(layer, x), x.matmul(layer->weight.t()) + layer->bias));
  EXPECT_THROW(ApplyActivation("mish", x), std::invalid_argument);
}

}  // namespace
}  // namespace loom::modeling
