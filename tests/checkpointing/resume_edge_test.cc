// Resume edge cases through the Trainer (transformers 4.41 `train(resume_from_checkpoint=...)`):
// an explicit
// checkpoint path resumes exactly like "latest"; a corrupted newest checkpoint is skipped for
// the next older one; no checkpoint at all is a NotFound naming the output directory; resuming
// from the final checkpoint trains nothing. Every run is BaseArgs (harness.h): 12 steps, a
// checkpoint every 2 steps, shuffled data; "equal" below means RunDigest (parameters, AdamW
// state, learning rates, log history, global_step) is byte-identical to the uninterrupted run.
#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/checkpointing/harness.h"

namespace loom::tests::checkpointing {
namespace {

using ::loom::base::testing::StatusIs;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

// The file's bytes; a test failure (and "") when it cannot be read.
std::string MustRead(const std::string& path) {
  absl::StatusOr<std::string> bytes = FileBytes(path);
  EXPECT_OK(bytes.status());
  return bytes.ok() ? *bytes : std::string();
}

struct Result {
  std::string digest;
  int64_t begin_step = -1;
  std::vector<int64_t> steps;
};

// Trains BaseArgs(output_dir), optionally resuming and optionally stopping after the save of
// `stop_after` (0: never).
Result RunTraining(const std::string& output_dir, std::optional<trainer::ResumeFrom> resume,
                   int64_t stop_after = 0) {
  TrainerSetup setup;
  setup.args = BaseArgs(output_dir);
  auto steps = std::make_shared<StepRecorder>();
  setup.callbacks = {steps};
  if (stop_after > 0) setup.callbacks.push_back(std::make_shared<StopAfterSave>(stop_after));
  Result result;
  absl::StatusOr<std::unique_ptr<trainer::Trainer>> t = MakeTrainer(setup);
  EXPECT_OK(t.status());
  if (!t.ok()) return result;
  absl::StatusOr<trainer::TrainOutput> out = (*t)->Train(resume);
  EXPECT_OK(out.status());
  result.digest = RunDigest(**t);
  result.begin_step = steps->begin_step();
  result.steps = steps->steps();
  return result;
}

// The uninterrupted run, trained once for all tests.
class ResumeEdgeTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    full_dir_ = new std::string(FreshDir("full"));
    full_ = new Result(RunTraining(*full_dir_, std::nullopt));
  }
  static void TearDownTestSuite() {
    delete full_;
    delete full_dir_;
  }
  static const std::string& full_dir() { return *full_dir_; }
  static const Result& full() { return *full_; }

 private:
  static std::string* full_dir_;
  static Result* full_;
};
std::string* ResumeEdgeTest::full_dir_ = nullptr;
Result* ResumeEdgeTest::full_ = nullptr;

TEST_F(ResumeEdgeTest, UninterruptedRunIsTheReference) {
  EXPECT_EQ(full().begin_step, 0);
  EXPECT_EQ(full().steps, std::vector<int64_t>({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}));
  EXPECT_THAT(ListDir(full_dir()), ElementsAreArray(CheckpointNames({2, 4, 6, 8, 10, 12})));
}

TEST_F(ResumeEdgeTest, ExplicitPathEqualsLatest) {
  // Stop after checkpoint-6, copy the output dir, resume one copy from "latest" and the
  // other from the explicit path of its checkpoint-6.
  const std::string latest_dir = FreshDir("latest");
  const std::string path_dir = FreshDir("path");
  Result stopped = RunTraining(latest_dir, std::nullopt, /*stop_after=*/6);
  EXPECT_EQ(stopped.steps, std::vector<int64_t>({1, 2, 3, 4, 5, 6}));
  std::filesystem::copy(latest_dir, path_dir, std::filesystem::copy_options::recursive);

  Result latest = RunTraining(latest_dir, trainer::ResumeFrom::Latest());
  Result path = RunTraining(path_dir, trainer::ResumeFrom::Path(path_dir + "/checkpoint-6"));
  EXPECT_EQ(latest.begin_step, 6);
  EXPECT_EQ(path.begin_step, 6);
  EXPECT_EQ(latest.steps, std::vector<int64_t>({7, 8, 9, 10, 11, 12}));
  EXPECT_EQ(path.steps, latest.steps);
  EXPECT_EQ(path.digest, latest.digest);
  EXPECT_EQ(latest.digest, full().digest);
  for (const char* file : {"model.safetensors", "optimizer.pt", "scheduler.pt"}) {
    SCOPED_TRACE(file);
    EXPECT_TRUE(MustRead(path_dir + "/checkpoint-12/" + file) ==
                MustRead(latest_dir + "/checkpoint-12/" + file));
  }
}

TEST_F(ResumeEdgeTest, ExplicitPathToAnOlderCheckpointOfAnotherRun) {
  // full_dir's latest is checkpoint-12; the path picks checkpoint-4 and the new run writes
  // into its own, empty output dir.
  const std::string dir = FreshDir("from_other_run");
  Result r = RunTraining(dir, trainer::ResumeFrom::Path(full_dir() + "/checkpoint-4"));
  EXPECT_EQ(r.begin_step, 4);
  EXPECT_EQ(r.steps, std::vector<int64_t>({5, 6, 7, 8, 9, 10, 11, 12}));
  EXPECT_EQ(r.digest, full().digest);
  EXPECT_THAT(ListDir(dir), ElementsAreArray(CheckpointNames({6, 8, 10, 12})));
  EXPECT_TRUE(MustRead(dir + "/checkpoint-12/model.safetensors") ==
              MustRead(full_dir() + "/checkpoint-12/model.safetensors"));
}

TEST_F(ResumeEdgeTest, CorruptedNewestCheckpointIsSkippedForTheNextOlder) {
  const std::string dir = FreshDir("corrupted");
  RunTraining(dir, std::nullopt, /*stop_after=*/6);
  ASSERT_THAT(ListDir(dir), ElementsAreArray(CheckpointNames({2, 4, 6})));
  // Flip one byte in the middle of checkpoint-6's optimizer.pt (same size, same name).
  const std::string victim = dir + "/checkpoint-6/optimizer.pt";
  const auto size = std::filesystem::file_size(victim);
  ASSERT_GT(size, 100u);
  {
    std::fstream f(victim, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(size / 2);
    char c = 0;
    f.read(&c, 1);
    c ^= 0x5a;
    f.seekp(size / 2);
    f.write(&c, 1);
  }
  Result r = RunTraining(dir, trainer::ResumeFrom::Latest());
  EXPECT_EQ(r.begin_step, 4);  // checkpoint-4, not the corrupted checkpoint-6
  EXPECT_EQ(r.steps, std::vector<int64_t>({5, 6, 7, 8, 9, 10, 11, 12}));
  EXPECT_EQ(r.digest, full().digest);
  // checkpoint-6 was written again by the resumed run, replacing the corrupted one.
  EXPECT_THAT(ListDir(dir), ElementsAreArray(CheckpointNames({2, 4, 6, 8, 10, 12})));
  for (const char* file : {"model.safetensors", "optimizer.pt"}) {
    SCOPED_TRACE(file);
    EXPECT_TRUE(MustRead(dir + "/checkpoint-6/" + file) ==
                MustRead(full_dir() + "/checkpoint-6/" + file));
  }
}

TEST_F(ResumeEdgeTest, NoCheckpointIsNotFoundNamingTheOutputDir) {
  TrainerSetup setup;
  // An existing, empty output dir.
  setup.args = BaseArgs(FreshDir("empty"));
  std::filesystem::create_directories(setup.args.output_dir());
  {
    ASSERT_OK_AND_ASSIGN(auto t, MakeTrainer(setup));
    EXPECT_THAT(t->Train(trainer::ResumeFrom::Latest()).status(),
                StatusIs(absl::StatusCode::kNotFound, HasSubstr(setup.args.output_dir())));
  }
  EXPECT_THAT(ListDir(setup.args.output_dir()), ElementsAre());
  // Entries that only look like checkpoints (HF's get_last_checkpoint ignores them).
  std::filesystem::create_directories(setup.args.output_dir() + "/checkpoint-abc");
  std::filesystem::create_directories(setup.args.output_dir() + "/checkpoint-7.tmp");
  std::ofstream(setup.args.output_dir() + "/checkpoint-9") << "a file, not a folder";
  {
    ASSERT_OK_AND_ASSIGN(auto t, MakeTrainer(setup));
    EXPECT_THAT(t->Train(trainer::ResumeFrom::Latest()).status(),
                StatusIs(absl::StatusCode::kNotFound, HasSubstr(setup.args.output_dir())));
  }
  // An output dir that does not exist.
  setup.args = BaseArgs(FreshDir("missing"));
  {
    ASSERT_OK_AND_ASSIGN(auto t, MakeTrainer(setup));
    EXPECT_THAT(t->Train(trainer::ResumeFrom::Latest()).status(),
                StatusIs(absl::StatusCode::kNotFound, HasSubstr(setup.args.output_dir())));
  }
}

TEST_F(ResumeEdgeTest, ExplicitPathThatDoesNotExistIsNotFoundNamingIt) {
  TrainerSetup setup;
  setup.args = BaseArgs(FreshDir("bad_path"));
  const std::string missing = full_dir() + "/checkpoint-99";
  ASSERT_OK_AND_ASSIGN(auto t, MakeTrainer(setup));
  EXPECT_THAT(t->Train(trainer::ResumeFrom::Path(missing)).status(),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr(missing)));
}

TEST_F(ResumeEdgeTest, FinalCheckpointTrainsNoFurtherSteps) {
  const std::string dir = FreshDir("final");
  std::filesystem::copy(full_dir(), dir, std::filesystem::copy_options::recursive);
  ASSERT_OK_AND_ASSIGN(TensorBytes saved,
                       SafetensorsBytes(dir + "/checkpoint-12/model.safetensors"));
  ASSERT_OK_AND_ASSIGN(std::string saved_optimizer, FileBytes(dir + "/checkpoint-12/optimizer.pt"));

  TrainerSetup setup;
  setup.args = BaseArgs(dir);
  auto steps = std::make_shared<StepRecorder>();
  auto saves = std::make_shared<SaveRecorder>(dir);
  setup.callbacks = {steps, saves};
  ASSERT_OK_AND_ASSIGN(auto t, MakeTrainer(setup));
  ASSERT_OK_AND_ASSIGN(trainer::TrainOutput out, t->Train(trainer::ResumeFrom::Latest()));
  EXPECT_EQ(out.global_step, 12);
  EXPECT_EQ(t->state().global_step, 12);
  EXPECT_EQ(steps->begin_step(), 12);
  EXPECT_THAT(steps->steps(), ElementsAre());
  EXPECT_TRUE(saves->folders().empty());
  EXPECT_TRUE(ModelBytes(t->model()) == saved);
  // Nothing was rewritten.
  EXPECT_THAT(ListDir(dir), ElementsAreArray(CheckpointNames({2, 4, 6, 8, 10, 12})));
  EXPECT_TRUE(MustRead(dir + "/checkpoint-12/optimizer.pt") == saved_optimizer);
}

}  // namespace
}  // namespace loom::tests::checkpointing
