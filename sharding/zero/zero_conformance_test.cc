// ZeroStrategy in the conformance suite: ZeRO-1 and ZeRO-2 through a --deepspeed config, at 1,
// 2 and 4 ranks (4 ranks pad the suite's 53 trainable elements to 56).
#include <torch/optim/adamw.h>

#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "base/free_port.h"
#include "base/status_matchers.h"
#include "distributed/multiprocess_testing.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "modeling/testing_models.h"
#include "precision/training_precision.h"
#include "sharding/create_strategy.h"
#include "sharding/strategy_conformance.h"
#include "sharding/zero/zero.h"

namespace loom::sharding::testing {
namespace {

// Full parameters on every rank; the fp32 master partition, its gradient and AdamW's moments
// of it; stage 1 also keeps the full gradients until ZeroGrad, stage 2 drops them.
std::function<ModelStateBytes(const SuiteModel&)> ZeroBytes(int stage) {
  return [stage](const SuiteModel& m) {
    const int64_t part = ZeroAlignedNumel(m.trainable_numel, m.world_size) / m.world_size;
    return ModelStateBytes{.parameters = 4 * m.all_numel,
                           .gradients = 4 * part + (stage == 1 ? 4 * m.trainable_numel : 0),
                           .optimizer_states = 8 * part + 4,
                           .master_weights = 4 * part};
  };
}

// `zero_keys` / `top_keys`: more of the config's zero_optimization / top-level keys.
void RegisterZero(int stage, int world, const std::string& suffix = "",
                  const std::string& zero_keys = "", const std::string& top_keys = "") {
  RegisterStrategyConformanceTests({.name = absl::StrCat("Zero", stage, "World", world, suffix),
                                    .world_size = world,
                                    .strategy_name = absl::StrCat("ZeRO-", stage),
                                    .configure =
                                        [=](args::TrainingArguments& a) {
                                          a.set_deepspeed(
                                              absl::StrCat(R"({"zero_optimization": {"stage": )",
                                                           stage, zero_keys, "}", top_keys, "}"));
                                        },
                                    .expected_bytes = ZeroBytes(stage)});
}

[[maybe_unused]] const bool kRegistered = [] {
  RegisterZero(1, 2);
  RegisterZero(2, 1);
  RegisterZero(2, 2);
  RegisterZero(2, 4);
  // Buckets smaller than a partition (28 elements per rank at 2 ranks, 14 at 4): several
  // reduce-scatters and all-gathers per group, the last one short.
  RegisterZero(1, 2, "SmallBuckets", R"(, "reduce_bucket_size": 10, "allgather_bucket_size": 6)");
  RegisterZero(2, 4, "SmallBuckets", R"(, "reduce_bucket_size": 12, "allgather_bucket_size": 20)");
  // DeepSpeed's all-reduce path with a predivide factor, and per-rank broadcasts.
  RegisterZero(2, 2, "AllReducePredivide",
               R"(, "reduce_scatter": false, "allgather_partitions": false)",
               R"(, "gradient_predivide_factor": 2.0)");
  RegisterZero(1, 4, "AllReducePrescale",
               R"(, "reduce_scatter": false, "allgather_partitions": false,
                  "reduce_bucket_size": 9)",
               R"(, "prescale_gradients": true)");
  // overlap_comm: buckets reduced to their owners during backward.
  RegisterZero(2, 2, "Overlap", R"(, "overlap_comm": true, "reduce_bucket_size": 10)");
  RegisterZero(1, 4, "Overlap", R"(, "overlap_comm": true, "reduce_bucket_size": 7)");
  RegisterZero(2, 4, "Overlap", R"(, "overlap_comm": true)");
  return true;
}();

// Ranks that start from different weights all train from rank 0's (DeepSpeed's engine
// broadcasts them), so the all-gathered parameters never mix two initialisations.
TEST(ZeroStrategyTest, EveryRankStartsFromRankZerosWeights) {
  ASSERT_OK_AND_ASSIGN(const int port, base::PickFreePort());
  auto codes = distributed::testing::RunRanks(2, absl::Seconds(60), [&](int rank) {
    auto pg = distributed::testing::JoinGroup(rank, 2, port);
    CHILD_CHECK_OK(pg.status());
    torch::manual_seed(100 + rank);  // a different model on every rank
    auto model = std::make_shared<modeling::testing::LinearLayer>(5, 3);
    torch::optim::AdamW opt(model->parameters(), torch::optim::AdamWOptions(0.1));
    auto precision = precision::TrainingPrecision::Create(precision::PrecisionPolicy{});
    CHILD_CHECK_OK(precision.status());
    args::TrainingArguments args;
    args.set_deepspeed(R"({"zero_optimization": {"stage": 2}})");
    auto strategy = CreateStrategy(StrategyOptions()
                                       .set_args(&args)
                                       .set_model(model.get())
                                       .set_optimizer(&opt)
                                       .set_precision(precision->get())
                                       .set_process_group(&*pg));
    CHILD_CHECK_OK(strategy.status());
    torch::manual_seed(100);  // rank 0's model
    modeling::testing::LinearLayer rank0(5, 3);
    CHILD_CHECK(at::equal(model->weight, rank0.weight));
    CHILD_CHECK(at::equal(model->bias, rank0.bias));
    return 0;
  });
  EXPECT_THAT(codes, ::testing::Each(0));
}

TEST(ZeroAlignedNumelTest, DeepSpeedsPadding) {
  EXPECT_EQ(ZeroAlignedNumel(53, 1), 54);
  EXPECT_EQ(ZeroAlignedNumel(53, 2), 56);
  EXPECT_EQ(ZeroAlignedNumel(56, 4), 56);
  EXPECT_EQ(ZeroAlignedNumel(57, 4), 64);
  EXPECT_EQ(ZeroAlignedNumel(0, 2), 0);
}

}  // namespace
}  // namespace loom::sharding::testing
