#include "models/t5/pretrained.h"

#include <torch/torch.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "base/status_matchers.h"
#include "checkpoint/module_state.h"
#include "checkpoint/safetensors.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::models::t5 {
namespace {

using ::loom::base::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string TempDir(const std::string& name) {
  std::string dir =
      std::string(getenv("TEST_TMPDIR") ? getenv("TEST_TMPDIR") : "/tmp") + "/" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

T5Config Tiny() {
  T5Config c;
  c.vocab_size = 30;
  c.d_model = 8;
  c.d_kv = 4;
  c.d_ff = 12;
  c.num_layers = 1;
  c.num_heads = 2;
  c.relative_attention_num_buckets = 4;
  c.decoder_start_token_id = 0;
  return c;
}

at::Tensor Logits(T5ForConditionalGeneration& model) {
  model.eval();
  torch::NoGradGuard no_grad;
  return model
      .Forward({{"input_ids", torch::tensor({{3, 4, 5}}, torch::kLong)},
                {"decoder_input_ids", torch::tensor({{0, 6}}, torch::kLong)}})
      .Get("logits");
}

TEST(T5PretrainedTest, SaveThenLoadGivesTheSameModel) {
  const std::string dir = TempDir("roundtrip");
  ASSERT_OK_AND_ASSIGN(auto model, T5ForConditionalGeneration::Create(Tiny(), 1));
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> files, SaveT5ForConditionalGeneration(*model, dir));
  EXPECT_THAT(files,
              ElementsAre("config.json", "generation_config.json", "model.safetensors"));
  ASSERT_OK_AND_ASSIGN(LoadedT5 loaded, LoadT5ForConditionalGeneration(dir, {.seed = 99}));
  EXPECT_EQ(loaded.Report(), "");
  EXPECT_TRUE(torch::equal(Logits(*model), Logits(*loaded.model)));
}

TEST(T5PretrainedTest, TiedAliasesAndHfsIgnoredKeyAreFolded) {
  ASSERT_OK_AND_ASSIGN(auto source, T5ForConditionalGeneration::Create(Tiny(), 1));
  checkpoint::NamedTensors tensors;
  for (const auto& [name, tensor] : checkpoint::ModuleStateDict(*source)) {
    // Old pytorch_model.bin files carry every tied alias and no shared.weight may be first.
    if (name == "shared.weight") {
      tensors.emplace_back("encoder.embed_tokens.weight", tensor);
      tensors.emplace_back("decoder.embed_tokens.weight", tensor);
      tensors.emplace_back("lm_head.weight", tensor);
    } else {
      tensors.emplace_back(name, tensor);
    }
  }
  tensors.emplace_back("decoder.block.0.layer.1.EncDecAttention.relative_attention_bias.weight",
                       torch::zeros({4, 2}));
  ASSERT_OK_AND_ASSIGN(auto target, T5ForConditionalGeneration::Create(Tiny(), 2));
  ASSERT_OK_AND_ASSIGN(T5LoadReport report, LoadT5Weights(*target, tensors, "old.bin"));
  EXPECT_EQ(report.Report(), "");
  EXPECT_TRUE(torch::equal(Logits(*source), Logits(*target)));
}

TEST(T5PretrainedTest, MissingAndUnusedKeysAreReportedAndForeignFilesRefused) {
  ASSERT_OK_AND_ASSIGN(auto model, T5ForConditionalGeneration::Create(Tiny(), 1));
  checkpoint::NamedTensors tensors = checkpoint::ModuleStateDict(*model);
  tensors.erase(tensors.begin() + 1);  // encoder.block.0.layer.0.SelfAttention.q.weight
  tensors.emplace_back("classifier.weight", torch::zeros({2}));
  ASSERT_OK_AND_ASSIGN(T5LoadReport report, LoadT5Weights(*model, tensors, "f.safetensors"));
  EXPECT_THAT(report.newly_initialized_keys,
              ElementsAre("encoder.block.0.layer.0.SelfAttention.q.weight"));
  EXPECT_THAT(report.unused_keys, ElementsAre("classifier.weight"));
  EXPECT_THAT(report.Report(), HasSubstr("newly initialized"));
  EXPECT_THAT(LoadT5Weights(*model, {{"bert.pooler.dense.weight", torch::zeros({2})}}, "b.bin"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("is it a T5 checkpoint")));
  checkpoint::NamedTensors wrong = checkpoint::ModuleStateDict(*model);
  wrong[0].second = torch::zeros({3, 3});
  EXPECT_THAT(LoadT5Weights(*model, wrong, "w.bin"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("size mismatch for shared.weight")));
}

}  // namespace
}  // namespace loom::models::t5
