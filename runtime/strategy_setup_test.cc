#include "runtime/strategy_setup.h"

#include <torch/torch.h>

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "modeling/testing_models.h"
#include "sharding/param_shard/tiny_bert_testing.h"

namespace loom::runtime {
namespace {

using ::loom::base::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

// A strategy that only reports what it is.
class Reporting : public sharding::ShardingStrategy {
 public:
  Reporting(std::string name, sharding::StrategyCapabilities can)
      : name_(std::move(name)), can_(can) {}
  std::string Name() const override { return name_; }
  sharding::StrategyCapabilities Capabilities() const override { return can_; }
  sharding::DataParallelTopology Topology() const override {
    return sharding::DataParallelTopology::PerRank(1, 0);
  }
  absl::Status BeforeForward(bool) override { return absl::OkStatus(); }
  absl::Status AfterBackward() override { return absl::OkStatus(); }
  absl::StatusOr<std::optional<double>> ClipGradients(double) override { return std::nullopt; }
  absl::StatusOr<bool> OptimizerStep() override { return true; }
  void ZeroGrad() override {}
  sharding::ModelStateBytes StateBytes() const override { return {}; }

 private:
  std::string name_;
  sharding::StrategyCapabilities can_;
};

const absl::Status kOom = absl::ResourceExhaustedError("DefaultCPUAllocator: can't allocate memory");

// The advice follows what the strategy does, not its name: a ZeRO-3 run with offload (whose
// name is "ZeRO-3 (offload: optimizer cpu)") is not told to try ZeRO-3.
TEST(OutOfMemoryAdviceTest, FollowsTheCapabilitiesNotTheName) {
  sharding::StrategyCapabilities zero3_offload;
  zero3_offload.shards_parameters = zero3_offload.shards_gradients = true;
  zero3_offload.shards_optimizer_state = zero3_offload.offloads = true;
  EXPECT_THAT(WithOutOfMemoryAdvice(kOom, Reporting("ZeRO-3 (offload: optimizer cpu)",
                                                    zero3_offload)),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       AllOf(HasSubstr("can't allocate memory"),
                             HasSubstr("data parallelism: ZeRO-3 (offload: optimizer cpu)"),
                             Not(HasSubstr("stage 2 or 3")), Not(HasSubstr("offload_optimizer")))));
  sharding::StrategyCapabilities zero3 = zero3_offload;
  zero3.offloads = false;
  EXPECT_THAT(WithOutOfMemoryAdvice(kOom, Reporting("ZeRO-3", zero3)),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       AllOf(Not(HasSubstr("stage 2 or 3")), HasSubstr("offload_optimizer"))));
  EXPECT_THAT(WithOutOfMemoryAdvice(kOom, Reporting("DDP", {})),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       HasSubstr("--fsdp \"full_shard auto_wrap\", or --deepspeed with "
                                 "zero_optimization stage 2 or 3")));
}

// The real ZeRO-3-with-offload strategy reports what the advice reads.
TEST(OutOfMemoryAdviceTest, ZeroThreeWithOffloadReportsShardingAndOffload) {
  std::shared_ptr<modeling::Model> model = sharding::testing::TinyBert();
  torch::optim::AdamW optimizer(model->parameters(), torch::optim::AdamWOptions(0.1));
  auto precision = *precision::TrainingPrecision::Create(precision::PrecisionPolicy{});
  args::TrainingArguments args;
  args.set_deepspeed(
      R"({"zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu"}},)"
      R"( "zero_force_ds_cpu_optimizer": false})");
  ParallelContext parallel;
  ASSERT_OK_AND_ASSIGN(auto strategy, SetUpStrategy({.args = &args,
                                                     .model = model.get(),
                                                     .optimizer = &optimizer,
                                                     .precision = precision.get(),
                                                     .parallel = &parallel}));
  const sharding::StrategyCapabilities can = strategy->Capabilities();
  EXPECT_TRUE(can.shards_parameters);
  EXPECT_TRUE(can.offloads);
  EXPECT_THAT(strategy->Name(), HasSubstr("offload"));
  EXPECT_THAT(WithOutOfMemoryAdvice(kOom, *strategy), StatusIs(absl::StatusCode::kResourceExhausted,
                                                              Not(HasSubstr("stage 2 or 3"))));
}

// One DeepSpeed planning function: "auto" hidden-size keys from the model's config.json as HF's
// trainer_config_finalize reads it (text_config here).
TEST(PlanDeepSpeedForModelTest, HiddenSizeFromTextConfig) {
  class TextConfig : public modeling::testing::LinearRegressor {
   public:
    TextConfig() : LinearRegressor(3) {}
    std::string ConfigJson() const override { return R"({"text_config": {"hidden_sizes": [8, 16]}})"; }
  } model;
  args::TrainingArguments args;
  args.set_per_device_train_batch_size(2);
  args.set_deepspeed(R"({"zero_optimization": {"stage": 2, "reduce_bucket_size": "auto"}})");
  ASSERT_OK_AND_ASSIGN(std::optional<sharding::DeepSpeedPlan> plan,
                       PlanDeepSpeedForModel(args, 1, model, 10));
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->comm.reduce_bucket_size, 16 * 16);
  args::TrainingArguments none;
  ASSERT_OK_AND_ASSIGN(plan, PlanDeepSpeedForModel(none, 1, model, 10));
  EXPECT_FALSE(plan.has_value());
}

class BadTopology : public sharding::StrategyFactory {
 public:
  sharding::DataParallelTopology Topology(const args::TrainingArguments&, int world,
                                          int rank) const override {
    sharding::DataParallelTopology t = sharding::DataParallelTopology::PerRank(world, rank);
    t.data_parallel_size = world + 1;
    return t;
  }
  absl::StatusOr<std::unique_ptr<sharding::ShardingStrategy>> Create(
      const sharding::StrategyOptions&) const override {
    return absl::UnimplementedError("never built");
  }
};

TEST(DataParallelTopologyForTest, ChecksTheFactorysAnswer) {
  ParallelContext parallel;
  args::TrainingArguments args;
  ASSERT_OK_AND_ASSIGN(sharding::DataParallelTopology t,
                       DataParallelTopologyFor(args, parallel, nullptr));
  EXPECT_EQ(t.world_size, 1);
  EXPECT_EQ(t.data_parallel_size, 1);
  EXPECT_THAT(DataParallelTopologyFor(args, parallel, std::make_shared<BadTopology>()),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("data-parallel size 2")));
}

TEST(DataParallelTopologyTest, ReplicasAndTheirLeaders) {
  sharding::DataParallelTopology t;
  t.world_size = 4;
  t.data_parallel_size = 2;
  t.replica_of_rank = {0, 0, 1, 1};
  EXPECT_TRUE(t.LeadsReplica(0));
  EXPECT_FALSE(t.LeadsReplica(1));
  EXPECT_TRUE(t.LeadsReplica(2));
  EXPECT_FALSE(t.LeadsReplica(3));
  EXPECT_EQ(t.ReplicaOf(3), 1);
  const sharding::DataParallelTopology per_rank = sharding::DataParallelTopology::PerRank(3, 2);
  EXPECT_EQ(per_rank.ReplicaOf(2), 2);
  EXPECT_TRUE(per_rank.LeadsReplica(1));
}

}  // namespace
}  // namespace loom::runtime
