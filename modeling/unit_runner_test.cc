#include "modeling/unit_runner.h"

#include <torch/nn/modules/linear.h>

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::modeling {
namespace {

using ::loom::base::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

struct BlockImpl : torch::nn::Module {
  BlockImpl() { fc = register_module("fc", torch::nn::Linear(2, 2)); }
  torch::nn::Linear fc{nullptr};
};
TORCH_MODULE(Block);

struct Toy : torch::nn::Module {
  Toy() {
    first = register_module("first", Block());
    head = register_module("head", torch::nn::Linear(2, 1));
    second = register_module("second", Block());
  }
  Block first{nullptr}, second{nullptr};
  torch::nn::Linear head{nullptr};
};

struct Recorder : UnitRunner {
  at::Tensor Run(torch::nn::Module& unit, const std::function<at::Tensor()>& forward) override {
    seen.push_back(UnitClassName(unit));
    return forward() * 1;  // the result, unchanged
  }
  std::vector<std::string> seen;
};

TEST(UnitRunnerTest, FindsUnitsByClassNameInModuleOrder) {
  Toy toy;
  ASSERT_OK_AND_ASSIGN(std::vector<FoundUnit> units, FindUnits(toy, {"Block"}));
  ASSERT_EQ(units.size(), 2u);
  EXPECT_EQ(units[0].name, "first");
  EXPECT_EQ(units[1].name, "second");
  EXPECT_EQ(units[0].module.get(), toy.first.ptr().get());
  EXPECT_EQ(UnitClassName(*toy.head.ptr()), "Linear");
}

TEST(UnitRunnerTest, AnUnknownClassNamesTheClassesTheModelHas) {
  Toy toy;
  EXPECT_THAT(FindUnits(toy, {"BertLayer"}).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("Could not find the transformer layer class to wrap"),
                             HasSubstr("[BertLayer]"), HasSubstr("Block, Linear"))));
}

TEST(UnitRunnerTest, RunUnitCallsTheRunnerOrTheForwardAlone) {
  Toy toy;
  Recorder recorder;
  const at::Tensor x = at::ones({2});
  EXPECT_TRUE(at::equal(RunUnit(&recorder, *toy.first.ptr(), [&] { return x + 1; }), x + 1));
  EXPECT_TRUE(at::equal(RunUnit(nullptr, *toy.first.ptr(), [&] { return x + 2; }), x + 2));
  EXPECT_EQ(recorder.seen, std::vector<std::string>{"Block"});
}

}  // namespace
}  // namespace loom::modeling
