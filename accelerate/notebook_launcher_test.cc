#include "accelerate/notebook_launcher.h"

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "accelerate/accelerator.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::accelerate {
namespace {

using ::loom::base::testing::StatusIs;
using ::testing::HasSubstr;

std::string Tmp() { return std::getenv("TEST_TMPDIR"); }

// Each forked rank builds an Accelerator (which joins the others over Gloo) and reduces its
// rank; every rank writes what it saw. No LibTorch use in the parent before the fork.
TEST(NotebookLauncherTest, RanksJoinOneProcessGroup) {
  ASSERT_OK(NotebookLauncher(
      []() -> absl::Status {
        absl::StatusOr<std::unique_ptr<Accelerator>> a = Accelerator::Create();
        if (!a.ok()) return a.status();
        const int rank = (*a)->process_index();
        absl::StatusOr<at::Tensor> sum =
            (*a)->Reduce(at::full({1}, static_cast<double>(rank + 1)), "sum");
        if (!sum.ok()) return sum.status();
        std::ofstream(absl::StrCat(Tmp(), "/rank", rank, ".txt"))
            << (*a)->num_processes() << " " << sum->item<double>();
        return (*a)->WaitForEveryone();
      },
      3));
  for (int rank = 0; rank < 3; ++rank) {
    std::ifstream in(absl::StrCat(Tmp(), "/rank", rank, ".txt"));
    std::stringstream s;
    s << in.rdbuf();
    EXPECT_EQ(s.str(), "3 6") << "rank " << rank;  // 1 + 2 + 3 on every rank
  }
}

TEST(NotebookLauncherTest, AFailingRankStopsTheOthersAndIsNamed) {
  absl::Status s = NotebookLauncher(
      []() -> absl::Status {
        if (std::string(std::getenv("RANK")) == "1") {
          return absl::InternalError("rank one gave up");
        }
        ::pause();  // would wait forever for the dead peer
        return absl::OkStatus();
      },
      2, {.grace_period_s = 1});
  EXPECT_THAT(s, StatusIs(absl::StatusCode::kInternal,
                          ::testing::AllOf(HasSubstr("rank 1 failed"),
                                           HasSubstr("rank one gave up"))));
  EXPECT_THAT(NotebookLauncher([] { return absl::OkStatus(); }, 0),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("num_processes")));
}

}  // namespace
}  // namespace loom::accelerate
