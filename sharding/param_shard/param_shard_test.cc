// ParamShardStrategy on a tiny BERT (3 BertLayers) at 2 ranks, chosen through CreateStrategy
// from --fsdp / --deepspeed as the Trainer does: which parameters become units and which stay
// in the root, the bytes of full parameters held at once during a step with and without
// prefetching (FSDP: root + 1 unit without, root + 2 units with; shard_grad_op: every unit
// until backward), that evaluation (no gradient) leaves the units released, and that whole
// parameters are available between BeginFullParameters and EndFullParameters.
#include "sharding/param_shard/param_shard.h"

#include <torch/torch.h>

#include "base/free_port.h"
#include "base/status_matchers.h"
#include "distributed/multiprocess_testing.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "models/bert/bert_for_sequence_classification.h"
#include "precision/training_precision.h"
#include "sharding/create_strategy.h"
#include "sharding/param_shard/tiny_bert_testing.h"

namespace loom::sharding {
namespace {

using models::bert::BertForSequenceClassification;

std::shared_ptr<BertForSequenceClassification> Tiny() { return testing::TinyBert(); }

data::Batch Batch(int rank) {
  at::Generator gen = at::detail::createCPUGenerator(3 + rank);
  return {{"input_ids", torch::randint(1, 40, {2, 6}, gen, at::kLong)},
          {"labels", torch::tensor({0, 1})}};
}

int Child(int rank, int port, const std::function<void(args::TrainingArguments&)>& configure,
          int64_t want_units_at_peak, int64_t want_prefetches_per_step) {
  auto pg = distributed::testing::JoinGroup(rank, 2, port);
  CHILD_CHECK_OK(pg.status());
  auto model = Tiny();
  torch::optim::AdamW opt(model->parameters(), torch::optim::AdamWOptions(1e-3));
  auto precision = precision::TrainingPrecision::Create(precision::PrecisionPolicy{});
  CHILD_CHECK_OK(precision.status());
  args::TrainingArguments args;
  configure(args);
  auto created = CreateStrategy(StrategyOptions()
                                    .set_args(&args)
                                    .set_model(model.get())
                                    .set_optimizer(&opt)
                                    .set_precision(precision->get())
                                    .set_process_group(&*pg));
  CHILD_CHECK_OK(created.status());
  auto* strategy = dynamic_cast<ParamShardStrategy*>(created->get());
  CHILD_CHECK(strategy != nullptr);
  const FullShardRunner& runner = strategy->runner();
  // The root (embeddings, pooler, classifier) and the three BertLayers.
  CHILD_CHECK(runner.unit_count() == 4);
  CHILD_CHECK(runner.persistent(0));
  int64_t root = 0, unit = 0;
  for (size_t p : runner.unit_pieces(0)) root += runner.pieces()[p].flat->full_bytes();
  for (size_t p : runner.unit_pieces(1)) unit += runner.pieces()[p].flat->full_bytes();
  for (size_t u = 1; u < 4; ++u) {
    CHILD_CHECK(runner.unit_name(u) == absl::StrCat("bert.encoder.layer.", u - 1));
    for (size_t p : runner.unit_pieces(u)) CHILD_CHECK(!runner.pieces()[p].flat->gathered());
  }
  FullShardRunner& mutable_runner = strategy->runner();
  for (int step = 0; step < 2; ++step) {
    mutable_runner.ResetPeak();
    CHILD_CHECK_OK(strategy->BeforeForward(true));
    auto out = model->TryForward(Batch(rank));
    CHILD_CHECK_OK(out.status());
    out->loss.backward();
    CHILD_CHECK_OK(strategy->AfterBackward());
    CHILD_CHECK(runner.peak_gathered_bytes() == root + want_units_at_peak * unit);
    CHILD_CHECK(runner.prefetches() == (step + 1) * want_prefetches_per_step);
    CHILD_CHECK_OK(strategy->ClipGradients(1.0).status());
    CHILD_CHECK_OK(strategy->OptimizerStep().status());
    strategy->ZeroGrad();
    for (size_t u = 1; u < 4; ++u) {
      for (size_t p : runner.unit_pieces(u)) CHILD_CHECK(!runner.pieces()[p].flat->gathered());
    }
  }
  // Evaluation: no gradients, every unit released after its forward.
  {
    torch::NoGradGuard no_grad;
    CHILD_CHECK_OK(model->TryForward(Batch(rank)).status());
  }
  for (size_t u = 1; u < 4; ++u) {
    for (size_t p : runner.unit_pieces(u)) CHILD_CHECK(!runner.pieces()[p].flat->gathered());
  }
  // Whole parameters on every rank, equal everywhere.
  CHILD_CHECK_OK(strategy->BeginFullParameters());
  const at::Tensor* found =
      model->named_parameters().find("bert.encoder.layer.1.intermediate.dense.weight");
  CHILD_CHECK(found != nullptr);
  at::Tensor w = found->detach().clone();
  at::Tensor sum = w.clone();
  CHILD_CHECK_OK(distributed::AllReduce(*pg, sum));
  CHILD_CHECK(at::equal(sum, w * 2));
  CHILD_CHECK_OK(strategy->EndFullParameters(false));
  return 0;
}

void RunTwoRanks(const std::function<void(args::TrainingArguments&)>& configure, int64_t units,
                 int64_t prefetches) {
  ASSERT_OK_AND_ASSIGN(const int port, base::PickFreePort());
  ASSERT_GT(port, 0);
  EXPECT_THAT(distributed::testing::RunRanks(
                  2, absl::Seconds(60),
                  [&](int rank) { return Child(rank, port, configure, units, prefetches); }),
              ::testing::Each(0));
}

std::function<void(args::TrainingArguments&)> Fsdp(const std::string& mode,
                                                   const std::string& extra) {
  return [=](args::TrainingArguments& a) {
    a.add_fsdp(mode);
    a.add_fsdp("auto_wrap");
    a.set_fsdp_config(
        absl::StrCat(R"({"transformer_layer_cls_to_wrap": ["BertLayer"])", extra, "}"));
  };
}

// Peaks in units besides the root; prefetches per step (3 units: 2 in each direction).
TEST(ParamShardTest, FullShardHoldsOneUnitAtATime) { RunTwoRanks(Fsdp("full_shard", ""), 1, 0); }

TEST(ParamShardTest, ForwardPrefetchHoldsTheNextUnitToo) {
  RunTwoRanks(Fsdp("full_shard", R"(, "forward_prefetch": true)"), 2, 2);
}

// backward_pre: the next unit's gather starts before this unit's backward (two held);
// backward_post: after this unit is resharded, while its gradients are reduced (one held).
TEST(ParamShardTest, BackwardPrefetch) {
  RunTwoRanks(Fsdp("full_shard", R"(, "backward_prefetch": "backward_pre")"), 2, 2);
  RunTwoRanks(Fsdp("full_shard", R"(, "backward_prefetch": "backward_post")"), 1, 2);
}

TEST(ParamShardTest, ShardGradOpKeepsUnitsUntilBackward) {
  RunTwoRanks(Fsdp("shard_grad_op", ""), 3, 0);
}

// DeepSpeed's stage3_prefetch_bucket_size: on by default (forward and backward), off at 0 or
// below a unit's size (a BertLayer here has more than 100 elements).
TEST(ParamShardTest, Zero3PrefetchBucket) {
  const auto zero3 = [](const std::string& keys) {
    return [keys](args::TrainingArguments& a) {
      a.set_deepspeed(absl::StrCat(
          R"({"zero_optimization": {"stage": 3, "stage3_param_persistence_threshold": 0)", keys,
          "}}"));
    };
  };
  RunTwoRanks(zero3(""), 2, 4);
  RunTwoRanks(zero3(R"(, "stage3_prefetch_bucket_size": 0)"), 1, 0);
  RunTwoRanks(zero3(R"(, "stage3_prefetch_bucket_size": 100)"), 1, 0);
  // stage3_max_live_parameters bounds what a prefetch may add: room for the root and one
  // layer only (the tiny BERT's root has 1,202 elements, a layer 1,927), so none.
  RunTwoRanks(zero3(R"(, "stage3_max_live_parameters": 4000)"), 1, 0);
  RunTwoRanks(zero3(R"(, "stage3_max_live_parameters": 6000)"), 2, 4);
}

}  // namespace
}  // namespace loom::sharding
