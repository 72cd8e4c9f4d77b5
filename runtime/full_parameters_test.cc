#include "runtime/full_parameters.h"

#include <stdexcept>
#include <vector>

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::runtime {
namespace {

using ::loom::base::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Records the calls a scope makes; Begin/End fail when told to.
class Recording : public sharding::ShardingStrategy {
 public:
  std::vector<std::string> calls;
  absl::Status begin = absl::OkStatus();
  absl::Status end = absl::OkStatus();

  std::string Name() const override { return "recording"; }
  sharding::StrategyCapabilities Capabilities() const override { return {}; }
  sharding::DataParallelTopology Topology() const override {
    return sharding::DataParallelTopology::PerRank(1, 0);
  }
  absl::Status BeforeForward(bool) override { return absl::OkStatus(); }
  absl::Status AfterBackward() override { return absl::OkStatus(); }
  absl::StatusOr<std::optional<double>> ClipGradients(double) override { return std::nullopt; }
  absl::StatusOr<bool> OptimizerStep() override { return true; }
  void ZeroGrad() override {}
  sharding::ModelStateBytes StateBytes() const override { return {}; }
  absl::Status BeginFullParameters() override {
    calls.push_back("begin");
    return begin;
  }
  absl::Status EndFullParameters(bool write_back) override {
    calls.push_back(write_back ? "end+write_back" : "end");
    return end;
  }
};

TEST(FullParametersTest, WritesBackOnlyWhenTheWorkSucceeded) {
  Recording s;
  ASSERT_OK(WithFullParameters(&s, /*write_back=*/true, "w", [] { return absl::OkStatus(); }));
  EXPECT_THAT(WithFullParameters(&s, /*write_back=*/true, "w",
                                 [] { return absl::DataLossError("bad weights"); }),
              StatusIs(absl::StatusCode::kDataLoss, "bad weights"));
  ASSERT_OK(WithFullParameters(&s, /*write_back=*/false, "w", [] { return absl::OkStatus(); }));
  EXPECT_THAT(s.calls, ElementsAre("begin", "end+write_back", "begin", "end", "begin", "end"));
}

TEST(FullParametersTest, TheFirstErrorWinsAndTheParametersAreAlwaysReleased) {
  Recording s;
  s.end = absl::InternalError("release failed");
  // The work's error over the release's.
  EXPECT_THAT(WithFullParameters(&s, true, "w", [] { return absl::NotFoundError("no file"); }),
              StatusIs(absl::StatusCode::kNotFound, ::testing::_));
  // The release's error when the work succeeded.
  EXPECT_THAT(WithFullParameters(&s, true, "w", [] { return absl::OkStatus(); }),
              StatusIs(absl::StatusCode::kInternal, "release failed"));
  // An exception is the work's error (naming `what`), and the release still happens.
  s.end = absl::OkStatus();
  s.calls.clear();
  EXPECT_THAT(WithFullParameters(&s, true, "saving the model",
                                 []() -> absl::Status { throw std::runtime_error("boom"); }),
              StatusIs(absl::StatusCode::kInternal, HasSubstr("saving the model")));
  EXPECT_THAT(s.calls, ElementsAre("begin", "end"));
  // A failed gather runs nothing and releases nothing.
  s.begin = absl::UnavailableError("peer gone");
  s.calls.clear();
  bool ran = false;
  EXPECT_THAT(WithFullParameters(&s, true, "w", [&] {
                ran = true;
                return absl::OkStatus();
              }),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("gathering")));
  EXPECT_FALSE(ran);
  EXPECT_THAT(s.calls, ElementsAre("begin"));
}

TEST(FullParametersTest, AScopeLeftWithoutEndReleasesWithoutWriteBack) {
  Recording s;
  {
    ASSERT_OK_AND_ASSIGN(FullParametersScope scope, FullParametersScope::Begin(&s));
    FullParametersScope moved = std::move(scope);  // one release, by the owner
  }
  EXPECT_THAT(s.calls, ElementsAre("begin", "end"));
  // No strategy: the parameters are whole already.
  ASSERT_OK(WithFullParameters(nullptr, true, "w", [] { return absl::OkStatus(); }));
}

}  // namespace
}  // namespace loom::runtime
