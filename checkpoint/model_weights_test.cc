#include "checkpoint/model_weights.h"

#include <torch/nn/modules/linear.h>
#include <torch/types.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "base/file_util.h"
#include "base/status_matchers.h"
#include "checkpoint/safetensors.h"
#include "checkpoint/torch_pickle.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::checkpoint {
namespace {

namespace fs = std::filesystem;
using ::loom::base::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::Eq;

std::string TempDir() {
  const char* root = std::getenv("TEST_TMPDIR");
  std::string tmpl = std::string(root ? root : "/tmp") + "/weights.XXXXXX";
  return mkdtemp(tmpl.data());
}

std::vector<std::string> Listing(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename());
  std::sort(names.begin(), names.end());
  return names;
}

// weight [3, 4] (48 bytes) and bias [3] (12 bytes) with values `base` + position.
torch::nn::Linear Model(float base) {
  torch::nn::Linear model(4, 3);
  torch::NoGradGuard no_grad;
  model->weight.copy_(torch::arange(12, torch::kFloat).reshape({3, 4}) + base);
  model->bias.copy_(torch::arange(3, torch::kFloat) + base);
  return model;
}

void ExpectSame(const torch::nn::Linear& a, const torch::nn::Linear& b) {
  EXPECT_TRUE(torch::equal(a->weight, b->weight));
  EXPECT_TRUE(torch::equal(a->bias, b->bias));
}

TEST(ModelWeightsTest, SafetensorsAndBinSingleAndSharded) {
  const torch::nn::Linear source = Model(10);
  struct Case {
    SaveModelWeightsOptions options;
    std::vector<std::string> files;
  };
  const std::vector<Case> cases = {
      {{true, 1000}, {"model.safetensors"}},
      {{false, 1000}, {"pytorch_model.bin"}},
      {{true, 50},
       {"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors",
        "model.safetensors.index.json"}},
      {{false, 50},
       {"pytorch_model-00001-of-00002.bin", "pytorch_model-00002-of-00002.bin",
        "pytorch_model.bin.index.json"}},
  };
  for (const Case& c : cases) {
    const std::string dir = TempDir();
    ASSERT_OK_AND_ASSIGN(std::vector<std::string> written,
                         SaveModelWeights(dir, ModuleStateDict(*source), c.options));
    EXPECT_EQ(written, c.files);
    EXPECT_EQ(Listing(dir), c.files);
    torch::nn::Linear target = Model(0);
    ASSERT_OK_AND_ASSIGN(LoadStateDictResult result, LoadModelWeightsInto(*target, dir));
    EXPECT_TRUE(result.missing_keys.empty());
    ExpectSame(source, target);
    ASSERT_OK_AND_ASSIGN(LoadedWeights weights, LoadModelWeights(dir));
    EXPECT_EQ(weights.source, dir + "/" + c.files.back());
  }
}

TEST(ModelWeightsTest, LookupOrderFollowsTheTrainer) {
  const std::string dir = TempDir();
  ASSERT_OK(SaveSafetensors(dir + "/model.safetensors", ModuleStateDict(*Model(1))));
  ASSERT_OK(SaveTorchStateDict(dir + "/pytorch_model.bin", ModuleStateDict(*Model(2))));
  ASSERT_OK_AND_ASSIGN(LoadedWeights w, LoadModelWeights(dir));
  EXPECT_EQ(w.source, dir + "/model.safetensors");
  ASSERT_OK_AND_ASSIGN(w, LoadModelWeights(dir, /*prefer_safetensors=*/false));
  EXPECT_EQ(w.source, dir + "/pytorch_model.bin");
  EXPECT_EQ((*FindTensor(w.tensors, "bias"))[0].item<float>(), 2.0f);
  // A sharded save replaces model.safetensors; single files win over indexes.
  ASSERT_OK(SaveModelWeights(dir, ModuleStateDict(*Model(3)), {true, 50}).status());
  EXPECT_FALSE(fs::exists(dir + "/model.safetensors"));
  ASSERT_OK_AND_ASSIGN(w, LoadModelWeights(dir));
  EXPECT_EQ(w.source, dir + "/pytorch_model.bin");
  ASSERT_TRUE(fs::remove(dir + "/pytorch_model.bin"));
  ASSERT_OK_AND_ASSIGN(w, LoadModelWeights(dir, /*prefer_safetensors=*/false));
  EXPECT_EQ(w.source, dir + "/model.safetensors.index.json");
}

TEST(ModelWeightsTest, ErrorsNameTheDirectoryOrFile) {
  const std::string dir = TempDir();
  EXPECT_THAT(LoadModelWeights(dir).status(),
              StatusIs(absl::StatusCode::kNotFound,
                       Eq("Can't find a valid checkpoint at " + dir +
                          " (looked for model.safetensors, pytorch_model.bin, "
                          "model.safetensors.index.json and pytorch_model.bin.index.json)")));
  ASSERT_OK(SaveSafetensors(dir + "/model.safetensors", {{"weight", torch::zeros({4, 3})}}));
  torch::nn::Linear target = Model(0);
  EXPECT_THAT(LoadModelWeightsInto(*target, dir),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       Eq(dir + "/model.safetensors: Error(s) in loading state_dict for Linear:\n"
                                "\tMissing key(s) in state_dict: \"bias\". \n"
                                "\tsize mismatch for weight: copying a param with shape "
                                "torch.Size([4, 3]) from checkpoint, the shape in current model "
                                "is torch.Size([3, 4]).")));
}

}  // namespace
}  // namespace loom::checkpoint
