// Test helpers for checkpoint/folder (testonly): temporary directories under TEST_TMPDIR,
// directory listings, whole-tree reads and writes, and in-place damage to files.
//
// Example:
//   const std::string out = NewTempDir("discovery");
//   ASSERT_OK(CommitFolder(out, "checkpoint-10", {{"model.safetensors", "abc"}}).status());
//   EXPECT_THAT(ListNames(out), ElementsAre("checkpoint-10"));
#ifndef LOOM_CHECKPOINT_FOLDER_TEST_UTIL_H_
#define LOOM_CHECKPOINT_FOLDER_TEST_UTIL_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "checkpoint/folder/staged_folder.h"

namespace loom::checkpoint::testing {

using FileMap = std::map<std::string, std::string>;  // relative path -> contents

// A fresh empty directory under $TEST_TMPDIR (or /tmp).
std::string NewTempDir(absl::string_view label);

// Entry names in `dir` (no "." / ".."), sorted; empty when `dir` does not exist.
std::vector<std::string> ListNames(const std::string& dir);

// Entry names in `dir` that start with '.', sorted.
std::vector<std::string> HiddenNames(const std::string& dir);

// Writes every file (creating sub-directories) under `dir`.
void WriteTree(const std::string& dir, const FileMap& files);

// Every regular file under `dir`, recursively.
FileMap ReadTree(const std::string& dir);

// Begin + WriteFile for each file + Commit.
absl::StatusOr<CommitInfo> CommitFolder(const std::string& parent, const std::string& name,
                                        const FileMap& files, StagedFolderOptions options = {});

// XORs one byte of `path` with 0xff.
void FlipByte(const std::string& path, int64_t offset);

// Truncates `path` to `size` bytes.
void Truncate(const std::string& path, int64_t size);

// The standard HF checkpoint files with contents derived from `seed`.
FileMap HfFiles(absl::string_view seed);

}  // namespace loom::checkpoint::testing

#endif  // LOOM_CHECKPOINT_FOLDER_TEST_UTIL_H_
