#include "runtime/model_files.h"

#include <torch/torch.h>

#include <filesystem>

#include "base/file_util.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "modeling/testing_models.h"
#include "precision/grad_scaler.h"

namespace loom::runtime {
namespace {

using ::loom::base::testing::StatusIs;

class WithConfig : public modeling::testing::LinearRegressor {
 public:
  WithConfig() : LinearRegressor(3) {}
  std::string ConfigJson() const override { return R"({"hidden_size": 3})"; }
};

std::string Dir(const std::string& name) {
  const std::string dir = std::string(std::getenv("TEST_TMPDIR")) + "/" + name;
  std::filesystem::create_directories(dir);
  return dir;
}

TEST(ModelFilesTest, TrainerFilesRoundTrip) {
  torch::manual_seed(1);
  WithConfig saved;
  args::TrainingArguments args;
  args.set_output_dir("/tmp/x");
  const std::string dir = Dir("trainer");
  ASSERT_OK(WriteModelFiles(dir, saved, TrainerModelFiles(args)));
  EXPECT_TRUE(std::filesystem::exists(dir + "/model.safetensors"));
  EXPECT_TRUE(std::filesystem::exists(dir + "/training_args.bin"));
  ASSERT_OK_AND_ASSIGN(std::string config, base::ReadFile(dir + "/" + kConfigFile));
  EXPECT_EQ(config, saved.ConfigJson());
  torch::manual_seed(2);
  WithConfig loaded;
  ASSERT_FALSE(at::equal(loaded.parameters()[0], saved.parameters()[0]));
  ASSERT_OK(LoadModelFiles(dir, &loaded));
  for (size_t i = 0; i < saved.parameters().size(); ++i) {
    EXPECT_TRUE(at::equal(loaded.parameters()[i], saved.parameters()[i]));
  }
}

TEST(ModelFilesTest, OptionsChooseTheFiles) {
  WithConfig model;
  const std::string bin = Dir("bin");
  ModelFilesOptions options;
  options.safe_serialization = false;  // no args: no training_args.bin
  ASSERT_OK(WriteModelFiles(bin, model, options));
  EXPECT_TRUE(std::filesystem::exists(bin + "/pytorch_model.bin"));
  EXPECT_FALSE(std::filesystem::exists(bin + "/training_args.bin"));
  const std::string none = Dir("config_only");
  args::TrainingArguments args;
  ASSERT_OK(WriteModelFiles(none, model, TrainerModelFiles(args, /*weights=*/false)));
  EXPECT_FALSE(std::filesystem::exists(none + "/model.safetensors"));
  EXPECT_TRUE(std::filesystem::exists(none + "/config.json"));
  EXPECT_THAT(LoadModelFiles(none, &model), StatusIs(absl::StatusCode::kNotFound, ::testing::_));
}

TEST(ModelFilesTest, ScalerFileRoundTripAndAbsentFile) {
  ASSERT_OK_AND_ASSIGN(precision::GradScaler saved,
                       precision::GradScaler::Create({.init_scale = 1024.0}));
  const std::string dir = Dir("scaler");
  ASSERT_OK(SaveGradScalerFile(dir, saved));
  ASSERT_OK_AND_ASSIGN(precision::GradScaler loaded,
                       precision::GradScaler::Create({.init_scale = 8.0}));
  ASSERT_OK(LoadGradScalerFile(dir, &loaded));
  EXPECT_EQ(loaded.scale(), 1024.0);
  // A folder without scaler.pt leaves the scaler as it is.
  ASSERT_OK_AND_ASSIGN(precision::GradScaler untouched,
                       precision::GradScaler::Create({.init_scale = 8.0}));
  ASSERT_OK(LoadGradScalerFile(Dir("no_scaler"), &untouched));
  EXPECT_EQ(untouched.scale(), 8.0);
}

}  // namespace
}  // namespace loom::runtime
