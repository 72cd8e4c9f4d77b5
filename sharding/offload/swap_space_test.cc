// swap_space: each nvme_path check names the key it is given and the path; the free-space
// check against statvfs (too much asked: ResourceExhausted; a little: OK); OpenSwapSpace's
// folder is under the path and goes with it.
#include "sharding/offload/swap_space.h"

#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::sharding {
namespace {

using ::loom::base::testing::StatusIs;
using ::testing::HasSubstr;

constexpr char kKey[] = "zero_optimization.offload_param.nvme_path";
std::string Tmp() { return std::getenv("TEST_TMPDIR"); }

TEST(SwapSpaceTest, Checks) {
  const aio::AioOptions aio = aio::AioOptions().set_block_size(4096);
  EXPECT_OK(CheckNvmePath(kKey, Tmp(), aio).status());
  EXPECT_THAT(CheckNvmePath(kKey, Tmp() + "/none", aio),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr(std::string(kKey) + ": " + Tmp() + "/none")));
  std::ofstream(Tmp() + "/f") << "x";
  EXPECT_THAT(CheckNvmePath(kKey, Tmp() + "/f", aio),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("is not a folder")));
  EXPECT_THAT(CheckNvmePath(kKey, "/sys", aio),
              StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr(std::string(kKey))));
  EXPECT_THAT(CheckNvmePath(kKey, Tmp(), aio::AioOptions().set_block_size(6144)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("aio.block_size: 6144")));
  EXPECT_THAT(CheckSwapSpace(kKey, Tmp(), int64_t{1} << 62),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       HasSubstr(std::string(kKey) + ": " + Tmp() + " has ")));
  EXPECT_OK(CheckSwapSpace(kKey, Tmp(), 4096));
}

TEST(SwapSpaceTest, OpenMakesItsFolder) {
  std::string folder;
  {
    ASSERT_OK_AND_ASSIGN(SwapSpace space,
                         OpenSwapSpace(kKey, Tmp(), aio::AioOptions(), 4096, "loom-swap-test"));
    folder = space.folder->path();
    EXPECT_THAT(folder, HasSubstr(Tmp() + "/loom-swap-test-"));
    EXPECT_NE(space.engine, nullptr);
  }
  struct stat st;
  EXPECT_NE(::stat(folder.c_str(), &st), 0);
  EXPECT_THAT(OpenSwapSpace(kKey, Tmp(), aio::AioOptions(), int64_t{1} << 62, "x"),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("free")));
}

}  // namespace
}  // namespace loom::sharding
