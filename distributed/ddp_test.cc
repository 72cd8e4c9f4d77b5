#include "distributed/ddp.h"

#include <torch/torch.h>

#include <string>
#include <vector>

#include "base/free_port.h"
#include "base/status_matchers.h"
#include "distributed/collectives.h"
#include "distributed/multiprocess_testing.h"
#include "distributed/process_group.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::distributed {
namespace {

using ::loom::base::PickFreePort;
using ::loom::distributed::testing::JoinGroup;
using ::loom::distributed::testing::RunRanks;
using ::testing::Each;

constexpr int64_t kBatch = 3;  // rows per rank per micro-batch

struct Net : torch::nn::Module {
  explicit Net(bool extra = false) {
    a = register_module("a", torch::nn::Linear(6, 16));
    b = register_module("b", torch::nn::Linear(16, 3));
    u = register_module("u", torch::nn::Linear(3, 3));
    if (extra) register_module("extra", torch::nn::Linear(2, 2));
    stat = register_buffer("stat", torch::zeros({4}));
  }
  torch::Tensor Forward(const torch::Tensor& x, bool use_u) {
    torch::Tensor y = b(torch::tanh(a(x)));
    return use_u ? y + u(y) : y;
  }
  torch::nn::Linear a{nullptr}, b{nullptr}, u{nullptr};
  torch::Tensor stat;
};

struct Data {
  torch::Tensor x, y;
};

// The same rows on every rank: `micro` micro-batches of world * kBatch rows.
Data MakeData(int world, int micro) {
  torch::manual_seed(123);
  return {torch::randn({micro * world * kBatch, 6}), torch::randn({micro * world * kBatch, 3})};
}

// Rank r's rows of micro-batch m.
torch::Tensor Rows(const torch::Tensor& t, int world, int m, int r) {
  return t.narrow(0, (m * world + r) * kBatch, kBatch);
}

// A model initialised from `seed` (rank 0's, to compare with).
std::shared_ptr<Net> SeededModel(int seed) {
  torch::manual_seed(seed);
  return std::make_shared<Net>();
}

struct Scenario {
  int world = 2;
  int micro = 1;  // gradient accumulation steps
  DdpOptions options;
};

// DDP over `world` ranks with accumulation: every rank's grads equal the single-process grads
// of the whole (world * kBatch rows per micro-batch) batch, and are identical across ranks.
int RunGradientsMatch(int rank, int port, const Scenario& s) {
  absl::StatusOr<ProcessGroup> pg = JoinGroup(rank, s.world, port);
  CHILD_CHECK_OK(pg.status());
  // Different initial weights on every rank: DDP must broadcast rank 0's.
  auto model = SeededModel(1000 + rank);
  auto ddp = DistributedDataParallel::Create(*model, *pg, s.options);
  CHILD_CHECK_OK(ddp.status());
  auto reference = SeededModel(1000);
  for (size_t i = 0; i < model->parameters().size(); ++i) {
    CHILD_CHECK(torch::equal(model->parameters()[i], reference->parameters()[i]));
  }
  const Data data = MakeData(s.world, s.micro);
  for (int step = 0; step < 2; ++step) {  // two windows: the second starts from reset state
    model->zero_grad();
    reference->zero_grad();
    for (int m = 0; m < s.micro; ++m) {
      const bool sync = m == s.micro - 1;
      CHILD_CHECK_OK((*ddp)->BeforeForward(sync));
      torch::Tensor loss = torch::mse_loss(model->Forward(Rows(data.x, s.world, m, rank), false),
                                           Rows(data.y, s.world, m, rank)) /
                           s.micro;
      loss.backward();
      const int64_t before = (*ddp)->stats().allreduces;
      CHILD_CHECK_OK((*ddp)->AfterBackward());
      if (!sync) CHILD_CHECK((*ddp)->stats().allreduces == before);  // no_sync: no traffic
      torch::Tensor rows_x = data.x.narrow(0, m * s.world * kBatch, s.world * kBatch);
      torch::Tensor rows_y = data.y.narrow(0, m * s.world * kBatch, s.world * kBatch);
      (torch::mse_loss(reference->Forward(rows_x, false), rows_y) / s.micro).backward();
    }
    CHILD_CHECK((*ddp)->stats().allreduces == (step + 1) * (*ddp)->stats().bucket_count);
    const auto params = model->named_parameters();
    const auto want = reference->named_parameters();
    for (const auto& p : params) {
      if (p.key().rfind("u.", 0) == 0) {
        CHILD_CHECK(!p.value().grad().defined() ||
                    torch::equal(p.value().grad(), torch::zeros_like(p.value())));
        continue;
      }
      CHILD_CHECK(torch::allclose(p.value().grad(), want[p.key()].grad(), 1e-5, 1e-7));
      absl::StatusOr<std::vector<at::Tensor>> all = AllGather(*pg, p.value().grad());
      CHILD_CHECK_OK(all.status());
      for (const at::Tensor& g : *all) CHILD_CHECK(torch::equal(g, p.value().grad()));
    }
  }
  return 0;
}

void ExpectAllRanksPass(const Scenario& s) {
  ASSERT_OK_AND_ASSIGN(const int port, PickFreePort());
  std::vector<int> codes = RunRanks(s.world, absl::Seconds(60),
                                    [&](int rank) { return RunGradientsMatch(rank, port, s); });
  EXPECT_THAT(codes, Each(0));
}

// `u` is never used: its hook never fires, so these runs need find_unused_parameters.
DdpOptions Unused() { return DdpOptions().set_find_unused_parameters(true); }

TEST(DdpTest, TwoRanksMatchOneProcessWithTheWholeBatch) { ExpectAllRanksPass({2, 1, Unused()}); }

TEST(DdpTest, FourRanksWithAccumulationMatchOneProcess) { ExpectAllRanksPass({4, 2, Unused()}); }

TEST(DdpTest, ManySmallBucketsAndNoOverlapGiveTheSameGradients) {
  ExpectAllRanksPass({2, 2, Unused().set_first_bucket_mb(1e-4).set_bucket_cap_mb(2e-4)});
  ExpectAllRanksPass({2, 1, Unused().set_overlap(false).set_bucket_cap_mb(2e-4)});
}

TEST(DdpTest, BucketsFollowReverseParameterOrderAndTheCaps) {
  ASSERT_OK_AND_ASSIGN(const int port, PickFreePort());
  auto codes = RunRanks(2, absl::Seconds(60), [&](int rank) {
    absl::StatusOr<ProcessGroup> pg = JoinGroup(rank, 2, port);
    CHILD_CHECK_OK(pg.status());
    Net model;
    // 2e-4 MiB = 209 bytes: u.bias (12 B) + u.weight (36 B) + b.bias (12 B) fit, b.weight
    // (192 B) does not; first bucket 1e-5 MiB = 10 bytes: u.bias alone (larger, alone).
    auto ddp = DistributedDataParallel::Create(
        model, *pg, DdpOptions().set_first_bucket_mb(1e-5).set_bucket_cap_mb(2e-4));
    CHILD_CHECK_OK(ddp.status());
    const std::vector<std::vector<std::string>> want = {
        {"u.bias"}, {"u.weight", "b.bias"}, {"b.weight"}, {"a.bias"}, {"a.weight"}};
    CHILD_CHECK((*ddp)->BucketParameterNames() == want);
    CHILD_CHECK((*ddp)->stats().bytes_per_sync == (16 * 6 + 16 + 3 * 16 + 3 + 9 + 3) * 4);
    return 0;
  });
  EXPECT_THAT(codes, Each(0));
}

TEST(DdpTest, UnusedParametersWithoutTheFlagFailNamingThem) {
  ASSERT_OK_AND_ASSIGN(const int port, PickFreePort());
  auto codes = RunRanks(2, absl::Seconds(60), [&](int rank) {
    absl::StatusOr<ProcessGroup> pg = JoinGroup(rank, 2, port);
    CHILD_CHECK_OK(pg.status());
    Net model;
    auto ddp = DistributedDataParallel::Create(model, *pg);
    CHILD_CHECK_OK(ddp.status());
    CHILD_CHECK_OK((*ddp)->BeforeForward(true));
    model.Forward(torch::ones({2, 6}), false).sum().backward();
    absl::Status s = (*ddp)->AfterBackward();
    CHILD_CHECK(s.code() == absl::StatusCode::kFailedPrecondition);
    CHILD_CHECK(s.message().find("u.weight, u.bias") != std::string::npos);
    CHILD_CHECK(s.message().find("--ddp_find_unused_parameters true") != std::string::npos);
    return 0;
  });
  EXPECT_THAT(codes, Each(0));
}

// A parameter used on rank 1 only: its gradient is rank 1's divided by the world size on every
// rank (DDP averages zeros in), and a parameter used nowhere keeps no gradient.
TEST(DdpTest, ParameterUsedOnOneRankIsAveragedWithZeros) {
  ASSERT_OK_AND_ASSIGN(const int port, PickFreePort());
  auto codes = RunRanks(2, absl::Seconds(60), [&](int rank) {
    absl::StatusOr<ProcessGroup> pg = JoinGroup(rank, 2, port);
    CHILD_CHECK_OK(pg.status());
    auto model = SeededModel(0);
    auto ddp = DistributedDataParallel::Create(*model, *pg, Unused());
    CHILD_CHECK_OK(ddp.status());
    const Data data = MakeData(2, 1);
    CHILD_CHECK_OK((*ddp)->BeforeForward(true));
    torch::mse_loss(model->Forward(Rows(data.x, 2, 0, rank), rank == 1), Rows(data.y, 2, 0, rank))
        .backward();
    CHILD_CHECK_OK((*ddp)->AfterBackward());
    auto reference = SeededModel(0);
    torch::mse_loss(reference->Forward(Rows(data.x, 2, 0, 1), true), Rows(data.y, 2, 0, 1))
        .backward();
    CHILD_CHECK(
        torch::allclose(model->u->weight.grad(), reference->u->weight.grad() / 2, 1e-5, 1e-7));
    // A second window where nobody uses u: its grad stays as zero_grad left it.
    model->zero_grad(/*set_to_none=*/true);
    CHILD_CHECK_OK((*ddp)->BeforeForward(true));
    model->Forward(Rows(data.x, 2, 0, rank), false).sum().backward();
    CHILD_CHECK_OK((*ddp)->AfterBackward());
    CHILD_CHECK(!model->u->weight.grad().defined());
    CHILD_CHECK(model->a->weight.grad().defined());
    return 0;
  });
  EXPECT_THAT(codes, Each(0));
}

TEST(DdpTest, BuffersComeFromRankZeroAfterEverySynchronisedStep) {
  ASSERT_OK_AND_ASSIGN(const int port, PickFreePort());
  auto codes = RunRanks(2, absl::Seconds(60), [&](int rank) {
    absl::StatusOr<ProcessGroup> pg = JoinGroup(rank, 2, port);
    CHILD_CHECK_OK(pg.status());
    Net model;
    model.stat.fill_(rank + 1);
    auto ddp = DistributedDataParallel::Create(model, *pg);
    CHILD_CHECK_OK(ddp.status());
    CHILD_CHECK(torch::equal(model.stat, torch::full({4}, 1.0)));
    model.stat.fill_(10 * (rank + 1));
    CHILD_CHECK_OK((*ddp)->BeforeForward(false));  // the first forward syncs
    CHILD_CHECK(torch::equal(model.stat, torch::full({4}, 10.0)));
    // After a no_sync forward the next forward does not (DDP's require_forward_param_sync)...
    model.stat.fill_(rank + 5);
    CHILD_CHECK_OK((*ddp)->BeforeForward(true));
    CHILD_CHECK(torch::equal(model.stat, torch::full({4}, rank + 5.0)));
    // ... and after a synchronised one it does.
    CHILD_CHECK_OK((*ddp)->BeforeForward(false));
    CHILD_CHECK(torch::equal(model.stat, torch::full({4}, 5.0)));
    auto off =
        DistributedDataParallel::Create(model, *pg, DdpOptions().set_broadcast_buffers(false));
    CHILD_CHECK_OK(off.status());
    model.stat.fill_(rank);
    CHILD_CHECK_OK((*off)->BeforeForward(true));
    CHILD_CHECK(torch::equal(model.stat, torch::full({4}, static_cast<double>(rank))));
    return 0;
  });
  EXPECT_THAT(codes, Each(0));
}

TEST(DdpTest, DifferentModelsOnRanksAreRefused) {
  ASSERT_OK_AND_ASSIGN(const int port, PickFreePort());
  auto codes = RunRanks(2, absl::Seconds(60), [&](int rank) {
    absl::StatusOr<ProcessGroup> pg = JoinGroup(rank, 2, port);
    CHILD_CHECK_OK(pg.status());
    Net model(/*extra=*/rank == 1);
    auto ddp = DistributedDataParallel::Create(model, *pg);
    CHILD_CHECK(ddp.status().code() == absl::StatusCode::kFailedPrecondition);
    CHILD_CHECK(ddp.status().message().find("rank 1 has 8 parameters") != std::string::npos);
    return 0;
  });
  EXPECT_THAT(codes, Each(0));
}

TEST(DdpTest, OptionsFromTrainingArgumentsFollowHfWrapModel) {
  args::TrainingArguments args;
  DdpOptions o = DdpOptionsFromArgs(args);
  EXPECT_TRUE(o.find_unused_parameters);  // HF: not model.is_gradient_checkpointing
  EXPECT_TRUE(o.broadcast_buffers);
  EXPECT_EQ(o.bucket_cap_mb, 25);
  args.set_gradient_checkpointing(true);
  EXPECT_FALSE(DdpOptionsFromArgs(args).find_unused_parameters);
  args.set_ddp_find_unused_parameters(true);
  args.set_ddp_bucket_cap_mb(7);
  args.set_ddp_broadcast_buffers(false);
  o = DdpOptionsFromArgs(args);
  EXPECT_TRUE(o.find_unused_parameters);
  EXPECT_EQ(o.bucket_cap_mb, 7);
  EXPECT_FALSE(o.broadcast_buffers);
}

}  // namespace
}  // namespace loom::distributed
