#include "checkpoint/module_state.h"

#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/linear.h>
#include <torch/types.h>

#include <string>
#include <vector>

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::checkpoint {
namespace {

using ::loom::base::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::Eq;
using ::testing::IsEmpty;

struct NetImpl : torch::nn::Module {
  NetImpl() {
    scale = register_parameter("scale", torch::ones({1}));
    fc1 = register_module("fc1", torch::nn::Linear(3, 2));
    bn = register_module("bn", torch::nn::BatchNorm1d(2));
    fc2 = register_module("fc2", torch::nn::Linear(torch::nn::LinearOptions(2, 1).bias(false)));
    steps = register_buffer("steps", torch::zeros({}, torch::kLong));
  }
  torch::Tensor scale, steps;
  torch::nn::Linear fc1{nullptr}, fc2{nullptr};
  torch::nn::BatchNorm1d bn{nullptr};
};
TORCH_MODULE(Net);

std::vector<std::string> Names(const NamedTensors& tensors) {
  std::vector<std::string> names;
  for (const auto& [name, t] : tensors) names.push_back(name);
  return names;
}

// Values unlike any initialization: 100 + position in the state dict.
NamedTensors Marked(const Net& net) {
  NamedTensors sd = ModuleStateDict(*net);
  for (size_t i = 0; i < sd.size(); ++i) {
    sd[i].second = torch::full(sd[i].second.sizes(), 100 + static_cast<double>(i),
                               torch::TensorOptions().dtype(torch::kDouble));
  }
  return sd;
}

TEST(ModuleStateDictTest, PythonKeysAndOrder) {
  Net net;
  const NamedTensors sd = ModuleStateDict(*net);
  // Python: own parameters, own buffers, then children in registration order; Linear(bias=
  // False) has no "bias" entry.
  EXPECT_THAT(Names(sd), ElementsAre("scale", "steps", "fc1.weight", "fc1.bias", "bn.weight",
                                     "bn.bias", "bn.running_mean", "bn.running_var",
                                     "bn.num_batches_tracked", "fc2.weight"));
  // Aliases of the module's tensors, without autograd history.
  EXPECT_EQ(sd[2].second.data_ptr(), net->fc1->weight.data_ptr());
  EXPECT_FALSE(sd[2].second.requires_grad());
}

TEST(LoadStateDictTest, CopiesEveryTensorConvertingDtype) {
  Net net;
  const NamedTensors sd = Marked(net);
  ASSERT_OK_AND_ASSIGN(LoadStateDictResult result, LoadStateDict(*net, sd));
  EXPECT_THAT(result.missing_keys, IsEmpty());
  EXPECT_THAT(result.unexpected_keys, IsEmpty());
  EXPECT_TRUE(torch::equal(net->fc1->bias, torch::full({2}, 103.0f)));
  EXPECT_EQ(net->fc1->bias.scalar_type(), torch::kFloat);
  EXPECT_TRUE(torch::equal(net->bn->num_batches_tracked, torch::full({}, 108, torch::kLong)));
  EXPECT_TRUE(net->fc1->weight.requires_grad());
}

TEST(LoadStateDictTest, ReportsEveryProblemInTorchWordingAndChangesNothing) {
  Net net;
  NamedTensors sd = Marked(net);
  const torch::Tensor weight_before = net->fc1->weight.clone();
  sd.erase(sd.begin() + 3);                          // fc1.bias missing
  sd.erase(sd.begin());                              // scale missing
  sd.emplace_back("fc3.weight", torch::zeros({1}));  // unexpected
  sd.emplace_back("extra", torch::zeros({1}));       // unexpected
  sd[1].second = torch::zeros({2, 4});               // fc1.weight is [2, 3]
  sd[7].second = torch::zeros({});                   // fc2.weight is [1, 2]
  EXPECT_THAT(
      LoadStateDict(*net, sd),
      StatusIs(absl::StatusCode::kInvalidArgument,
               Eq("Error(s) in loading state_dict for Net:\n"
                  "\tMissing key(s) in state_dict: \"scale\", \"fc1.bias\". \n"
                  "\tUnexpected key(s) in state_dict: \"fc3.weight\", \"extra\". \n"
                  "\tsize mismatch for fc1.weight: copying a param with shape "
                  "torch.Size([2, 4]) from checkpoint, the shape in current model is "
                  "torch.Size([2, 3]).\n"
                  "\tsize mismatch for fc2.weight: copying a param with shape torch.Size([]) "
                  "from checkpoint, the shape in current model is torch.Size([1, 2]).")));
  EXPECT_TRUE(torch::equal(net->fc1->weight, weight_before));
}

TEST(LoadStateDictTest, NonStrictLoadsWhatFitsAndListsTheRest) {
  Net net;
  NamedTensors sd = Marked(net);
  sd.erase(sd.begin());
  sd.emplace_back("extra", torch::zeros({1}));
  ASSERT_OK_AND_ASSIGN(LoadStateDictResult result, LoadStateDict(*net, sd, {.strict = false}));
  EXPECT_THAT(result.missing_keys, ElementsAre("scale"));
  EXPECT_THAT(result.unexpected_keys, ElementsAre("extra"));
  EXPECT_TRUE(torch::equal(net->scale, torch::ones({1})));
  EXPECT_TRUE(torch::equal(net->fc2->weight, torch::full({1, 2}, 109.0f)));
  // Shape mismatches stay errors.
  sd[0].second = torch::zeros({5});
  EXPECT_THAT(LoadStateDict(*net, sd, {.strict = false}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       Eq("Error(s) in loading state_dict for Net:\n\tsize mismatch for "
                          "steps: copying a param with shape torch.Size([5]) from checkpoint, "
                          "the shape in current model is torch.Size([]).")));
}

TEST(LoadStateDictTest, DuplicateKeysAreRejected) {
  Net net;
  NamedTensors sd = Marked(net);
  sd.push_back(sd[0]);
  EXPECT_THAT(LoadStateDict(*net, sd), StatusIs(absl::StatusCode::kInvalidArgument,
                                                Eq("the state dict has key \"scale\" twice")));
}

TEST(ModuleClassNameTest, StripsNamespacesAndImpl) {
  EXPECT_EQ(ModuleClassName(*torch::nn::Linear(1, 1)), "Linear");
  Net net;
  EXPECT_EQ(ModuleClassName(*net), "Net");
}

}  // namespace
}  // namespace loom::checkpoint
