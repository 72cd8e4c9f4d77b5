// FullShardRunner on the BERT model (parameter sharding's groundwork): with every BertLayer a wrap
// unit, a forward and backward give the loss of the plain model, each unit's gradient shard equals
// the plain model's gradients of that unit averaged over the ranks' batches, and the units end
// released (only shards held) — at 1 and 2 ranks.
#include "sharding/param_shard/full_shard_runner.h"

#include <torch/torch.h>

#include "base/free_port.h"
#include "base/status_matchers.h"
#include "distributed/multiprocess_testing.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "models/bert/bert_for_sequence_classification.h"
#include "sharding/param_shard/tiny_bert_testing.h"

namespace loom::sharding {
namespace {

using models::bert::BertForSequenceClassification;

std::shared_ptr<BertForSequenceClassification> Tiny() {
  auto model = testing::TinyBert();
  model->eval();  // no dropout: runs compare exactly
  return model;
}

data::Batch Half(int half) {
  at::Generator gen = at::detail::createCPUGenerator(3);
  const at::Tensor ids = torch::randint(1, 40, {4, 6}, gen, at::kLong);
  const at::Tensor labels = torch::tensor({0, 1, 1, 0});
  return {{"input_ids", ids.slice(0, 2 * half, 2 * half + 2)},
          {"labels", labels.slice(0, 2 * half, 2 * half + 2)}};
}

// The plain model's gradient of unit `u` (a BertLayer), flattened, for the given batches
// averaged.
std::vector<at::Tensor> PlainUnitGrads(const std::vector<int>& halves) {
  auto plain = Tiny();
  for (int h : halves) {
    auto out = plain->TryForward(Half(h));
    EXPECT_TRUE(out.ok());
    (out->loss / static_cast<double>(halves.size())).backward();
  }
  std::vector<at::Tensor> grads;
  for (const auto& layer : *plain->bert->encoder->layer) {
    std::vector<at::Tensor> pieces;
    for (const at::Tensor& p : layer->parameters()) pieces.push_back(p.grad().reshape({-1}));
    grads.push_back(at::cat(pieces));
  }
  return grads;
}

int Child(int rank, int world, int port) {
  std::optional<distributed::ProcessGroup> pg;
  if (world > 1) {
    auto joined = distributed::testing::JoinGroup(rank, world, port);
    CHILD_CHECK_OK(joined.status());
    pg = std::move(*joined);
  }
  auto model = Tiny();
  auto units = modeling::FindUnits(*model, model->UnitClassNames());
  CHILD_CHECK_OK(units.status());
  std::vector<ShardUnitSpec> specs;
  for (const modeling::FoundUnit& f : *units) {
    specs.push_back({f.name, f.module.get(), {f.module->parameters()}});
  }
  auto runner = FullShardRunner::Create(std::move(specs), pg ? &*pg : nullptr, {});
  CHILD_CHECK_OK(runner.status());
  CHILD_CHECK((*runner)->unit_count() == 3);
  auto unit = [&](size_t u) -> FlatParamUnit& {
    return *(*runner)->pieces()[(*runner)->unit_pieces(u)[0]].flat;
  };
  for (size_t u = 0; u < 3; ++u) CHILD_CHECK(!unit(u).gathered());
  CHILD_CHECK_OK(model->SetUnitRunner(runner->get()));
  // World 1 trains on both halves (averaged), world 2 rank r on half r.
  const std::vector<int> halves = world == 1 ? std::vector<int>{0, 1} : std::vector<int>{rank};
  for (int h : halves) {
    auto out = model->TryForward(Half(h));
    CHILD_CHECK_OK(out.status());
    auto plain_model = Tiny();
    auto plain = plain_model->TryForward(Half(h));
    CHILD_CHECK_OK(plain.status());
    CHILD_CHECK(at::equal(out->loss, plain->loss));
    (out->loss / static_cast<double>(halves.size())).backward();
  }
  CHILD_CHECK_OK((*runner)->FinishBackward());
  const std::vector<at::Tensor> want = PlainUnitGrads({0, 1});
  for (size_t u = 0; u < 3; ++u) {
    FlatParamUnit& flat = unit(u);
    CHILD_CHECK(!flat.gathered());
    const int64_t part = flat.padded_numel() / world;
    at::Tensor padded = at::zeros({flat.padded_numel()});
    padded.slice(0, 0, flat.numel()).copy_(want[u]);
    CHILD_CHECK(at::allclose(flat.shard().grad(), padded.slice(0, rank * part, (rank + 1) * part),
                             1e-6, 1e-7));
    for (const at::Tensor& p : flat.params()) CHILD_CHECK(!p.grad().defined());
  }
  CHILD_CHECK_OK(model->SetUnitRunner(nullptr));
  return 0;
}

TEST(FullShardRunnerTest, BertLayersShardedMatchThePlainModel) {
  for (int world : {1, 2}) {
    ASSERT_OK_AND_ASSIGN(const int port, base::PickFreePort());
    ASSERT_GT(port, 0);
    EXPECT_THAT(distributed::testing::RunRanks(world, absl::Seconds(60),
                                               [&](int rank) { return Child(rank, world, port); }),
                ::testing::Each(0))
        << "world " << world;
  }
}

}  // namespace
}  // namespace loom::sharding
