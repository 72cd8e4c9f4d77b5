#include "modeling/save_pretrained.h"

#include <torch/torch.h>

#include <cstdlib>
#include <filesystem>

#include "base/file_util.h"
#include "base/status_matchers.h"
#include "checkpoint/safetensors.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::modeling {
namespace {

using ::loom::base::testing::IsOkAndHolds;
using ::testing::ElementsAre;

class Tiny : public Model {
 public:
  explicit Tiny(bool generates) : generates_(generates) {
    register_module("proj", torch::nn::Linear(2, 1));
  }
  ModelOutput Forward(const data::Batch&) override { return {}; }
  std::string ConfigJson() const override { return "{\"model_type\": \"tiny\"}\n"; }
  std::string GenerationConfigJson() const override { return generates_ ? "{}\n" : ""; }

 private:
  bool generates_;
};

std::string Dir(const std::string& name) {
  return std::string(std::getenv("TEST_TMPDIR")) + "/" + name;  // created by SavePretrained
}

TEST(SavePretrainedTest, WritesConfigGenerationConfigAndWeights) {
  const std::string dir = Dir("gen");
  EXPECT_THAT(SavePretrained(Tiny(true), dir),
              IsOkAndHolds(ElementsAre("config.json", "generation_config.json",
                                       "model.safetensors")));
  EXPECT_THAT(base::ReadFile(dir + "/config.json"), IsOkAndHolds("{\"model_type\": \"tiny\"}\n"));
  ASSERT_OK_AND_ASSIGN(checkpoint::SafetensorsFile file,
                       checkpoint::LoadSafetensors(dir + "/model.safetensors"));
  EXPECT_EQ(file.tensors.size(), 2u);  // proj.weight, proj.bias
}

TEST(SavePretrainedTest, NoGenerationConfigForModelsThatDoNotGenerateAndWeightsOptional) {
  const std::string dir = Dir("plain");
  SavePretrainedOptions options;
  options.weights = false;
  EXPECT_THAT(SavePretrained(Tiny(false), dir, options), IsOkAndHolds(ElementsAre("config.json")));
  EXPECT_FALSE(std::filesystem::exists(dir + "/generation_config.json"));
  EXPECT_FALSE(std::filesystem::exists(dir + "/model.safetensors"));
}

}  // namespace
}  // namespace loom::modeling
