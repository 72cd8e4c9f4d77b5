// The Trainer with a process group given in TrainerOptions (no launcher): 2 forked ranks train
// on an iterable stream (each keeps its slice of every global chunk) and end with the weights of
// one process reading the same stream with the whole batch, within 1e-6.
#include <torch/torch.h>

#include <memory>
#include <string>

#include "base/free_port.h"
#include "base/status_matchers.h"
#include "distributed/multiprocess_testing.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "modeling/testing_models.h"
#include "trainer/trainer.h"

namespace loom {
namespace {

using base::PickFreePort;
using distributed::testing::JoinGroup;
using distributed::testing::RunRanks;
using ::testing::Each;

using Regressor = modeling::testing::LinearRegressor;

// 40 examples, the same on every rank: y = x . w + noise.
class Stream : public data::IterableDataset {
 public:
  absl::StatusOr<std::unique_ptr<data::ExampleIterator>> Iterate() override {
    struct It : data::ExampleIterator {
      at::Tensor x, y;
      int64_t i = 0;
      absl::StatusOr<std::optional<data::Example>> Next() override {
        if (i >= x.size(0)) return std::nullopt;
        data::Example e{{"x", x[i]}, {"labels", y[i]}};
        ++i;
        return e;
      }
    };
    auto it = std::make_unique<It>();
    at::Generator g = at::make_generator<at::CPUGeneratorImpl>(7);
    it->x = at::randn({40, 4}, g);
    it->y = at::matmul(it->x, at::tensor({1.0f, -2.0f, 0.5f, 3.0f})) + 0.1 * at::randn({40}, g);
    return std::unique_ptr<data::ExampleIterator>(std::move(it));
  }
};

absl::StatusOr<std::vector<at::Tensor>> TrainWeights(int64_t batch,
                                                     std::optional<distributed::ProcessGroup> pg,
                                                     const std::string& dir) {
  trainer::TrainerOptions o;
  o.args.set_output_dir(dir);
  o.args.set_per_device_train_batch_size(batch);
  o.args.set_max_steps(8);  // 2 passes over the stream
  o.args.set_learning_rate(0.05);
  o.args.set_logging_steps(1);
  o.args.set_save_strategy("no");
  o.args.set_disable_tqdm(true);
  o.args.add_report_to("none");
  o.model_init = []() -> absl::StatusOr<std::shared_ptr<trainer::Model>> {
    return std::make_shared<Regressor>(4);
  };
  o.train_iterable_dataset = std::make_shared<Stream>();
  o.process_group = std::move(pg);
  auto t = trainer::Trainer::Create(std::move(o));
  if (!t.ok()) return t.status();
  auto out = (*t)->Train();
  if (!out.ok()) return out.status();
  std::vector<at::Tensor> weights;
  for (const at::Tensor& p : (*t)->model().parameters()) weights.push_back(p.detach().clone());
  return weights;
}

int Child(int rank, int port, const std::string& dir) {
  absl::StatusOr<distributed::ProcessGroup> pg = JoinGroup(rank, 2, port);
  CHILD_CHECK_OK(pg.status());
  auto ddp = TrainWeights(5, *pg, dir + "/ddp" + std::to_string(rank));
  CHILD_CHECK_OK(ddp.status());
  auto single = TrainWeights(10, std::nullopt, dir + "/single" + std::to_string(rank));
  CHILD_CHECK_OK(single.status());
  CHILD_CHECK(ddp->size() == single->size());
  for (size_t i = 0; i < ddp->size(); ++i) {
    CHILD_CHECK(at::allclose((*ddp)[i], (*single)[i], /*rtol=*/0, /*atol=*/1e-6));
  }
  // The comparison can fail: one process with the per-rank batch ends elsewhere.
  auto small = TrainWeights(5, std::nullopt, dir + "/small" + std::to_string(rank));
  CHILD_CHECK_OK(small.status());
  CHILD_CHECK(((*small)[0] - (*ddp)[0]).abs().max().item<double>() > 1e-3);
  return 0;
}

TEST(TrainerIterableDdpTest, TwoRanksOnSlicesOfAStreamMatchOneProcess) {
  const std::string dir = ::testing::TempDir() + "/trainer_iterable_ddp";
  ASSERT_OK_AND_ASSIGN(const int port, PickFreePort());
  EXPECT_THAT(RunRanks(2, absl::Seconds(120), [&](int rank) { return Child(rank, port, dir); }),
              Each(0));
}

}  // namespace
}  // namespace loom
