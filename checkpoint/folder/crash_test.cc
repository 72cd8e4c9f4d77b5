// Crash safety under SIGKILL. A forked child writes checkpoint folders; the parent kills it
// (1) at every step of Commit() for every way of committing, and (2) at random moments while
// it saves, replaces and rotates folders in a loop. After each kill, every visible
// checkpoint-<N> folder must verify and hold exactly what the child wrote (checked without the
// manifest too), FindLastCheckpoint must return the newest one (or none) and skip nothing, and
// RemoveStaleStaging must leave no hidden folder behind.
//
// SIGKILL keeps the page cache, so this covers process crashes; power loss additionally relies
// on the fsyncs, which these tests cannot observe.
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "base/status_matchers.h"
#include "checkpoint/folder/discovery.h"
#include "checkpoint/folder/names.h"
#include "checkpoint/folder/rotation.h"
#include "checkpoint/folder/staged_folder.h"
#include "checkpoint/folder/test_util.h"
#include "checkpoint/folder/verify.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

#ifndef LOOM_CRASH_KILLS
#define LOOM_CRASH_KILLS 30
#endif

namespace loom::checkpoint {
namespace {

using testing::CommitFolder;
using ::testing::ElementsAreArray;
using testing::FileMap;
using testing::HfFiles;
using ::testing::IsEmpty;
using testing::ListNames;
using testing::NewTempDir;
using testing::ReadTree;

// Runs `body` in a forked child that must die by SIGKILL (from itself or the parent, after
// `kill_after`); returns whether it did.
template <typename Body>
bool RunChildUntilKilled(Body body, std::optional<std::chrono::microseconds> kill_after) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    body();
    ::_exit(0);  // finished without being killed
  }
  if (pid < 0) return false;
  if (kill_after.has_value()) {
    std::this_thread::sleep_for(*kill_after);
    ::kill(pid, SIGKILL);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
}

std::vector<std::string> HiddenKinds(const std::string& out) {
  std::vector<std::string> kinds;
  for (const std::string& name : ListNames(out)) {
    std::optional<HiddenFolder> hidden = ParseHiddenFolderName(name);
    if (hidden.has_value()) kinds.push_back(std::string(HiddenKindName(hidden->kind)));
  }
  return kinds;
}

FileMap WithoutManifest(FileMap files) {
  files.erase(std::string(kManifestFileName));
  return files;
}

// ---------------------------------------------------------------------------------------------
// (1) A kill at each step of Commit().

constexpr int kMidWrite = -1;  // killed after writing half the files, before Commit()

struct WindowCase {
  ReplaceMethod method;
  bool existing;       // checkpoint-40 exists (holding "old") before the commit
  int step;            // CommitStep or kMidWrite
  const char* before;  // what checkpoint-40 holds right after the kill: "old", "new", ""
  std::vector<std::string> hidden;  // kinds of hidden folders right after the kill
  const char* after;                // what it holds after RemoveStaleStaging
};

std::string Describe(const WindowCase& c) {
  return absl::StrCat(c.method == ReplaceMethod::kAtomicExchange ? "exchange" : "rename-aside",
                      c.existing ? " over an existing folder" : " as a new folder",
                      ", killed at step ", c.step);
}

TEST(CrashTest, KillAtEveryCommitStepLeavesACompleteFolderOrNone) {
  using S = CommitStep;
  const auto kExchange = ReplaceMethod::kAtomicExchange;
  const auto kAside = ReplaceMethod::kRenameAside;
  const std::vector<WindowCase> cases = {
      {kExchange, false, kMidWrite, "", {"staging"}, ""},
      {kExchange, false, int(S::kManifestWritten), "", {"staging"}, ""},
      {kExchange, false, int(S::kRenamed), "new", {}, "new"},
      {kExchange, false, int(S::kParentSynced), "new", {}, "new"},
      {kExchange, true, kMidWrite, "old", {"staging"}, "old"},
      {kExchange, true, int(S::kManifestWritten), "old", {"staging"}, "old"},
      {kExchange, true, int(S::kRenamed), "new", {"staging"}, "new"},
      {kExchange, true, int(S::kParentSynced), "new", {"staging"}, "new"},
      {kExchange, true, int(S::kOldRemoved), "new", {}, "new"},
      {kAside, true, int(S::kManifestWritten), "old", {"staging"}, "old"},
      {kAside, true, int(S::kOldMovedAside), "", {"replaced", "staging"}, "old"},
      {kAside, true, int(S::kRenamed), "new", {"replaced"}, "new"},
      {kAside, true, int(S::kParentSynced), "new", {"replaced"}, "new"},
      {kAside, true, int(S::kOldRemoved), "new", {}, "new"},
  };
  const FileMap old_files = HfFiles("old");
  const FileMap new_files = HfFiles("new");
  for (const WindowCase& c : cases) {
    SCOPED_TRACE(Describe(c));
    const std::string out = NewTempDir("window");
    if (c.existing) {
      ASSERT_OK(CommitFolder(out, "checkpoint-40", old_files).status());
    }
    ASSERT_OK(CommitFolder(out, "checkpoint-10", HfFiles("ten")).status());
    const bool killed = RunChildUntilKilled(
        [&] {
          StagedFolderOptions options;
          options.replace = c.method;
          options.after_step = [&](CommitStep step) {
            if (int(step) == c.step) ::raise(SIGKILL);
          };
          absl::StatusOr<StagedFolder> staged = StagedFolder::Begin(out, "checkpoint-40", options);
          if (!staged.ok()) return;
          int written = 0;
          for (const auto& [name, contents] : new_files) {
            if (c.step == kMidWrite && written++ == 3) ::raise(SIGKILL);
            if (!staged->WriteFile(name, contents).ok()) return;
          }
          (void)staged->Commit();
        },
        std::nullopt);
    ASSERT_TRUE(killed);

    auto expect_contents = [&](const std::string& what) {
      if (what[0] == '\0') {
        EXPECT_FALSE(std::filesystem::exists(out + "/checkpoint-40"));
        return;
      }
      EXPECT_OK(VerifyFolder(out + "/checkpoint-40").status());
      EXPECT_EQ(WithoutManifest(ReadTree(out + "/checkpoint-40")),
                std::string(what) == "old" ? old_files : new_files);
    };
    expect_contents(c.before);
    EXPECT_THAT(HiddenKinds(out), ElementsAreArray(c.hidden));
    ASSERT_OK_AND_ASSIGN(LastCheckpoint last, FindLastCheckpoint(out));
    EXPECT_EQ(last.path.filename(), c.before[0] != '\0' ? "checkpoint-40" : "checkpoint-10");
    EXPECT_THAT(last.skipped, IsEmpty());

    ASSERT_OK(RemoveStaleStaging(out).status());
    EXPECT_THAT(HiddenKinds(out), IsEmpty());
    expect_contents(c.after);
    ASSERT_OK_AND_ASSIGN(last, FindLastCheckpoint(out));
    EXPECT_EQ(last.path.filename(), c.after[0] != '\0' ? "checkpoint-40" : "checkpoint-10");
  }
}

// ---------------------------------------------------------------------------------------------
// (2) Kills at random moments of a save / replace / rotate loop.

// A file whose first line names its origin, followed by bytes derived from it, so that its
// contents can be checked without the manifest.
std::string FileContents(int64_t step, int64_t generation, int index, size_t size) {
  std::string out =
      absl::StrCat("step=", step, " gen=", generation, " file=", index, " size=", size, "\n");
  std::mt19937_64 rng(static_cast<uint64_t>(step * 1000003 + generation * 7919 + index));
  while (out.size() < size) out.push_back(static_cast<char>(rng()));
  return out;
}

// Whether `contents` is what FileContents wrote (using the first line).
bool SelfConsistent(const std::string& contents) {
  const size_t eol = contents.find('\n');
  if (eol == std::string::npos) return false;
  int64_t step = 0, gen = 0, index = 0;
  uint64_t size = 0;
  std::vector<std::string> parts = absl::StrSplit(contents.substr(0, eol), ' ');
  if (parts.size() != 4 || !absl::SimpleAtoi(absl::StripPrefix(parts[0], "step="), &step) ||
      !absl::SimpleAtoi(absl::StripPrefix(parts[1], "gen="), &gen) ||
      !absl::SimpleAtoi(absl::StripPrefix(parts[2], "file="), &index) ||
      !absl::SimpleAtoi(absl::StripPrefix(parts[3], "size="), &size)) {
    return false;
  }
  return contents == FileContents(step, gen, static_cast<int>(index), size);
}

// The writer: saves checkpoint-<10 i> with 4 files of random sizes (every third save replaces
// the newest folder instead), alternates the replace method, pauses randomly between commit
// steps, and rotates with save_total_limit=3 keeping checkpoint-10 as the best.
[[noreturn]] void WriterLoop(const std::string& out, int64_t first_index, int64_t generation) {
  std::mt19937_64 rng(static_cast<uint64_t>(generation));
  int64_t newest_step = -1;
  for (int64_t i = first_index;; ++i) {
    const bool replace = newest_step >= 0 && i % 3 == 2;
    const int64_t step = replace ? newest_step : i * 10;
    StagedFolderOptions options;
    options.replace = i % 2 == 0 ? ReplaceMethod::kAtomicExchange : ReplaceMethod::kRenameAside;
    // Linger up to 2 ms after each step so that kills land in every window between steps.
    options.after_step = [&rng](CommitStep) {
      std::this_thread::sleep_for(std::chrono::microseconds(rng() % 2000));
    };
    absl::StatusOr<StagedFolder> staged =
        StagedFolder::Begin(out, CheckpointFolderName(step), options);
    if (!staged.ok()) ::_exit(2);
    for (int k = 0; k < 4; ++k) {
      const size_t size = 64 + rng() % (96 << 10);
      if (!staged->WriteFile(absl::StrCat("file", k, ".bin"), FileContents(step, i, k, size))
               .ok()) {
        ::_exit(3);
      }
    }
    if (!staged->Commit().ok()) ::_exit(4);
    newest_step = step;
    RotationOptions rotation;
    rotation.save_total_limit = 3;
    rotation.best_model_checkpoint = out + "/checkpoint-10";
    if (!RotateCheckpoints(out, rotation).ok()) ::_exit(5);
  }
}

TEST(CrashTest, RandomKillsNeverExposeAPartialFolder) {
  const std::string out = NewTempDir("crash");
  std::mt19937_64 rng(20261122);
  int rounds_with_leftovers = 0;
  int rounds_with_checkpoints = 0;
  int rounds_with_restores = 0;
  int64_t next_index = 1;
  for (int round = 0; round < LOOM_CRASH_KILLS; ++round) {
    SCOPED_TRACE(absl::StrCat("round ", round));
    // Kill somewhere in the first ~60 ms: several saves happen in that time.
    const std::chrono::microseconds delay(500 + rng() % 60000);
    ASSERT_TRUE(RunChildUntilKilled([&] { WriterLoop(out, next_index, round + 1); }, delay))
        << "the writer exited on its own (an error in the loop)";

    // Every visible checkpoint folder is complete.
    std::vector<std::string> visible;
    int64_t newest = -1;
    for (const std::string& name : ListNames(out)) {
      std::optional<int64_t> step = ParseCheckpointFolderName(name);
      if (!step.has_value()) continue;
      visible.push_back(name);
      newest = std::max(newest, *step);
      const std::string dir = out + "/" + name;
      FolderCheck check = CheckFolder(dir);
      EXPECT_EQ(check.code, absl::StatusCode::kOk) << name << ": " << check.reason;
      const FileMap files = WithoutManifest(ReadTree(dir));
      EXPECT_EQ(files.size(), 4u) << name;
      for (const auto& [file, contents] : files) {
        EXPECT_TRUE(SelfConsistent(contents)) << name << "/" << file;
        EXPECT_EQ(contents.rfind(absl::StrCat("step=", *step, " "), 0), 0u) << name << "/" << file;
      }
    }
    if (!visible.empty()) ++rounds_with_checkpoints;
    ASSERT_OK_AND_ASSIGN(LastCheckpoint last, FindLastCheckpoint(out));
    EXPECT_THAT(last.skipped, IsEmpty());
    EXPECT_EQ(last.step, newest);
    if (!last.hidden.empty()) ++rounds_with_leftovers;

    // A folder renamed aside whose name is absent (a kill between the two renames of a
    // kRenameAside replacement) must come back; nothing else changes.
    std::set<std::string> expected_after(visible.begin(), visible.end());
    for (const std::string& name : last.hidden) {
      std::optional<HiddenFolder> h = ParseHiddenFolderName(name);
      if (h->kind == HiddenKind::kReplaced && !expected_after.count(h->name)) {
        expected_after.insert(h->name);
        ++rounds_with_restores;
      }
    }
    ASSERT_OK_AND_ASSIGN(StaleCleanup cleanup, RemoveStaleStaging(out));
    EXPECT_THAT(cleanup.skipped_live, IsEmpty());
    EXPECT_EQ(cleanup.removed.size() + cleanup.restored.size(), last.hidden.size());
    std::set<std::string> after;
    for (const std::string& name : ListNames(out)) {
      EXPECT_FALSE(ParseHiddenFolderName(name).has_value()) << name;
      if (ParseCheckpointFolderName(name).has_value()) {
        after.insert(name);
        EXPECT_OK(VerifyFolder(out + "/" + name).status());
      }
    }
    EXPECT_EQ(after, expected_after);
    ASSERT_OK_AND_ASSIGN(last, FindLastCheckpoint(out));
    EXPECT_THAT(last.skipped, IsEmpty());
    next_index = std::max<int64_t>(next_index, last.step / 10) + 1;
  }
  // The kills landed in the middle of saves (hidden folders were left) and after some.
  EXPECT_GT(rounds_with_leftovers, 0);
  EXPECT_GT(rounds_with_checkpoints, 0);
  std::printf("%d kills: %d left hidden folders, %d had checkpoints, %d needed a restore\n",
              LOOM_CRASH_KILLS, rounds_with_leftovers, rounds_with_checkpoints,
              rounds_with_restores);
}

}  // namespace
}  // namespace loom::checkpoint
