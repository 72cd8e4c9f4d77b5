#include "examples/synthetic/synthetic_task.h"

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::examples::synthetic {
namespace {

using ::loom::base::testing::StatusIs;
using ::testing::HasSubstr;

TEST(SyntheticTaskTest, LabelsFollowTheRuleAndSeedsReproduce) {
  SyntheticTaskOptions o;
  o.set_num_examples(50).set_seed(7);
  ASSERT_OK_AND_ASSIGN(auto a, MakeSyntheticDataset(o));
  ASSERT_OK_AND_ASSIGN(auto b, MakeSyntheticDataset(o));
  ASSERT_OK_AND_ASSIGN(auto c, MakeSyntheticDataset(SyntheticTaskOptions(o).set_seed(8)));
  const at::Tensor ids = a->columns().at("input_ids");
  EXPECT_EQ(ids.sizes(), (std::vector<int64_t>{50, 16}));
  EXPECT_TRUE(ids.equal(b->columns().at("input_ids")));
  EXPECT_FALSE(ids.equal(c->columns().at("input_ids")));
  EXPECT_GE(ids.min().item<int64_t>(), 0);
  EXPECT_LT(ids.max().item<int64_t>(), 64);
  const at::Tensor labels = a->columns().at("labels");
  for (int64_t i = 0; i < 50; ++i) {
    int64_t counts[4] = {0, 0, 0, 0};
    for (int64_t j = 0; j < 16; ++j) ++counts[ids[i][j].item<int64_t>() % 4];
    int64_t best = 0;
    for (int64_t k = 1; k < 4; ++k) {
      if (counts[k] > counts[best]) best = k;
    }
    EXPECT_EQ(labels[i].item<int64_t>(), best) << "example " << i;
  }
}

TEST(SyntheticTaskTest, BadSizesNameTheOption) {
  EXPECT_THAT(MakeSyntheticDataset(SyntheticTaskOptions().set_num_examples(0)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--num_examples")));
  EXPECT_THAT(MakeSyntheticDataset(SyntheticTaskOptions().set_num_labels(100)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--num_labels")));
}

TEST(BagOfEmbeddingsClassifierTest, LossIsCrossEntropyOfLogitsAndFlopsFollowHf) {
  SyntheticTaskOptions o;
  BagOfEmbeddingsClassifier model(o);
  ASSERT_OK_AND_ASSIGN(auto ds, MakeSyntheticDataset(o.set_num_examples(8)));
  data::Batch batch = ds->columns();
  trainer::ModelOutput out = model.Forward(batch);
  ASSERT_TRUE(out.loss.defined());
  const at::Tensor logits = out.Get("logits");
  EXPECT_EQ(logits.sizes(), (std::vector<int64_t>{8, 4}));
  const at::Tensor expected =
      -at::log_softmax(logits, -1).gather(1, batch.at("labels").unsqueeze(1)).mean();
  EXPECT_NEAR(out.loss.item<double>(), expected.item<double>(), 1e-6);
  batch.erase("labels");
  EXPECT_FALSE(model.Forward(batch).loss.defined());
  // Non-embedding parameters: dense 32*32+32, norm 2*32, classifier 32*4+4 = 1252.
  EXPECT_EQ(model.FloatingPointOps(batch), 6.0 * 1252 * 8 * 16);
}

}  // namespace
}  // namespace loom::examples::synthetic
