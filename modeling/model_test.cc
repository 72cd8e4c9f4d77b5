#include "modeling/model.h"

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::modeling {
namespace {

using ::loom::base::testing::StatusIs;

class Plain : public Model {
 public:
  ModelOutput Forward(const data::Batch&) override { return {}; }
};

TEST(ModelTest, DefaultsAreHfsForPlainModules) {
  Plain m;
  EXPECT_EQ(m.ClassName(), "Plain");
  EXPECT_EQ(m.InputEmbeddingHooks(), nullptr);
  EXPECT_FALSE(m.IsGradientCheckpointing());
  EXPECT_THAT(m.EnableGradientCheckpointing({}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       ::testing::StrEq("Plain does not support gradient checkpointing.")));
  EXPECT_EQ(m.LabelNames(), std::vector<std::string>{"labels"});
  EXPECT_EQ(m.MainInputName(), "input_ids");
}

}  // namespace
}  // namespace loom::modeling
