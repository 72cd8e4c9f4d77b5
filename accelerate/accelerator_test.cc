// One-process behaviour of the Accelerator (multi-process runs: tests/accelerate).
#include "accelerate/accelerator.h"

#include <torch/torch.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "base/status_matchers.h"
#include "checkpoint/model_weights.h"
#include "data/collator.h"
#include "data/dataset.h"
#include "data/sampler.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "modeling/testing_models.h"
#include "optim/lr_scheduler.h"

namespace loom::accelerate {
namespace {

using ::loom::base::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// The loops' test model, the same weights in every test.
std::shared_ptr<modeling::Model> NewRegressor() {
  torch::manual_seed(0);
  return std::make_shared<modeling::testing::LinearRegressor>(3);
}

std::shared_ptr<data::Dataset> Data(int64_t n) {
  at::Generator g = at::detail::createCPUGenerator(11);
  at::Tensor x = at::randn({n, 3}, g);
  at::Tensor y = x.sum(1) * 0.5f;
  std::vector<data::Example> examples;
  for (int64_t i = 0; i < n; ++i) examples.push_back({{"x", x[i]}, {"labels", y[i]}});
  return std::make_shared<data::ExampleListDataset>(std::move(examples));
}

std::shared_ptr<data::DataLoader> Loader(int64_t n, int64_t batch) {
  return *data::DataLoader::Create(data::DataLoaderOptions().set_batch_size(batch), Data(n),
                                   std::make_unique<data::SequentialSampler>(n),
                                   std::make_shared<data::DefaultCollator>());
}

std::vector<data::Batch> All(data::DataLoader& loader, int64_t epoch = 0) {
  std::vector<data::Batch> out;
  auto it = *loader.Epoch(epoch);
  while (auto b = *it->Next()) out.push_back(*b);
  return out;
}

std::string Tmp() { return std::getenv("TEST_TMPDIR"); }

TEST(AcceleratorTest, BadUseIsAClearError) {
  ASSERT_OK_AND_ASSIGN(auto accelerator, Accelerator::Create());
  // Backward before anything was prepared.
  EXPECT_THAT(accelerator->Backward(at::ones({}, at::requires_grad())),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("Prepare")));
  std::shared_ptr<modeling::Model> model = NewRegressor();
  std::shared_ptr<modeling::Model> original = model;
  ASSERT_OK(accelerator->Prepare(model));
  // The same model again, either handle.
  EXPECT_THAT(accelerator->Prepare(model),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("already prepared")));
  EXPECT_THAT(accelerator->Prepare(original),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("already prepared")));
  std::shared_ptr<modeling::Model> second = NewRegressor();
  EXPECT_THAT(accelerator->Prepare(second),
              StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("second model")));
  // A model without an optimizer: Backward still refuses.
  EXPECT_THAT(accelerator->Backward(model->Forward(*All(*Loader(4, 4)).begin()).loss),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("Prepare")));
  EXPECT_THAT(Accelerator::Create(AcceleratorOptions().set_mixed_precision("fp8")),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("fp8")));
  EXPECT_THAT(Accelerator::Create(AcceleratorOptions().set_gradient_accumulation_steps(0)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(">= 1")));
}

TEST(AcceleratorTest, Fp16NeedsCuda) {
  if (torch::cuda::is_available()) GTEST_SKIP() << "CUDA build: fp16 is available";
  EXPECT_THAT(Accelerator::Create(AcceleratorOptions().set_mixed_precision("fp16")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       ::testing::AllOf(HasSubstr("mixed_precision fp16"), HasSubstr("bf16"))));
}

TEST(AcceleratorTest, SettingsComeFromAccelerateVariables) {
  ::setenv("ACCELERATE_GRADIENT_ACCUMULATION_STEPS", "3", 1);
  ::setenv("ACCELERATE_MIXED_PRECISION", "bf16", 1);
  ASSERT_OK_AND_ASSIGN(auto accelerator, Accelerator::Create());
  EXPECT_EQ(accelerator->gradient_accumulation_steps(), 3);
  EXPECT_EQ(accelerator->mixed_precision(), "bf16");
  ::setenv("ACCELERATE_GRADIENT_ACCUMULATION_STEPS", "x", 1);
  EXPECT_THAT(Accelerator::Create(), StatusIs(absl::StatusCode::kInvalidArgument,
                                              HasSubstr("ACCELERATE_GRADIENT_ACCUMULATION_STEPS")));
  ::unsetenv("ACCELERATE_GRADIENT_ACCUMULATION_STEPS");
  ::unsetenv("ACCELERATE_MIXED_PRECISION");
  ASSERT_OK_AND_ASSIGN(accelerator, Accelerator::Create());
  EXPECT_EQ(accelerator->mixed_precision(), "no");
  EXPECT_EQ(accelerator->num_processes(), 1);
  EXPECT_TRUE(accelerator->IsMainProcess());
}

// Accumulate with 4 micro-steps per window, the loop calling step / zero_grad on every one, is
// bit for bit the accumulation written by hand; the prepared scheduler steps per window.
TEST(AcceleratorTest, AccumulateEqualsAccumulationByHand) {
  ASSERT_OK_AND_ASSIGN(auto accelerator, Accelerator::Create(
                                             AcceleratorOptions().set_gradient_accumulation_steps(4)));
  std::shared_ptr<modeling::Model> model = NewRegressor();
  std::shared_ptr<torch::optim::Optimizer> optimizer = std::make_shared<torch::optim::AdamW>(
      model->parameters(), torch::optim::AdamWOptions(0.1));
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<optim::LrScheduler> scheduler,
                       optim::GetScheduler("linear", optimizer.get(), 0, 10));
  std::shared_ptr<data::DataLoader> loader = Loader(36, 4);  // 9 batches: windows 4, 4, 1
  ASSERT_OK(accelerator->Prepare(model, optimizer, loader, scheduler));
  std::vector<bool> syncs;
  // Batches taken as the loop goes (the loader reports its last one, which synchronizes).
  auto it = *loader->Epoch(0);
  while (std::optional<data::Batch> next = *it->Next()) {
    const data::Batch& batch = *next;
    AccumulateScope scope = accelerator->Accumulate();
    syncs.push_back(accelerator->SyncGradients());
    ASSERT_OK(accelerator->Backward(model->Forward(batch).loss));
    if (!accelerator->SyncGradients()) {
      EXPECT_THAT(accelerator->ClipGradNorm(1.0),
                  StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("SyncGradients")));
    }
    optimizer->step();
    scheduler->Step();
    optimizer->zero_grad();
  }
  EXPECT_THAT(syncs, ElementsAre(false, false, false, true, false, false, false, true, true));
  EXPECT_EQ(scheduler->last_epoch(), 3);  // one step per window

  // By hand: loss / 4 per micro-batch, a step after each window (the last one short).
  std::shared_ptr<modeling::Model> reference = NewRegressor();
  torch::optim::AdamW ref_optimizer(reference->parameters(), torch::optim::AdamWOptions(0.1));
  ASSERT_OK_AND_ASSIGN(auto ref_scheduler, optim::GetScheduler("linear", &ref_optimizer, 0, 10));
  std::vector<data::Batch> batches = All(*Loader(36, 4));
  for (size_t i = 0; i < batches.size(); ++i) {
    (reference->Forward(batches[i]).loss / 4.0).backward();
    if ((i + 1) % 4 == 0 || i + 1 == batches.size()) {
      ref_optimizer.step();
      ref_scheduler->Step();
      ref_optimizer.zero_grad();
    }
  }
  auto mine = accelerator->UnwrapModel(model)->parameters();
  auto theirs = reference->parameters();
  ASSERT_EQ(mine.size(), theirs.size());
  for (size_t i = 0; i < mine.size(); ++i) EXPECT_TRUE(mine[i].equal(theirs[i])) << i;
}

TEST(AcceleratorTest, LearningRatesReachTheOriginalOptimizer) {
  ASSERT_OK_AND_ASSIGN(auto accelerator, Accelerator::Create());
  std::shared_ptr<modeling::Model> model = NewRegressor();
  auto adamw = std::make_shared<torch::optim::AdamW>(model->parameters(),
                                                     torch::optim::AdamWOptions(0.5));
  std::shared_ptr<torch::optim::Optimizer> optimizer = adamw;
  ASSERT_OK(accelerator->Prepare(model, optimizer));
  // A schedule on the prepared optimizer (the tutorial's order).
  optimizer->param_groups()[0].options().set_lr(0.25);
  data::Batch batch = All(*Loader(4, 4))[0];
  ASSERT_OK(accelerator->Backward(model->Forward(batch).loss));
  optimizer->step();
  EXPECT_EQ(adamw->param_groups()[0].options().get_lr(), 0.25);
  // A schedule on the original one (built before Prepare).
  adamw->param_groups()[0].options().set_lr(0.125);
  ASSERT_OK(accelerator->Backward(model->Forward(batch).loss));
  optimizer->step();
  EXPECT_EQ(optimizer->param_groups()[0].options().get_lr(), 0.125);
  EXPECT_EQ(adamw->param_groups()[0].options().get_lr(), 0.125);
}

TEST(AcceleratorTest, GatherReduceAndSkipFirstBatchesInOneProcess) {
  ASSERT_OK_AND_ASSIGN(auto accelerator, Accelerator::Create());
  std::shared_ptr<data::DataLoader> loader = Loader(10, 4);
  ASSERT_OK(accelerator->Prepare(loader));
  std::vector<data::Batch> batches = All(*loader);
  ASSERT_EQ(batches.size(), 3u);  // no padding in one process: 4, 4, 2
  ASSERT_OK_AND_ASSIGN(at::Tensor g, accelerator->GatherForMetrics(batches[2].at("labels")));
  EXPECT_EQ(g.size(0), 2);
  ASSERT_OK_AND_ASSIGN(at::Tensor r, accelerator->Reduce(at::tensor({1.5f, 2.0f}), "mean"));
  EXPECT_TRUE(r.equal(at::tensor({1.5f, 2.0f})));
  EXPECT_THAT(accelerator->Reduce(at::ones({1}), "max"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("max")));
  ASSERT_OK_AND_ASSIGN(auto skipping, accelerator->SkipFirstBatches(loader, 2));
  std::vector<data::Batch> rest = All(*skipping);
  ASSERT_EQ(rest.size(), 1u);
  EXPECT_TRUE(rest[0].at("labels").equal(batches[2].at("labels")));
}

TEST(AcceleratorTest, SaveModelTrackersAndPrint) {
  const std::string dir = Tmp() + "/project";
  ASSERT_OK_AND_ASSIGN(auto accelerator,
                       Accelerator::Create(AcceleratorOptions().set_project_dir(dir).set_log_with(
                           {"jsonl"})));
  std::shared_ptr<modeling::Model> model = NewRegressor();
  ASSERT_OK(accelerator->Prepare(model));
  ASSERT_OK(accelerator->SaveModel(model, dir + "/saved"));
  ASSERT_OK_AND_ASSIGN(checkpoint::LoadedWeights w, checkpoint::LoadModelWeights(dir + "/saved"));
  EXPECT_EQ(w.tensors.size(), 2u);  // the module's own names, not "module."
  EXPECT_EQ(w.tensors[0].first, "linear.bias");
  EXPECT_EQ(w.tensors[1].first, "linear.weight");
  ASSERT_OK(accelerator->InitTrackers("run", {{"lr", 0.1}}));
  ASSERT_OK(accelerator->Log({{"loss", 0.5}}, 3));
  ASSERT_OK(accelerator->EndTraining());
  std::ifstream in(dir + "/run/metrics.jsonl");
  std::string first, second;
  std::getline(in, first);
  std::getline(in, second);
  EXPECT_THAT(first, HasSubstr("\"config/lr\": 0.1"));
  EXPECT_THAT(second, HasSubstr("\"loss\": 0.5"));
  EXPECT_THAT(Accelerator::Create(AcceleratorOptions().set_log_with({"wandb"}))
                  .value()
                  ->InitTrackers("x"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("wandb")));
}

TEST(AcceleratorTest, SaveStateAndLoadStateRoundTrip) {
  const std::string dir = Tmp() + "/state";
  ASSERT_OK_AND_ASSIGN(auto accelerator,
                       Accelerator::Create(AcceleratorOptions().set_project_dir(dir)));
  ASSERT_OK(accelerator->SetSeed(5));
  std::shared_ptr<modeling::Model> model = NewRegressor();
  std::shared_ptr<torch::optim::Optimizer> optimizer = std::make_shared<torch::optim::AdamW>(
      model->parameters(), torch::optim::AdamWOptions(0.1));
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<optim::LrScheduler> scheduler,
                       optim::GetScheduler("linear", optimizer.get(), 0, 10));
  ASSERT_OK(accelerator->Prepare(model, optimizer, scheduler));
  data::Batch batch = All(*Loader(4, 4))[0];
  auto train_step = [&] {
    ASSERT_OK(accelerator->Backward(model->Forward(batch).loss));
    optimizer->step();
    scheduler->Step();
    optimizer->zero_grad();
  };
  train_step();
  ASSERT_OK_AND_ASSIGN(std::string saved, accelerator->SaveState());
  EXPECT_EQ(saved, std::filesystem::absolute(dir + "/checkpoints/checkpoint_0").string());
  for (const char* f : {"model.safetensors", "optimizer.bin", "scheduler.bin",
                        "random_states_0.pkl"}) {
    EXPECT_TRUE(std::filesystem::exists(saved + "/" + f)) << f;
  }
  const at::Tensor drawn = torch::rand({3});
  train_step();
  const at::Tensor after_two = accelerator->UnwrapModel(model)->parameters()[0].clone();
  ASSERT_OK(accelerator->LoadState(saved));
  EXPECT_TRUE(torch::rand({3}).equal(drawn)) << "the generators were not restored";
  EXPECT_EQ(scheduler->last_epoch(), 1);
  train_step();
  EXPECT_TRUE(accelerator->UnwrapModel(model)->parameters()[0].equal(after_two));
  // Loading checkpoint_0 continues the automatic names after it.
  ASSERT_OK_AND_ASSIGN(std::string second, accelerator->SaveState());
  EXPECT_THAT(second, HasSubstr("checkpoint_1"));
  // A new Accelerator on the same project does not overwrite checkpoint_0.
  ASSERT_OK_AND_ASSIGN(auto again,
                       Accelerator::Create(AcceleratorOptions().set_project_dir(dir)));
  EXPECT_THAT(again->SaveState(), StatusIs(absl::StatusCode::kFailedPrecondition,
                                           HasSubstr("already exists")));
  ASSERT_OK(again->SaveState(Tmp() + "/explicit/").status());  // a trailing slash is fine
  EXPECT_TRUE(std::filesystem::exists(Tmp() + "/explicit/random_states_0.pkl"));
  EXPECT_THAT(accelerator->LoadState(Tmp() + "/nothing"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("nothing")));
}


// A model whose config.json keeps its width under text_config (multimodal configs do).
class TextConfigRegressor : public modeling::testing::LinearRegressor {
 public:
  TextConfigRegressor() : LinearRegressor(3) {}
  std::string ConfigJson() const override { return R"({"text_config": {"hidden_size": 24}})"; }
};

// DeepSpeed's "auto" reduce_bucket_size is hidden_size^2, with the hidden size found as HF's
// trainer_config_finalize finds it (hidden_size, hidden_sizes, text_config, ...) — the same
// planning as the Trainer's, not only a top-level hidden_size.
TEST(AcceleratorTest, DeepSpeedAutoFindsTheHiddenSizeAsTheTrainerDoes) {
  ASSERT_OK_AND_ASSIGN(
      auto accelerator,
      Accelerator::Create(AcceleratorOptions().set_strategy_flags(
          {"--deepspeed",
           R"({"zero_optimization": {"stage": 2, "reduce_bucket_size": "auto"},
               "train_micro_batch_size_per_gpu": "auto"})"})));
  torch::manual_seed(0);
  std::shared_ptr<modeling::Model> model = std::make_shared<TextConfigRegressor>();
  std::shared_ptr<torch::optim::Optimizer> optimizer = std::make_shared<torch::optim::AdamW>(
      model->parameters(), torch::optim::AdamWOptions(0.01));
  std::shared_ptr<data::DataLoader> loader = Loader(8, 4);
  ASSERT_OK(accelerator->Prepare(model, optimizer, loader));
  ASSERT_TRUE(accelerator->state().deepspeed.has_value());
  EXPECT_EQ(accelerator->state().deepspeed->comm.reduce_bucket_size, 24 * 24);
}

}  // namespace
}  // namespace loom::accelerate
