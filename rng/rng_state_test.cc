#include "rng/rng_state.h"

#include <torch/types.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rng/host_generator.h"
#include "rng/seed.h"

namespace loom::rng {
namespace {

using ::loom::base::testing::StatusIs;
using ::testing::HasSubstr;

using Draws = std::vector<std::pair<std::string, torch::Tensor>>;

// One draw from every kind of CPU sampler Trainer code uses, all on the default generator.
Draws DrawTorch() {
  return {
      {"rand", torch::rand({7})},
      {"randn_small", torch::randn({5})},   // scalar Box-Muller path (caches a sample)
      {"randn_large", torch::randn({33})},  // vectorised path
      {"randint", torch::randint(0, 1000, {9})},
      {"randperm", torch::randperm(20)},
      {"dropout", torch::dropout(torch::ones({64}), 0.5, /*train=*/true)},
      {"bernoulli", torch::bernoulli(torch::full({16}, 0.3))},
  };
}

std::vector<uint64_t> DrawHost(GeneratorSet& host) {
  std::vector<uint64_t> out;
  for (const std::string& name : host.Names()) {
    for (int i = 0; i < 4; ++i) out.push_back((*host.Get(name))());
  }
  return out;
}

void ExpectSameDraws(const Draws& a, const Draws& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_TRUE(torch::equal(a[i].second, b[i].second))
        << a[i].first << ": " << a[i].second << " vs " << b[i].second;
  }
}

// The rand/randn/randint/randperm draws of `a` and `b` all differ (dropout masks may collide).
void ExpectDifferentDraws(const Draws& a, const Draws& b) {
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_FALSE(torch::equal(a[i].second, b[i].second)) << a[i].first;
  }
}

class RngStateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK(SetSeed(3, &host_));
    host_.Get("sampler");
    host_.Get("augment");
    DrawTorch();  // Move away from a freshly seeded state.
    torch::randn({1});
    DrawHost(host_);
  }
  GeneratorSet host_;
};

TEST_F(RngStateTest, CaptureDrawRestoreDrawReplaysEveryGenerator) {
  ASSERT_OK_AND_ASSIGN(RngState saved, CaptureRngState(host_));
  EXPECT_EQ(saved.cpu.scalar_type(), torch::kByte);
  EXPECT_EQ(saved.host.size(), 2u);
  EXPECT_EQ(saved.cuda.size(), static_cast<size_t>(NumCudaGenerators()));

  const Draws first = DrawTorch();
  const std::vector<uint64_t> first_host = DrawHost(host_);
  const Draws second = DrawTorch();  // no restore: the generators move on
  ExpectDifferentDraws(first, second);
  EXPECT_NE(DrawHost(host_), first_host);

  ASSERT_OK(RestoreRngState(saved, &host_));
  ExpectSameDraws(DrawTorch(), first);
  EXPECT_EQ(DrawHost(host_), first_host);

  // Restoring does not consume the record.
  ASSERT_OK(RestoreRngState(saved, &host_));
  ExpectSameDraws(DrawTorch(), first);
  EXPECT_EQ(DrawHost(host_), first_host);
}

TEST_F(RngStateTest, CaptureIsASnapshotNotAView) {
  ASSERT_OK_AND_ASSIGN(RngState saved, CaptureRngState(host_));
  const torch::Tensor copy = saved.cpu.clone();
  DrawTorch();
  EXPECT_TRUE(torch::equal(saved.cpu, copy));
}

TEST_F(RngStateTest, RestoreCreatesGeneratorsTheSetLacks) {
  ASSERT_OK_AND_ASSIGN(RngState saved, CaptureRngState(host_));
  const uint64_t expected = (*host_.Get("sampler"))();
  GeneratorSet fresh;
  ASSERT_OK(RestoreRngState(saved, &fresh));
  EXPECT_EQ(fresh.Names(), host_.Names());
  EXPECT_EQ((*fresh.Get("sampler"))(), expected);
}

TEST_F(RngStateTest, RestoreBringsBackTheBaseSeedOfLaterGenerators) {
  ASSERT_OK_AND_ASSIGN(RngState saved, CaptureRngState(host_));
  EXPECT_EQ(saved.host_base_seed, std::optional<uint64_t>(3));  // SetSeed(3) in SetUp
  GeneratorSet fresh;                                           // base seed 42
  ASSERT_OK(RestoreRngState(saved, &fresh));
  EXPECT_EQ(fresh.base_seed(), 3u);
  // A generator first asked for after the restore starts where the original run's would.
  const uint64_t expected = HostGenerator(DeriveHostSeed(3, "created_later"))();
  EXPECT_EQ((*fresh.Get("created_later"))(), expected);
  EXPECT_EQ((*host_.Get("created_later"))(), expected);

  // A record without a base seed (e.g. written by Python) leaves the set's base seed alone.
  saved.host_base_seed.reset();
  GeneratorSet other;
  other.Seed(9);
  ASSERT_OK(RestoreRngState(saved, &other));
  EXPECT_EQ(other.base_seed(), 9u);
}

TEST_F(RngStateTest, MissingHostGeneratorIsAnErrorAndChangesNothing) {
  ASSERT_OK_AND_ASSIGN(RngState saved, CaptureRngState(host_));
  saved.host.erase("augment");
  DrawTorch();
  ASSERT_OK_AND_ASSIGN(RngState before, CaptureRngState(host_));
  EXPECT_THAT(RestoreRngState(saved, &host_),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("no entry for host generator 'augment'")));
  ASSERT_OK_AND_ASSIGN(RngState after, CaptureRngState(host_));
  EXPECT_TRUE(torch::equal(after.cpu, before.cpu));
  EXPECT_EQ(after.host, before.host);
}

TEST_F(RngStateTest, NullHostRestoresOnlyTorch) {
  ASSERT_OK_AND_ASSIGN(RngState saved, CaptureRngState(host_));
  const Draws first = DrawTorch();
  const std::vector<uint64_t> host_draws = DrawHost(host_);
  ASSERT_OK(RestoreRngState(saved, nullptr));
  ExpectSameDraws(DrawTorch(), first);
  EXPECT_NE(DrawHost(host_), host_draws);
}

TEST_F(RngStateTest, BadStatesAreRejectedAndChangeNothing) {
  ASSERT_OK_AND_ASSIGN(RngState good, CaptureRngState(host_));
  DrawTorch();
  DrawHost(host_);
  ASSERT_OK_AND_ASSIGN(RngState before, CaptureRngState(host_));

  RngState missing_cpu = good;
  missing_cpu.cpu = torch::Tensor();
  EXPECT_THAT(
      RestoreRngState(missing_cpu, &host_),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("CPU generator state is missing")));

  RngState float_cpu = good;
  float_cpu.cpu = good.cpu.to(torch::kFloat);
  EXPECT_THAT(RestoreRngState(float_cpu, &host_),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("1-D uint8 CPU tensor")));

  RngState short_cpu = good;
  short_cpu.cpu = good.cpu.slice(0, 0, 10).clone();
  EXPECT_THAT(RestoreRngState(short_cpu, &host_),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("LibTorch rejected a saved generator state")));

  RngState bad_host = good;
  bad_host.host["sampler"] = "not a state";
  EXPECT_THAT(RestoreRngState(bad_host, &host_),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("host generator 'sampler'")));

  ASSERT_OK_AND_ASSIGN(RngState after, CaptureRngState(host_));
  EXPECT_TRUE(torch::equal(after.cpu, before.cpu));
  EXPECT_EQ(after.host, before.host);
}

TEST(RngStateCudaTest, CudaStatesFollowTheVisibleDevices) {
  GeneratorSet host;
  ASSERT_OK_AND_ASSIGN(RngState saved, CaptureRngState(host));
  ASSERT_EQ(saved.cuda.size(), static_cast<size_t>(NumCudaGenerators()));
  if (NumCudaGenerators() == 0) {
    // Without CUDA devices the CUDA part of a record is ignored, as HF does.
    saved.cuda = {torch::zeros({16}, torch::kByte), torch::zeros({16}, torch::kByte)};
    EXPECT_OK(RestoreRngState(saved, &host));
    return;
  }
  const auto cuda = torch::TensorOptions().device(torch::kCUDA, 0);
  const torch::Tensor first = torch::rand({8}, cuda).cpu();
  EXPECT_FALSE(torch::equal(torch::rand({8}, cuda).cpu(), first));
  ASSERT_OK(RestoreRngState(saved, &host));
  EXPECT_TRUE(torch::equal(torch::rand({8}, cuda).cpu(), first));

  RngState wrong_count = saved;
  wrong_count.cuda.push_back(saved.cuda[0]);
  EXPECT_THAT(RestoreRngState(wrong_count, &host),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("CUDA devices")));
}

}  // namespace
}  // namespace loom::rng
