#include "checkpoint/folder/test_util.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "gtest/gtest.h"

namespace loom::checkpoint::testing {

namespace fs = std::filesystem;

std::string NewTempDir(absl::string_view label) {
  const char* root = std::getenv("TEST_TMPDIR");
  std::string tmpl = absl::StrCat(root != nullptr ? root : "/tmp", "/", label, ".XXXXXX");
  char* made = ::mkdtemp(tmpl.data());
  EXPECT_NE(made, nullptr) << "mkdtemp " << tmpl;
  return tmpl;
}

std::vector<std::string> ListNames(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return names;
  while (dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<std::string> HiddenNames(const std::string& dir) {
  std::vector<std::string> out;
  for (std::string& name : ListNames(dir)) {
    if (absl::StartsWith(name, ".")) out.push_back(std::move(name));
  }
  return out;
}

void WriteTree(const std::string& dir, const FileMap& files) {
  for (const auto& [relative, contents] : files) {
    const fs::path path = fs::path(dir) / relative;
    fs::create_directories(path.parent_path());
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
    ASSERT_TRUE(out.good()) << "cannot write " << path;
  }
}

FileMap ReadTree(const std::string& dir) {
  FileMap files;
  if (!fs::is_directory(dir)) return files;
  for (const fs::directory_entry& e : fs::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    std::ifstream in(e.path(), std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    files[fs::relative(e.path(), dir).string()] = ss.str();
  }
  return files;
}

absl::StatusOr<CommitInfo> CommitFolder(const std::string& parent, const std::string& name,
                                        const FileMap& files, StagedFolderOptions options) {
  ASSIGN_OR_RETURN(StagedFolder staged, StagedFolder::Begin(parent, name, std::move(options)));
  for (const auto& [relative, contents] : files) {
    RETURN_IF_ERROR(staged.WriteFile(relative, contents));
  }
  return staged.Commit();
}

void FlipByte(const std::string& path, int64_t offset) {
  std::fstream f(path, std::ios::binary | std::ios::in | std::ios::out);
  ASSERT_TRUE(f.good()) << path;
  f.seekg(offset);
  char c = 0;
  f.get(c);
  f.seekp(offset);
  f.put(static_cast<char>(c ^ 0xff));
  ASSERT_TRUE(f.good()) << path;
}

void Truncate(const std::string& path, int64_t size) {
  ASSERT_EQ(::truncate(path.c_str(), size), 0) << path;
}

FileMap HfFiles(absl::string_view seed) {
  return {
      {"model.safetensors", absl::StrCat("weights of ", seed, std::string(300, 'w'))},
      {"optimizer.pt", absl::StrCat("optimizer of ", seed, std::string(200, 'o'))},
      {"scheduler.pt", absl::StrCat("scheduler of ", seed)},
      {"rng_state.pth", absl::StrCat("rng of ", seed)},
      {"trainer_state.json", absl::StrCat("{\"global_step\": \"", seed, "\"}\n")},
      {"training_args.bin", absl::StrCat("args of ", seed)},
  };
}

}  // namespace loom::checkpoint::testing
