#include "checkpoint/folder/rotation.h"

#include <sys/stat.h>
#include <unistd.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/status_matchers.h"
#include "checkpoint/folder/test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::checkpoint {
namespace {

using ::loom::base::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::ListNames;
using testing::NewTempDir;
using testing::WriteTree;

std::string MakeOutputDir(const std::vector<int>& steps) {
  const std::string out = NewTempDir("rotation");
  for (int step : steps) {
    WriteTree(out + "/checkpoint-" + std::to_string(step), {{"model.safetensors", "w"}});
  }
  return out;
}

std::vector<std::string> Names(const std::vector<std::filesystem::path>& paths) {
  std::vector<std::string> names;
  for (const auto& p : paths) names.push_back(p.filename().string());
  return names;
}

struct Outcome {
  std::vector<std::string> deleted;
  std::vector<std::string> kept;
};

// Rotates checkpoint-10 ... checkpoint-60 with `limit` and the best checkpoint at `best`.
Outcome Rotate(std::optional<int64_t> limit, std::optional<int> best) {
  const std::string out = MakeOutputDir({10, 20, 30, 40, 50, 60});
  RotationOptions options;
  options.save_total_limit = limit;
  if (best.has_value())
    options.best_model_checkpoint = out + "/checkpoint-" + std::to_string(*best);
  absl::StatusOr<RotationResult> result = RotateCheckpoints(out, options);
  EXPECT_OK(result.status());
  if (!result.ok()) return {};
  EXPECT_THAT(result->failures, IsEmpty());
  for (const auto& p : result->deleted) EXPECT_EQ(p.parent_path(), out);
  return Outcome{Names(result->deleted), ListNames(out)};
}

// Every expectation below follows HF's _rotate_checkpoints by hand (see rotation.h).
TEST(RotationTest, NoRotationWithoutAPositiveLimitOrWithFewFolders) {
  const std::vector<std::string> all = {"checkpoint-10", "checkpoint-20", "checkpoint-30",
                                        "checkpoint-40", "checkpoint-50", "checkpoint-60"};
  for (std::optional<int64_t> limit :
       {std::optional<int64_t>(), std::optional<int64_t>(0), std::optional<int64_t>(-1),
        std::optional<int64_t>(6), std::optional<int64_t>(10)}) {
    Outcome o = Rotate(limit, 20);
    EXPECT_THAT(o.deleted, IsEmpty());
    EXPECT_THAT(o.kept, ElementsAreArray(all));
  }
}

TEST(RotationTest, WithoutBestTheOldestGo) {
  Outcome l1 = Rotate(1, std::nullopt);
  EXPECT_THAT(l1.deleted, ElementsAre("checkpoint-10", "checkpoint-20", "checkpoint-30",
                                      "checkpoint-40", "checkpoint-50"));
  EXPECT_THAT(l1.kept, ElementsAre("checkpoint-60"));
  Outcome l2 = Rotate(2, std::nullopt);
  EXPECT_THAT(l2.deleted,
              ElementsAre("checkpoint-10", "checkpoint-20", "checkpoint-30", "checkpoint-40"));
  EXPECT_THAT(l2.kept, ElementsAre("checkpoint-50", "checkpoint-60"));
  Outcome l3 = Rotate(3, std::nullopt);
  EXPECT_THAT(l3.deleted, ElementsAre("checkpoint-10", "checkpoint-20", "checkpoint-30"));
  EXPECT_THAT(l3.kept, ElementsAre("checkpoint-40", "checkpoint-50", "checkpoint-60"));
  Outcome l5 = Rotate(5, std::nullopt);
  EXPECT_THAT(l5.deleted, ElementsAre("checkpoint-10"));
  EXPECT_THAT(l5.kept, ElementsAre("checkpoint-20", "checkpoint-30", "checkpoint-40",
                                   "checkpoint-50", "checkpoint-60"));
}

// HF (transformers 4.41 `_sorted_checkpoints`): limit 5 keeps the 4 most recent + best.
TEST(RotationTest, LimitFiveKeepsTheFourMostRecentAndTheBest) {
  Outcome best10 = Rotate(5, 10);
  EXPECT_THAT(best10.deleted, ElementsAre("checkpoint-20"));
  EXPECT_THAT(best10.kept, ElementsAre("checkpoint-10", "checkpoint-30", "checkpoint-40",
                                       "checkpoint-50", "checkpoint-60"));
  Outcome best20 = Rotate(5, 20);
  EXPECT_THAT(best20.deleted, ElementsAre("checkpoint-10"));
  EXPECT_THAT(best20.kept, ElementsAre("checkpoint-20", "checkpoint-30", "checkpoint-40",
                                       "checkpoint-50", "checkpoint-60"));
  Outcome best60 = Rotate(5, 60);
  EXPECT_THAT(best60.deleted, ElementsAre("checkpoint-10"));
}

TEST(RotationTest, LimitsTwoAndThreeKeepTheBestBesideTheNewest) {
  Outcome l2 = Rotate(2, 10);
  EXPECT_THAT(l2.deleted,
              ElementsAre("checkpoint-20", "checkpoint-30", "checkpoint-40", "checkpoint-50"));
  EXPECT_THAT(l2.kept, ElementsAre("checkpoint-10", "checkpoint-60"));
  Outcome l3 = Rotate(3, 20);
  // Deleted in the order of the bubbled list: 10, 30, 40.
  EXPECT_THAT(l3.deleted, ElementsAre("checkpoint-10", "checkpoint-30", "checkpoint-40"));
  EXPECT_THAT(l3.kept, ElementsAre("checkpoint-20", "checkpoint-50", "checkpoint-60"));
  Outcome l3_best50 = Rotate(3, 50);
  EXPECT_THAT(l3_best50.kept, ElementsAre("checkpoint-40", "checkpoint-50", "checkpoint-60"));
}

// HF (transformers 4.41 `_rotate_checkpoints`): limit 1 can leave 2 (the last and the best).
TEST(RotationTest, LimitOneKeepsTheLastAndTheBestWhenTheyDiffer) {
  Outcome best20 = Rotate(1, 20);
  EXPECT_THAT(best20.deleted,
              ElementsAre("checkpoint-10", "checkpoint-30", "checkpoint-40", "checkpoint-50"));
  EXPECT_THAT(best20.kept, ElementsAre("checkpoint-20", "checkpoint-60"));
  Outcome best50 = Rotate(1, 50);
  EXPECT_THAT(best50.kept, ElementsAre("checkpoint-50", "checkpoint-60"));
  Outcome best60 = Rotate(1, 60);
  EXPECT_THAT(best60.kept, ElementsAre("checkpoint-60"));
  // HF raises the limit to 2 whenever the last folder is not the best, even when the best is
  // not among the folders at all.
  Outcome gone = Rotate(1, 999);
  EXPECT_THAT(gone.kept, ElementsAre("checkpoint-50", "checkpoint-60"));
}

TEST(RotationTest, SortedCheckpointsBubblesTheBestToSecondToLast) {
  const std::string out = MakeOutputDir({60, 10, 30, 20, 50, 40});
  ASSERT_OK_AND_ASSIGN(auto plain, SortedCheckpoints(out));
  EXPECT_THAT(Names(plain), ElementsAre("checkpoint-10", "checkpoint-20", "checkpoint-30",
                                        "checkpoint-40", "checkpoint-50", "checkpoint-60"));
  EXPECT_EQ(plain[0], out + "/checkpoint-10");
  const std::vector<std::pair<int, std::vector<std::string>>> cases = {
      {10, {"20", "30", "40", "50", "10", "60"}}, {20, {"10", "30", "40", "50", "20", "60"}},
      {40, {"10", "20", "30", "50", "40", "60"}}, {50, {"10", "20", "30", "40", "50", "60"}},
      {60, {"10", "20", "30", "40", "50", "60"}},
  };
  for (const auto& [best, order] : cases) {
    std::vector<std::string> expected;
    for (const std::string& s : order) expected.push_back("checkpoint-" + s);
    ASSERT_OK_AND_ASSIGN(auto sorted,
                         SortedCheckpoints(out, out + "/checkpoint-" + std::to_string(best)));
    EXPECT_THAT(Names(sorted), ElementsAreArray(expected)) << "best " << best;
  }
  // Paths are compared normalized (HF would need the exact string).
  ASSERT_OK_AND_ASSIGN(auto spelled, SortedCheckpoints(out, out + "/./checkpoint-10/"));
  EXPECT_THAT(Names(spelled), ElementsAre("checkpoint-20", "checkpoint-30", "checkpoint-40",
                                          "checkpoint-50", "checkpoint-10", "checkpoint-60"));
  const std::string single = MakeOutputDir({7});
  ASSERT_OK_AND_ASSIGN(auto one, SortedCheckpoints(single, single + "/checkpoint-7"));
  EXPECT_THAT(Names(one), ElementsAre("checkpoint-7"));
}

TEST(RotationTest, HfsLenientNamePatternIsReproduced) {
  const std::string out = NewTempDir("rotation");
  for (const char* name : {"checkpoint-5", "checkpoint-10", "checkpoint-10.tmp", "checkpoint-010",
                           "checkpoint-abc", ".loom-staging-checkpoint-3.1.0123456789abcdef"}) {
    WriteTree(out + "/" + name, {{"f", "x"}});
  }
  WriteTree(out, {{"checkpoint-1", "a regular file"}});
  ASSERT_OK_AND_ASSIGN(auto sorted, SortedCheckpoints(out));
  EXPECT_THAT(Names(sorted),
              ElementsAre("checkpoint-5", "checkpoint-010", "checkpoint-10", "checkpoint-10.tmp"));
  RotationOptions options;
  options.save_total_limit = 1;
  ASSERT_OK_AND_ASSIGN(RotationResult r, RotateCheckpoints(out, options));
  EXPECT_THAT(Names(r.deleted), ElementsAre("checkpoint-5", "checkpoint-010", "checkpoint-10"));
  EXPECT_THAT(ListNames(out), ElementsAre(".loom-staging-checkpoint-3.1.0123456789abcdef",
                                          "checkpoint-1", "checkpoint-10.tmp", "checkpoint-abc"));
}

TEST(RotationTest, SymlinkedCheckpointsAreCountedButNotDeleted) {
  const std::string out = MakeOutputDir({10, 20});
  WriteTree(out + "/real", {{"f", "x"}});
  ASSERT_EQ(::symlink("real", (out + "/checkpoint-5").c_str()), 0);
  RotationOptions options;
  options.save_total_limit = 1;
  ASSERT_OK_AND_ASSIGN(RotationResult r, RotateCheckpoints(out, options));
  EXPECT_THAT(Names(r.deleted), ElementsAre("checkpoint-10"));
  ASSERT_EQ(r.failures.size(), 1u);
  EXPECT_THAT(r.failures[0], HasSubstr("checkpoint-5': is a symbolic link; not deleted"));
  EXPECT_THAT(ListNames(out), ElementsAre("checkpoint-20", "checkpoint-5", "real"));
}

TEST(RotationTest, DeleteCheckpointFolderLeavesNothingBehind) {
  const std::string out = MakeOutputDir({10});
  WriteTree(out + "/checkpoint-10", {{"sub/deep/file", "data"}});
  ASSERT_OK(DeleteCheckpointFolder(out + "/checkpoint-10/"));
  EXPECT_THAT(ListNames(out), IsEmpty());
  EXPECT_THAT(DeleteCheckpointFolder(out + "/checkpoint-10"),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("cannot delete checkpoint folder '" + out + "/checkpoint-10'")));
  EXPECT_THAT(SortedCheckpoints(out + "/nope"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("/nope' does not exist")));
}

}  // namespace
}  // namespace loom::checkpoint
