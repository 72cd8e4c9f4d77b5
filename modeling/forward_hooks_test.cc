#include "modeling/forward_hooks.h"

#include <torch/torch.h>

#include "gtest/gtest.h"
#include "modeling/hooked_embedding.h"

namespace loom::modeling {
namespace {

TEST(ForwardHooksTest, RunInOrderAndRemove) {
  ForwardHooks hooks;
  std::vector<bool> training_seen;
  ForwardHookHandle add = hooks.Register([&](const at::Tensor& t, bool training) {
    training_seen.push_back(training);
    return t + 1;
  });
  ForwardHookHandle mul = hooks.Register([](const at::Tensor& t, bool) { return t * 10; });
  EXPECT_EQ(hooks.Run(torch::tensor(1.0f), true).item<float>(), 20.0f);  // (1 + 1) * 10
  add.Remove();
  EXPECT_FALSE(add.active());
  EXPECT_EQ(hooks.Run(torch::tensor(1.0f), false).item<float>(), 10.0f);
  EXPECT_EQ(training_seen, std::vector<bool>{true});
  {
    ForwardHookHandle moved = std::move(mul);
    EXPECT_FALSE(mul.active());  // NOLINT(bugprone-use-after-move): checks the move
    EXPECT_EQ(hooks.size(), 1u);
  }
  EXPECT_EQ(hooks.size(), 0u);  // removed when the handle went out of scope
  EXPECT_EQ(hooks.Run(torch::tensor(3.0f), true).item<float>(), 3.0f);
}

TEST(HookedEmbeddingTest, KeysAreEmbeddingsAndHooksSeeTheTrainingFlag) {
  HookedEmbedding emb(torch::nn::EmbeddingOptions(5, 3));
  std::vector<std::string> keys;
  for (const auto& p : emb->named_parameters()) keys.push_back(p.key());
  EXPECT_EQ(keys, std::vector<std::string>{"weight"});
  at::Tensor ids = torch::tensor({{0, 4}});
  const at::Tensor plain = emb->forward(ids);
  ForwardHookHandle h = emb->hooks.Register(
      [](const at::Tensor& t, bool training) { return training ? t * 0 : t; });
  emb->train();
  EXPECT_TRUE(torch::equal(emb->forward(ids), torch::zeros_like(plain)));
  emb->eval();
  EXPECT_TRUE(torch::equal(emb->forward(ids), plain));
}

}  // namespace
}  // namespace loom::modeling
