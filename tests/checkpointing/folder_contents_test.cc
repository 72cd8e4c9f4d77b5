// What a checkpoint-<step> folder written by the Trainer holds (transformers 4.41
// `_save_checkpoint`; trainer/checkpoint_io.h): the exact file names for the default run, for an
// epoch-end save that leaves a gradient accumulation window open, with save_safetensors=false,
// with a model config, and with save_only_model=true (which cannot be resumed from); the
// weights file holds the model of that step; no hidden .loom-* working folder is left behind.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/checkpointing/harness.h"
#include "trainer/trainer_state.h"

namespace loom::tests::checkpointing {
namespace {

using ::loom::base::testing::StatusIs;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

// Sorted bytewise, as ListDir returns them.
const std::vector<std::string> kFullCheckpoint = {"loom_epoch_rng_state.pth",
                                                  "loom_manifest.json",
                                                  "loom_resume.json",
                                                  "model.safetensors",
                                                  "optimizer.pt",
                                                  "rng_state.pth",
                                                  "scheduler.pt",
                                                  "trainer_state.json",
                                                  "training_args.bin"};

TEST(FolderContentsTest, DefaultRunWritesExactlyTheHfFilesPlusLoomsOwn) {
  TrainerSetup setup;
  setup.args = BaseArgs(FreshDir("default"));
  const std::string dir = setup.args.output_dir();
  auto recorder = std::make_shared<SaveRecorder>(dir);
  setup.callbacks = {recorder};
  ASSERT_OK_AND_ASSIGN(auto trainer, MakeTrainer(setup));
  ASSERT_OK_AND_ASSIGN(trainer::TrainOutput out, trainer->Train());
  EXPECT_EQ(out.global_step, 12);

  // Nothing but the six checkpoints: no .loom-staging-* / .loom-deleting-* leftovers, no
  // temporary files.
  EXPECT_THAT(ListDir(dir), ElementsAreArray(CheckpointNames({2, 4, 6, 8, 10, 12})));
  for (int64_t step : {2, 4, 6, 8, 10, 12}) {
    SCOPED_TRACE(absl::StrCat("checkpoint-", step));
    const std::string folder = absl::StrCat(dir, "/checkpoint-", step);
    EXPECT_THAT(ListDir(folder), ElementsAreArray(kFullCheckpoint));
    ASSERT_OK_AND_ASSIGN(trainer::TrainerState state,
                         trainer::TrainerState::LoadFromJson(folder + "/trainer_state.json"));
    EXPECT_EQ(state.global_step, step);
    EXPECT_EQ(state.max_steps, 12);
    EXPECT_EQ(state.save_steps, 2);
    // The weights are the model's at that save, bit for bit.
    ASSERT_OK_AND_ASSIGN(TensorBytes weights, SafetensorsBytes(folder + "/model.safetensors"));
    ASSERT_EQ(recorder->models().count(step), 1u);
    EXPECT_TRUE(weights == recorder->models().at(step));
  }
  // Training moved the weights between saves (the comparison above is not vacuous).
  EXPECT_FALSE(recorder->models().at(2) == recorder->models().at(12));
  // Each on_save saw the folder already committed.
  ASSERT_EQ(recorder->folders().size(), 6u);
  EXPECT_THAT(recorder->folders()[0].second, ElementsAre("checkpoint-2"));
}

TEST(FolderContentsTest, EpochEndSaveInsideAnAccumulationWindowKeepsThePendingGradients) {
  // 20 examples in batches of 4: 5 micro-batches per epoch, gradient accumulation 2, so
  // max_steps = 2 epochs * (5 // 2) = 4. Epoch 0 ends after step 2 with micro-batch 5
  // accumulated but not applied: checkpoint-2 keeps its gradients. Epoch 1 completes that
  // window with its first micro-batch (step 3), takes step 4 at micro-batch 3 and stops
  // there: checkpoint-4 has no open window.
  TrainerSetup setup;
  setup.args = BaseArgs(FreshDir("open_window"));
  setup.args.set_num_train_epochs(2);
  setup.args.set_gradient_accumulation_steps(2);
  setup.args.set_save_strategy("epoch");
  setup.train_size = 20;
  const std::string dir = setup.args.output_dir();
  auto recorder = std::make_shared<SaveRecorder>(dir);
  setup.callbacks = {recorder};
  ASSERT_OK_AND_ASSIGN(auto trainer, MakeTrainer(setup));
  ASSERT_OK_AND_ASSIGN(trainer::TrainOutput out, trainer->Train());
  EXPECT_EQ(out.global_step, 4);

  EXPECT_THAT(ListDir(dir), ElementsAreArray(CheckpointNames({2, 4})));
  std::vector<std::string> with_grads = kFullCheckpoint;
  with_grads.insert(with_grads.begin() + 2, "loom_pending_grads.safetensors");
  EXPECT_THAT(ListDir(dir + "/checkpoint-2"), ElementsAreArray(with_grads));
  EXPECT_THAT(ListDir(dir + "/checkpoint-4"), ElementsAreArray(kFullCheckpoint));

  // The file holds every parameter's accumulated gradient at the save, bit for bit.
  ASSERT_OK_AND_ASSIGN(TensorBytes grads,
                       SafetensorsBytes(dir + "/checkpoint-2/loom_pending_grads.safetensors"));
  ASSERT_EQ(recorder->grads().count(2), 1u);
  const TensorBytes& expected = recorder->grads().at(2);
  ASSERT_EQ(expected.size(), 3u);  // embed.weight, fc.weight, fc.bias
  EXPECT_TRUE(grads == expected);
}

TEST(FolderContentsTest, SaveSafetensorsFalseWritesPytorchModelBin) {
  TrainerSetup setup;
  setup.args = BaseArgs(FreshDir("pickle"));
  setup.args.set_save_safetensors(false);
  setup.args.set_save_steps(6);
  const std::string dir = setup.args.output_dir();
  auto recorder = std::make_shared<SaveRecorder>(dir);
  setup.callbacks = {recorder};
  ASSERT_OK_AND_ASSIGN(auto trainer, MakeTrainer(setup));
  ASSERT_OK(trainer->Train().status());

  EXPECT_THAT(ListDir(dir), ElementsAreArray(CheckpointNames({6, 12})));
  for (int64_t step : {6, 12}) {
    SCOPED_TRACE(absl::StrCat("checkpoint-", step));
    const std::string folder = absl::StrCat(dir, "/checkpoint-", step);
    EXPECT_THAT(ListDir(folder),
                ElementsAre("loom_epoch_rng_state.pth", "loom_manifest.json", "loom_resume.json",
                            "optimizer.pt", "pytorch_model.bin", "rng_state.pth", "scheduler.pt",
                            "trainer_state.json", "training_args.bin"));
    ASSERT_OK_AND_ASSIGN(TensorBytes weights, TorchStateDictBytes(folder + "/pytorch_model.bin"));
    EXPECT_TRUE(weights == recorder->models().at(step));
  }
}

TEST(FolderContentsTest, ModelConfigIsSavedAsConfigJson) {
  const std::string config = "{\n  \"hidden_size\": 4,\n  \"model_type\": \"tiny\"\n}\n";
  TrainerSetup setup;
  setup.args = BaseArgs(FreshDir("config"));
  setup.args.set_save_steps(12);
  setup.config_json = config;
  const std::string dir = setup.args.output_dir();
  ASSERT_OK_AND_ASSIGN(auto trainer, MakeTrainer(setup));
  ASSERT_OK(trainer->Train().status());

  EXPECT_THAT(ListDir(dir), ElementsAre("checkpoint-12"));
  std::vector<std::string> expected = kFullCheckpoint;
  expected.insert(expected.begin(), "config.json");
  EXPECT_THAT(ListDir(dir + "/checkpoint-12"), ElementsAreArray(expected));
  EXPECT_THAT(FileBytes(dir + "/checkpoint-12/config.json"),
              ::loom::base::testing::IsOkAndHolds(config));
}

TEST(FolderContentsTest, SaveOnlyModelHoldsOnlyTheModelAndCannotBeResumed) {
  TrainerSetup setup;
  setup.args = BaseArgs(FreshDir("only_model"));
  setup.args.set_save_only_model(true);
  setup.args.set_save_steps(6);
  const std::string dir = setup.args.output_dir();
  auto recorder = std::make_shared<SaveRecorder>(dir);
  setup.callbacks = {recorder};
  {
    ASSERT_OK_AND_ASSIGN(auto trainer, MakeTrainer(setup));
    ASSERT_OK(trainer->Train().status());
  }
  EXPECT_THAT(ListDir(dir), ElementsAreArray(CheckpointNames({6, 12})));
  for (int64_t step : {6, 12}) {
    SCOPED_TRACE(absl::StrCat("checkpoint-", step));
    const std::string folder = absl::StrCat(dir, "/checkpoint-", step);
    EXPECT_THAT(ListDir(folder),
                ElementsAre("loom_manifest.json", "loom_resume.json", "model.safetensors",
                            "trainer_state.json", "training_args.bin"));
    ASSERT_OK_AND_ASSIGN(TensorBytes weights, SafetensorsBytes(folder + "/model.safetensors"));
    EXPECT_TRUE(weights == recorder->models().at(step));
  }

  // Resuming (latest) with the same arguments: a clear FailedPrecondition naming the folder.
  {
    ASSERT_OK_AND_ASSIGN(auto trainer, MakeTrainer(setup));
    EXPECT_THAT(trainer->Train(trainer::ResumeFrom::Latest()).status(),
                StatusIs(absl::StatusCode::kFailedPrecondition,
                         AllOf(HasSubstr(dir + "/checkpoint-12"), HasSubstr("save_only_model"))));
  }
  // Also when this run saves everything: the folder itself lacks the optimizer state.
  TrainerSetup full = setup;
  full.args.set_save_only_model(false);
  full.args.set_output_dir(FreshDir("only_model_resumer"));
  full.callbacks.clear();
  {
    ASSERT_OK_AND_ASSIGN(auto trainer, MakeTrainer(full));
    EXPECT_THAT(trainer->Train(trainer::ResumeFrom::Path(dir + "/checkpoint-6")).status(),
                StatusIs(absl::StatusCode::kFailedPrecondition,
                         AllOf(HasSubstr(dir + "/checkpoint-6"), HasSubstr("save_only_model"))));
  }
  // The failed resumes wrote nothing.
  EXPECT_THAT(ListDir(dir), ElementsAreArray(CheckpointNames({6, 12})));
  EXPECT_THAT(ListDir(full.args.output_dir()), ElementsAre());
}

}  // namespace
}  // namespace loom::tests::checkpointing
