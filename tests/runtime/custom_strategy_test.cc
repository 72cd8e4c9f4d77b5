// A program's own data-parallel strategy, registered in the strategy registry and handed to the
// Trainer and to the Accelerator through their factory hook (no change to CreateStrategy): a toy
// strategy that makes 2 ranks ONE data-parallel replica (as tensor parallelism would) — both
// ranks read the same data, DDP averages their identical gradients — so each front end, run on
// 2 forked ranks, must give exactly the one-process result: the same weights, the same
// evaluation loss, every evaluation sample counted once. A loop that sharded the data by the
// world size instead would train each rank on half the batches and end elsewhere.
#include <torch/torch.h>

#include <memory>
#include <string>

#include "accelerate/accelerator.h"
#include "data/collator.h"
#include "data/dataset.h"
#include "data/sampler.h"
#include "base/free_port.h"
#include "distributed/multiprocess_testing.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "modeling/testing_models.h"
#include "sharding/replicated.h"
#include "sharding/strategy_registry.h"
#include "trainer/trainer.h"

namespace loom {
namespace {

using distributed::testing::JoinGroup;
using base::PickFreePort;
using distributed::testing::RunRanks;
using ::testing::Each;

constexpr int64_t kExamples = 37;

// Every rank of the run is replica 0.
sharding::DataParallelTopology OneReplica(int world_size) {
  sharding::DataParallelTopology t;
  t.world_size = world_size;
  t.data_parallel_size = 1;
  t.data_parallel_rank = 0;
  t.replica_of_rank.assign(world_size, 0);
  return t;
}

// DDP underneath; the ranks form one replica.
class OneReplicaStrategy : public sharding::ShardingStrategy {
 public:
  OneReplicaStrategy(std::unique_ptr<sharding::ShardingStrategy> inner, int world_size)
      : inner_(std::move(inner)), world_size_(world_size) {}
  std::string Name() const override { return "one replica (test)"; }
  sharding::StrategyCapabilities Capabilities() const override { return {}; }
  sharding::DataParallelTopology Topology() const override { return OneReplica(world_size_); }
  absl::Status BeforeForward(bool closes) override { return inner_->BeforeForward(closes); }
  absl::Status AfterBackward() override { return inner_->AfterBackward(); }
  absl::StatusOr<std::optional<double>> ClipGradients(double max_norm) override {
    return inner_->ClipGradients(max_norm);
  }
  absl::StatusOr<bool> OptimizerStep() override { return inner_->OptimizerStep(); }
  void ZeroGrad() override { inner_->ZeroGrad(); }
  sharding::ModelStateBytes StateBytes() const override { return inner_->StateBytes(); }

 private:
  std::unique_ptr<sharding::ShardingStrategy> inner_;
  int world_size_;
};

class OneReplicaFactory : public sharding::StrategyFactory {
 public:
  sharding::DataParallelTopology Topology(const args::TrainingArguments&, int world_size,
                                          int) const override {
    return OneReplica(world_size);
  }
  absl::StatusOr<std::unique_ptr<sharding::ShardingStrategy>> Create(
      const sharding::StrategyOptions& o) const override {
    auto ddp = sharding::ReplicatedStrategy::Create(
        sharding::ReplicatedOptions().set_pieces(o).set_ddp(distributed::DdpOptions()));
    if (!ddp.ok()) return ddp.status();
    const int world = o.process_group != nullptr ? o.process_group->world_size() : 1;
    return std::unique_ptr<sharding::ShardingStrategy>(
        std::make_unique<OneReplicaStrategy>(std::move(*ddp), world));
  }
};

std::shared_ptr<const sharding::StrategyFactory> RegisteredFactory() {
  static const absl::Status registered = sharding::StrategyRegistry::Global().Register(
      "one_replica_test", std::make_shared<OneReplicaFactory>());
  if (!registered.ok()) return nullptr;
  return *sharding::StrategyRegistry::Global().Find("one_replica_test");
}

std::shared_ptr<data::Dataset> Data() {
  at::Generator g = at::detail::createCPUGenerator(5);
  at::Tensor x = at::randn({kExamples, 4}, g);
  at::Tensor y = at::matmul(x, at::tensor({1.0f, -2.0f, 0.5f, 3.0f}));
  std::vector<data::Example> examples;
  for (int64_t i = 0; i < kExamples; ++i) examples.push_back({{"x", x[i]}, {"labels", y[i]}});
  return std::make_shared<data::ExampleListDataset>(std::move(examples));
}

struct Result {
  std::vector<at::Tensor> weights;
  double eval_loss = 0;
  int64_t eval_samples = 0;
};

// --- The Trainer ---

absl::StatusOr<Result> TrainWithTrainer(std::optional<distributed::ProcessGroup> pg,
                                        std::shared_ptr<const sharding::StrategyFactory> factory,
                                        const std::string& dir) {
  trainer::TrainerOptions o;
  o.args.set_output_dir(dir);
  o.args.set_per_device_train_batch_size(4);
  o.args.set_per_device_eval_batch_size(5);
  o.args.set_num_train_epochs(2);
  o.args.set_learning_rate(0.05);
  o.args.set_save_strategy("no");
  o.args.set_disable_tqdm(true);
  o.args.add_report_to("none");
  o.model_init = []() -> absl::StatusOr<std::shared_ptr<trainer::Model>> {
    torch::manual_seed(0);
    return std::make_shared<modeling::testing::LinearRegressor>(4);
  };
  o.train_dataset = Data();
  o.eval_dataset = Data();
  o.process_group = std::move(pg);
  o.strategy_factory = std::move(factory);
  auto t = trainer::Trainer::Create(std::move(o));
  if (!t.ok()) return t.status();
  if (auto out = (*t)->Train(); !out.ok()) return out.status();
  auto metrics = (*t)->Evaluate();
  if (!metrics.ok()) return metrics.status();
  auto predicted = (*t)->Predict(Data());
  if (!predicted.ok()) return predicted.status();
  Result r;
  for (const at::Tensor& p : (*t)->model().parameters()) r.weights.push_back(p.detach().clone());
  r.eval_loss = (*metrics)["eval_loss"].get<double>();
  r.eval_samples = predicted->predictions.front().size(0);
  return r;
}

// --- The Accelerator: accelerate's loop, evaluation through GatherForMetrics ---

absl::StatusOr<Result> TrainWithAccelerator(
    std::optional<distributed::ProcessGroup> pg,
    std::shared_ptr<const sharding::StrategyFactory> factory) {
  accelerate::AcceleratorOptions options;
  if (pg) options.set_process_group(*pg);
  options.strategy_factory = std::move(factory);
  auto accelerator = accelerate::Accelerator::Create(std::move(options));
  if (!accelerator.ok()) return accelerator.status();
  accelerate::Accelerator& acc = **accelerator;
  torch::manual_seed(0);
  std::shared_ptr<modeling::Model> model = std::make_shared<modeling::testing::LinearRegressor>(4);
  std::shared_ptr<torch::optim::Optimizer> optimizer =
      std::make_shared<torch::optim::SGD>(model->parameters(), torch::optim::SGDOptions(0.05));
  auto make_loader = [](bool shuffle) {
    std::unique_ptr<data::Sampler> sampler =
        shuffle ? std::unique_ptr<data::Sampler>(std::make_unique<data::RandomSampler>(kExamples, 3))
                : std::make_unique<data::SequentialSampler>(kExamples);
    return std::shared_ptr<data::DataLoader>(
        *data::DataLoader::Create(data::DataLoaderOptions().set_batch_size(4), Data(),
                                  std::move(sampler), std::make_shared<data::DefaultCollator>()));
  };
  std::shared_ptr<data::DataLoader> train = make_loader(true);
  std::shared_ptr<data::DataLoader> eval = make_loader(false);
  if (absl::Status s = acc.Prepare(model, optimizer, train, eval); !s.ok()) return s;
  for (int64_t epoch = 0; epoch < 2; ++epoch) {
    auto it = train->Epoch(epoch);
    if (!it.ok()) return it.status();
    while (true) {
      auto batch = (*it)->Next();
      if (!batch.ok()) return batch.status();
      if (!*batch) break;
      if (absl::Status s = acc.Backward(model->Forward(**batch).loss); !s.ok()) return s;
      optimizer->step();
      optimizer->zero_grad();
    }
  }
  model->eval();
  Result r;
  at::Tensor squared_errors;
  auto it = eval->Epoch(0);
  if (!it.ok()) return it.status();
  while (true) {
    auto batch = (*it)->Next();
    if (!batch.ok()) return batch.status();
    if (!*batch) break;
    at::NoGradGuard no_grad;
    const at::Tensor err = model->Forward(**batch).Get("logits") - (**batch).at("labels");
    auto gathered = acc.GatherForMetrics(err * err);
    if (!gathered.ok()) return gathered.status();
    squared_errors = squared_errors.defined() ? at::cat({squared_errors, *gathered}) : *gathered;
  }
  r.eval_samples = squared_errors.size(0);
  r.eval_loss = squared_errors.mean().item<double>();
  std::shared_ptr<modeling::Model> module = acc.UnwrapModel(model);
  for (const at::Tensor& p : module->parameters()) r.weights.push_back(p.detach().clone());
  return r;
}

int Compare(int rank, const absl::StatusOr<Result>& two_ranks, const absl::StatusOr<Result>& one) {
  CHILD_CHECK_OK(two_ranks.status());
  CHILD_CHECK_OK(one.status());
  CHILD_CHECK(two_ranks->weights.size() == one->weights.size());
  for (size_t i = 0; i < one->weights.size(); ++i) {
    CHILD_CHECK(at::equal(two_ranks->weights[i], one->weights[i]));
  }
  CHILD_CHECK(two_ranks->eval_loss == one->eval_loss);
  CHILD_CHECK(two_ranks->eval_samples == kExamples);
  CHILD_CHECK(one->eval_samples == kExamples);
  return 0;
}

int TrainerChild(int rank, int port, const std::string& dir) {
  absl::StatusOr<distributed::ProcessGroup> pg = JoinGroup(rank, 2, port);
  CHILD_CHECK_OK(pg.status());
  std::shared_ptr<const sharding::StrategyFactory> factory = RegisteredFactory();
  CHILD_CHECK(factory != nullptr);
  const std::string mine = dir + "/rank" + std::to_string(rank);
  auto two_ranks = TrainWithTrainer(*pg, factory, mine + "/toy");
  auto one = TrainWithTrainer(std::nullopt, nullptr, mine + "/single");
  return Compare(rank, two_ranks, one);
}

int AcceleratorChild(int rank, int port) {
  absl::StatusOr<distributed::ProcessGroup> pg = JoinGroup(rank, 2, port);
  CHILD_CHECK_OK(pg.status());
  std::shared_ptr<const sharding::StrategyFactory> factory = RegisteredFactory();
  CHILD_CHECK(factory != nullptr);
  auto two_ranks = TrainWithAccelerator(*pg, factory);
  auto one = TrainWithAccelerator(std::nullopt, nullptr);
  return Compare(rank, two_ranks, one);
}

TEST(CustomStrategyTest, TrainerTrainsTwoRanksAsOneReplica) {
  const std::string dir = ::testing::TempDir() + "/custom_strategy_trainer";
  absl::StatusOr<int> port_or = PickFreePort();
  ASSERT_TRUE(port_or.ok()) << port_or.status();
  const int port = *port_or;
  EXPECT_THAT(
      RunRanks(2, absl::Seconds(120), [&](int rank) { return TrainerChild(rank, port, dir); }),
      Each(0));
}

TEST(CustomStrategyTest, AcceleratorTrainsTwoRanksAsOneReplica) {
  absl::StatusOr<int> port_or = PickFreePort();
  ASSERT_TRUE(port_or.ok()) << port_or.status();
  const int port = *port_or;
  EXPECT_THAT(RunRanks(2, absl::Seconds(120), [&](int rank) { return AcceleratorChild(rank, port); }),
              Each(0));
}

TEST(CustomStrategyTest, RegistryRefusesATakenNameAndNamesTheRegisteredOnes) {
  ASSERT_NE(RegisteredFactory(), nullptr);
  EXPECT_EQ(sharding::StrategyRegistry::Global()
                .Register("one_replica_test", std::make_shared<OneReplicaFactory>())
                .code(),
            absl::StatusCode::kAlreadyExists);
  const absl::Status missing = sharding::StrategyRegistry::Global().Find("nope").status();
  EXPECT_EQ(missing.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(missing.message()), ::testing::HasSubstr("one_replica_test"));
}

}  // namespace
}  // namespace loom
