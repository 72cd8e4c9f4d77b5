// ParamSwapper on real files: shards evicted at creation (no bytes in memory) and fetched back
// with their values, updates written when dirty and not when clean, read-ahead in both
// directions of travel, the max_in_cpu budget, buffer_size and nvme_path errors, and the
// scratch folder gone with the swapper.
#include "sharding/offload/param_swapper.h"

#include <sys/stat.h>
#include <torch/torch.h>

#include <cstdlib>
#include <string>

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::sharding {
namespace {

using ::loom::base::testing::StatusIs;
using ::testing::HasSubstr;

std::string Tmp() { return std::getenv("TEST_TMPDIR"); }

std::vector<at::Tensor> Shards() {
  torch::manual_seed(3);
  std::vector<at::Tensor> out;
  for (int64_t n : {1000, 5, 4096, 777}) out.push_back(torch::randn({n}));
  return out;
}

ParamSwapperOptions Options(int64_t max_in_cpu) {
  ParamSwapperOptions o;
  o.nvme_path = Tmp();
  o.aio.set_block_size(4096);
  o.buffer_count = 3;
  o.max_in_cpu = max_in_cpu;
  return o;
}

TEST(ParamSwapperTest, EvictsFetchesAndWritesBack) {
  std::vector<at::Tensor> shards = Shards();
  std::vector<at::Tensor> want;
  for (const auto& s : shards) want.push_back(s.clone());
  std::string folder;
  {
    ASSERT_OK_AND_ASSIGN(auto swapper, ParamSwapper::Create(Options(0), shards));
    folder = swapper->folder();
    EXPECT_THAT(swapper->Describe(), HasSubstr("NVMe swap: 4 parameter shard(s)"));
    EXPECT_EQ(swapper->resident_elements(), 0);
    for (const auto& s : shards) EXPECT_EQ(s.storage().nbytes(), 0u);
    // Forward order, then backward: values back each time, read-ahead on the way.
    for (int pass = 0; pass < 2; ++pass) {
      for (size_t j = 0; j < shards.size(); ++j) {
        const size_t k = pass == 0 ? j : shards.size() - 1 - j;
        ASSERT_OK(swapper->Fetch(shards[k]));
        EXPECT_TRUE(torch::equal(shards[k], want[k])) << "pass " << pass << " shard " << k;
        EXPECT_EQ(reinterpret_cast<uintptr_t>(shards[k].data_ptr()) % 4096, 0u);
        ASSERT_OK(swapper->Evict(shards[k], /*dirty=*/false));
        EXPECT_EQ(shards[k].storage().nbytes(), 0u);
      }
    }
    // An update survives eviction when dirty...
    ASSERT_OK(swapper->Fetch(shards[2]));
    shards[2].add_(1);
    want[2].add_(1);
    ASSERT_OK(swapper->Evict(shards[2], /*dirty=*/true));
    ASSERT_OK(swapper->Fetch(shards[2]));
    EXPECT_TRUE(torch::equal(shards[2], want[2]));
    // ...and not when clean (the file is the truth).
    shards[2].add_(5);
    ASSERT_OK(swapper->Evict(shards[2], /*dirty=*/false));
    ASSERT_OK(swapper->Fetch(shards[2]));
    EXPECT_TRUE(torch::equal(shards[2], want[2]));
    ASSERT_OK(swapper->Evict(shards[2], false));
    // A shard the swapper does not hold: no-op.
    at::Tensor other = torch::ones({3});
    EXPECT_OK(swapper->Fetch(other));
    EXPECT_OK(swapper->Evict(other, true));
    EXPECT_TRUE(torch::equal(other, torch::ones({3})));
  }
  struct stat st;
  EXPECT_NE(::stat(folder.c_str(), &st), 0) << folder << " left behind";
}

TEST(ParamSwapperTest, MaxInCpuKeepsShardsResident) {
  std::vector<at::Tensor> shards = Shards();
  const at::Tensor first = shards[0].clone();
  ASSERT_OK_AND_ASSIGN(auto swapper, ParamSwapper::Create(Options(1000000), shards));
  EXPECT_EQ(swapper->resident_elements(), 1000 + 5 + 4096 + 777);
  EXPECT_TRUE(torch::equal(shards[0], first));
  // Dirty evictions still write the file.
  shards[0].mul_(2);
  ASSERT_OK(swapper->Evict(shards[0], true));
  EXPECT_TRUE(torch::equal(shards[0], first * 2));
}

TEST(ParamSwapperTest, BadInput) {
  ParamSwapperOptions o = Options(0);
  o.buffer_size = 4000;
  EXPECT_THAT(ParamSwapper::Create(o, Shards()),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("offload_param.buffer_size: a parameter shard of 4096")));
  o = Options(0);
  o.nvme_path = Tmp() + "/none";
  EXPECT_THAT(ParamSwapper::Create(o, Shards()),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr(Tmp() + "/none")));
  o = Options(0);
  EXPECT_THAT(ParamSwapper::Create(o, {torch::randn({10}).slice(0, 2)}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("own storage")));
}

}  // namespace
}  // namespace loom::sharding
