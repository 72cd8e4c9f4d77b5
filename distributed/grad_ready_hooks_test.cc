#include "distributed/grad_ready_hooks.h"

#include <torch/torch.h>

#include "base/status_matchers.h"
#include "gtest/gtest.h"

namespace loom::distributed {
namespace {

TEST(GradReadyHooksTest, RunsAfterAccumulationUntilDestroyed) {
  at::Tensor w = torch::ones({2}, torch::requires_grad());
  std::vector<float> seen;
  {
    GradReadyHooks hooks;
    ASSERT_OK(hooks.Add(w, [&] { seen.push_back(w.grad().sum().item<float>()); }));
    (w * 3).sum().backward();
    (w * 3).sum().backward();  // accumulated: the hook sees the running sum
  }
  (w * 3).sum().backward();  // removed
  EXPECT_EQ(seen, (std::vector<float>{6.0f, 12.0f}));
  GradReadyHooks hooks;
  EXPECT_FALSE(hooks.Add(torch::ones({2}), [] {}).ok());  // no grad
  EXPECT_FALSE(hooks.Add(w * 2, [] {}).ok());             // not a leaf
}

}  // namespace
}  // namespace loom::distributed
