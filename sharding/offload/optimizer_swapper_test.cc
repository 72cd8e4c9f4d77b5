// OptimizerSwapper against the same optimizer kept in memory: bitwise equal parameters and
// state over several steps for AdamW and Adagrad, with several sub-groups and buffer counts;
// between steps nothing of the state is in memory and each sub-group's file is on disk;
// SwapInAll / SwapOutAll round trips; the scratch folder goes with the swapper; every bad
// input is a clear error naming the key and the path.
#include "sharding/offload/optimizer_swapper.h"

#include <sys/stat.h>
#include <torch/torch.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "optim/fused_cpu_optim.h"
#include "optim/param_state.h"

namespace loom::sharding {
namespace {

using ::loom::base::testing::StatusIs;
using ::testing::HasSubstr;

std::string Tmp() { return std::getenv("TEST_TMPDIR"); }

std::vector<torch::Tensor> Shards() {
  torch::manual_seed(11);
  std::vector<torch::Tensor> out;
  for (int64_t n : {1000, 37, 2500, 4096, 3}) out.push_back(torch::randn({n}));
  return out;
}

void SetGrads(std::vector<torch::Tensor>& ps, int step) {
  torch::manual_seed(100 + step);
  for (auto& p : ps) p.mutable_grad() = torch::randn(p.sizes());
}

int64_t FileSize(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 ? st.st_size : -1;
}

template <typename Opt, typename Options, typename Get>
void CheckAgainstMemory(Options options, int64_t sub_group_size, int64_t buffer_count,
                        size_t want_groups, const Get& state_of) {
  auto ref_p = Shards();
  Opt ref(ref_p, options);
  auto got_p = Shards();
  Opt got(got_p, options);
  OptimizerSwapperOptions o;
  o.nvme_path = Tmp();
  o.aio.set_block_size(4096).set_queue_depth(4);
  o.buffer_count = buffer_count;
  o.sub_group_size = sub_group_size;
  std::string folder;
  {
    ASSERT_OK_AND_ASSIGN(auto swapper, OptimizerSwapper::Create(o, &got, got_p));
    folder = swapper->folder();
    EXPECT_EQ(swapper->num_sub_groups(), want_groups);
    EXPECT_THAT(swapper->Describe(), HasSubstr("NVMe swap: "));
    for (int s = 0; s < 4; ++s) {
      SetGrads(ref_p, s);
      SetGrads(got_p, s);
      ref.step();
      ASSERT_OK(swapper->Step([&] {
        got.step();
        return absl::OkStatus();
      }));
      EXPECT_EQ(swapper->resident_bytes(), 0) << "step " << s;
      for (size_t g = 0; g < want_groups; ++g) {
        EXPECT_GT(FileSize(folder + "/sub_group" + std::to_string(g) + ".swp"), 0);
      }
      for (size_t i = 0; i < got_p.size(); ++i) {
        ASSERT_TRUE(torch::equal(got_p[i], ref_p[i])) << "param " << i << " step " << s;
        EXPECT_FALSE(state_of(got, got_p[i]).defined()) << "state in memory between steps";
      }
    }
    // Visited one sub-group at a time, unchanged: each one's state is in memory only while
    // its turn runs, and the optimizer sees only its shards.
    std::vector<size_t> visited;
    ASSERT_OK(swapper->ForEachSubGroup(
        [&](const std::vector<size_t>& shards) {
          size_t narrowed = 0;
          for (const auto& group : got.param_groups()) narrowed += group.params().size();
          EXPECT_EQ(narrowed, shards.size());
          for (size_t i : shards) {
            visited.push_back(i);
            EXPECT_TRUE(torch::equal(state_of(got, got_p[i]), state_of(ref, ref_p[i]))) << i;
          }
          // At most this sub-group and the next (read ahead): with sub-groups of <= 3000,
          // {2500} and {4096} at 8 bytes an element, block-aligned, 53248 bytes; all of them
          // would be 69632.
          if (sub_group_size == 3000) EXPECT_LE(swapper->resident_bytes(), 53248);
          return absl::OkStatus();
        },
        /*dirty=*/false));
    EXPECT_EQ(visited, (std::vector<size_t>{0, 1, 2, 3, 4}));
    EXPECT_EQ(swapper->resident_bytes(), 0);
    EXPECT_EQ(got.param_groups()[0].params().size(), got_p.size());
    // Made anew in each turn (dirty, as loading a checkpoint does), then read back.
    ASSERT_OK(swapper->ForEachSubGroup(
        [&](const std::vector<size_t>& shards) {
          for (size_t i : shards) state_of(got, got_p[i]).mul_(2);
          return absl::OkStatus();
        },
        /*dirty=*/true));
    for (size_t i = 0; i < ref_p.size(); ++i) state_of(ref, ref_p[i]).mul_(2);
    ASSERT_OK(swapper->SwapInAll());
    EXPECT_GT(swapper->resident_bytes(), 0);
    for (size_t i = 0; i < got_p.size(); ++i) {
      EXPECT_TRUE(torch::equal(state_of(got, got_p[i]), state_of(ref, ref_p[i]))) << i;
    }
    ASSERT_OK(swapper->SwapOutAll());
    EXPECT_EQ(swapper->resident_bytes(), 0);
  }
  struct stat st;
  EXPECT_NE(::stat(folder.c_str(), &st), 0) << folder << " left behind";
}

TEST(OptimizerSwapperTest, AdamWEqualsInMemory) {
  const auto get = [](torch::optim::Optimizer& opt, const at::Tensor& p) {
    auto it = opt.state().find(optim::ParamStateKey(p));
    return static_cast<torch::optim::AdamWParamState&>(*it->second).exp_avg_sq();
  };
  const auto options = torch::optim::AdamWOptions(1e-2).weight_decay(0.1);
  // Shards of 1000, 37, 2500, 4096, 3 elements: sub-groups of <= 3000 -> {1000, 37}, {2500},
  // {4096}, {3}; of 1e9 -> one.
  for (int64_t buffers : {1, 2, 4}) {
    CheckAgainstMemory<optim::FusedCpuAdamW>(options, 3000, buffers, 4, get);
  }
  CheckAgainstMemory<optim::FusedCpuAdamW>(options, 1000000000, 4, 1, get);
  CheckAgainstMemory<torch::optim::AdamW>(options, 3000, 2, 4, get);
}

TEST(OptimizerSwapperTest, AdagradEqualsInMemory) {
  const auto get = [](torch::optim::Optimizer& opt, const at::Tensor& p) {
    auto it = opt.state().find(optim::ParamStateKey(p));
    return static_cast<torch::optim::AdagradParamState&>(*it->second).sum();
  };
  CheckAgainstMemory<optim::FusedCpuAdagrad>(torch::optim::AdagradOptions(1e-2), 3000, 3, 4,
                                             get);
}

TEST(OptimizerSwapperTest, BadInput) {
  auto p = Shards();
  optim::FusedCpuAdamW opt(p, torch::optim::AdamWOptions(1e-3));
  OptimizerSwapperOptions o;
  o.nvme_path = Tmp() + "/missing";
  EXPECT_THAT(OptimizerSwapper::Create(o, &opt, p),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("zero_optimization.offload_optimizer.nvme_path: " + Tmp() +
                                 "/missing")));
  std::ofstream(Tmp() + "/plain") << "x";
  o.nvme_path = Tmp() + "/plain";
  EXPECT_THAT(OptimizerSwapper::Create(o, &opt, p),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("is not a folder")));
  // A folder that takes no new files (sysfs refuses them even to root).
  o.nvme_path = "/sys";
  EXPECT_THAT(OptimizerSwapper::Create(o, &opt, p),
              StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr("/sys")));
  o.nvme_path = Tmp();
  o.aio.set_block_size(1000);
  EXPECT_THAT(OptimizerSwapper::Create(o, &opt, p),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("aio.block_size: 1000")));
  o.aio.set_block_size(4096);
  o.buffer_count = 0;
  EXPECT_THAT(OptimizerSwapper::Create(o, &opt, p),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("buffer_count")));
  o.buffer_count = 4;
  torch::optim::SGD sgd(p, torch::optim::SGDOptions(0.1));
  EXPECT_THAT(OptimizerSwapper::Create(o, &sgd, p),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("Adam, AdamW or Adagrad")));
}

}  // namespace
}  // namespace loom::sharding
