#include "rng/seed.h"

#include <ATen/ATen.h>

#include <cstdlib>
#include <string>

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rng/host_generator.h"

// Agreement with Python's torch.manual_seed is checked in //tests/rng (golden numbers and a live
// /usr/bin/python3 comparison).

namespace loom::rng {
namespace {

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "<unset>";
}

TEST(SetSeedTest, SameSeedSameTorchNumbersDifferentSeedDifferentNumbers) {
  ASSERT_OK(SetSeed(7, nullptr));
  at::Tensor a = at::rand({10});
  at::Tensor a_normal = at::randn({3});
  ASSERT_OK(SetSeed(7, nullptr));
  EXPECT_TRUE(at::equal(at::rand({10}), a));
  EXPECT_TRUE(at::equal(at::randn({3}), a_normal));
  ASSERT_OK(SetSeed(8, nullptr));
  EXPECT_FALSE(at::equal(at::rand({10}), a));
}

TEST(SetSeedTest, SeedsTheCpuDefaultGeneratorLikeManualSeed) {
  ASSERT_OK(SetSeed(1234, nullptr));
  EXPECT_EQ(at::detail::getDefaultCPUGenerator().current_seed(), 1234u);
}

TEST(SetSeedTest, SeedsHostGeneratorsFromTheirNames) {
  GeneratorSet host;
  HostGenerator* sampler = host.Get("sampler");
  (*sampler)();
  ASSERT_OK(SetSeed(99, &host));
  HostGenerator expected(DeriveHostSeed(99, "sampler"));
  EXPECT_EQ((*sampler)(), expected());
  // Created after SetSeed: seeded the same way.
  HostGenerator expected_augment(DeriveHostSeed(99, "augment"));
  EXPECT_EQ((*host.Get("augment"))(), expected_augment());
  EXPECT_EQ(host.base_seed(), 99u);
}

TEST(EnableFullDeterminismTest, SetsSeedFlagsAndEnvironmentLikeHf) {
  ::unsetenv("CUBLAS_WORKSPACE_CONFIG");
  ::setenv("CUDA_LAUNCH_BLOCKING", "0", 1);
  at::globalContext().setBenchmarkCuDNN(true);
  ASSERT_FALSE(at::globalContext().deterministicAlgorithms());

  GeneratorSet host;
  ASSERT_OK(EnableFullDeterminism(5, &host));
  at::Context& ctx = at::globalContext();
  EXPECT_TRUE(ctx.deterministicAlgorithms());
  EXPECT_FALSE(ctx.deterministicAlgorithmsWarnOnly());
  EXPECT_TRUE(ctx.deterministicCuDNN());
  EXPECT_FALSE(ctx.benchmarkCuDNN());
  EXPECT_EQ(Env("CUBLAS_WORKSPACE_CONFIG"), ":16:8");
  EXPECT_EQ(Env("CUDA_LAUNCH_BLOCKING"), "1");
  EXPECT_EQ(host.base_seed(), 5u);
  EXPECT_EQ(at::detail::getDefaultCPUGenerator().current_seed(), 5u);

  ASSERT_OK(EnableFullDeterminism(5, &host, /*warn_only=*/true));
  EXPECT_TRUE(ctx.deterministicAlgorithmsWarnOnly());
  ctx.setDeterministicAlgorithms(false, false);
}

// torch.use_deterministic_algorithms(True) makes ops without a deterministic kernel throw; on the
// CPU, Tensor.put_ with accumulate=False is one (PyTorch's documented list), so it shows the
// flag really reaches LibTorch's dispatch checks, and warn_only lets it run.
TEST(EnableFullDeterminismTest, NondeterministicOpsThrowOrOnlyWarn) {
  const at::Tensor index = at::arange(2, at::kLong);
  const at::Tensor source = at::ones({2});
  at::Tensor t = at::zeros({4});
  ASSERT_OK(EnableFullDeterminism(5, nullptr));
  EXPECT_THROW(t.put_(index, source, /*accumulate=*/false), c10::Error);

  ASSERT_OK(EnableFullDeterminism(5, nullptr, /*warn_only=*/true));
  t.put_(index, source, /*accumulate=*/false);
  EXPECT_TRUE(at::equal(t, at::tensor({1.0f, 1.0f, 0.0f, 0.0f})));

  at::globalContext().setDeterministicAlgorithms(false, false);
  at::zeros({4}).put_(index, source, /*accumulate=*/false);  // allowed again
}

// Same seed under full determinism: the same numbers, as SetSeed gives.
TEST(EnableFullDeterminismTest, SeedsLikeSetSeed) {
  GeneratorSet a, b;
  ASSERT_OK(EnableFullDeterminism(11, &a));
  const at::Tensor first = at::randn({6});
  const uint64_t first_host = (*a.Get("sampler"))();
  ASSERT_OK(SetSeed(11, &b));
  EXPECT_TRUE(at::equal(at::randn({6}), first));
  EXPECT_EQ((*b.Get("sampler"))(), first_host);
  at::globalContext().setDeterministicAlgorithms(false, false);
}

}  // namespace
}  // namespace loom::rng
