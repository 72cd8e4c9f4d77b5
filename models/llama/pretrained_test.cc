#include "models/llama/pretrained.h"

#include <torch/torch.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "base/status_matchers.h"
#include "base/file_util.h"
#include "checkpoint/model_weights.h"
#include "checkpoint/module_state.h"
#include "modeling/deferred_init.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::models::llama {
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

LlamaConfig Tiny(bool tied) {
  LlamaConfig c;
  c.vocab_size = 40;
  c.hidden_size = 16;
  c.intermediate_size = 24;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.max_position_embeddings = 32;
  c.tie_word_embeddings = tied;
  return c;
}

at::Tensor Logits(LlamaForCausalLM& model) {
  model.eval();
  torch::NoGradGuard no_grad;
  return model.Forward({{"input_ids", torch::tensor({{3, 4, 5, 9}}, torch::kLong)}}).Get("logits");
}

TEST(LlamaPretrainedTest, SaveThenLoadGivesTheSameModelTiedOrNot) {
  for (bool tied : {false, true}) {
    const std::string dir = TempDir(tied ? "tied" : "untied");
    ASSERT_OK_AND_ASSIGN(auto model, LlamaForCausalLM::Create(Tiny(tied), 1));
    ASSERT_OK_AND_ASSIGN(std::vector<std::string> files, SaveLlamaForCausalLM(*model, dir));
    EXPECT_THAT(files, ElementsAre("config.json", "generation_config.json", "model.safetensors"));
    ASSERT_OK_AND_ASSIGN(LoadedLlama loaded, LoadLlamaForCausalLM(dir, {.seed = 99}));
    EXPECT_EQ(loaded.Report(), "");
    EXPECT_TRUE(torch::equal(Logits(*model), Logits(*loaded.model)));
    bool has_head = false;
    for (const auto& [name, t] : checkpoint::ModuleStateDict(*model)) has_head |= name == "lm_head.weight";
    EXPECT_EQ(has_head, !tied);  // save_pretrained drops the tied alias
  }
}

TEST(LlamaPretrainedTest, ShardedSafetensorsWithAnIndexLoadAndAMissingShardIsNamed) {
  const std::string dir = TempDir("sharded");
  ASSERT_OK_AND_ASSIGN(auto model, LlamaForCausalLM::Create(Tiny(false), 1));
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> files,
                       SaveLlamaForCausalLM(*model, dir, {.max_shard_size = 4000}));
  ASSERT_GT(files.size(), 4u);
  EXPECT_EQ(files[2], "model-00001-of-0000" + std::to_string(files.size() - 3) + ".safetensors");
  EXPECT_EQ(files.back(), "model.safetensors.index.json");
  ASSERT_OK_AND_ASSIGN(LoadedLlama loaded, LoadLlamaForCausalLM(dir, {.seed = 5}));
  EXPECT_EQ(loaded.Report(), "");
  EXPECT_TRUE(torch::equal(Logits(*model), Logits(*loaded.model)));
  std::filesystem::remove(dir + "/" + files[3]);
  const absl::Status missing = LoadLlamaForCausalLM(dir).status();
  EXPECT_FALSE(missing.ok());
  EXPECT_THAT(std::string(missing.message()), HasSubstr(files[3]));
}

TEST(LlamaPretrainedTest, TiedHeadAliasStandsInForTheEmbedding) {
  ASSERT_OK_AND_ASSIGN(auto source, LlamaForCausalLM::Create(Tiny(true), 1));
  checkpoint::NamedTensors tensors;
  for (const auto& [name, tensor] : checkpoint::ModuleStateDict(*source)) {
    tensors.emplace_back(name == "model.embed_tokens.weight" ? "lm_head.weight" : name, tensor);
  }
  ASSERT_OK_AND_ASSIGN(auto target, LlamaForCausalLM::Create(Tiny(true), 2));
  ASSERT_OK_AND_ASSIGN(LlamaLoadReport report, LoadLlamaWeights(*target, tensors, "old.bin"));
  EXPECT_EQ(report.Report(), "");
  EXPECT_TRUE(torch::equal(Logits(*source), Logits(*target)));
}

TEST(LlamaPretrainedTest, MissingAndUnusedKeysAreReportedAndForeignFilesRefused) {
  ASSERT_OK_AND_ASSIGN(auto model, LlamaForCausalLM::Create(Tiny(false), 1));
  checkpoint::NamedTensors tensors = checkpoint::ModuleStateDict(*model);
  tensors.erase(tensors.begin() + 1);  // model.layers.0.self_attn.q_proj.weight
  tensors.emplace_back("score.weight", torch::zeros({2}));
  ASSERT_OK_AND_ASSIGN(LlamaLoadReport report, LoadLlamaWeights(*model, tensors, "f.safetensors"));
  EXPECT_THAT(report.newly_initialized_keys,
              ElementsAre("model.layers.0.self_attn.q_proj.weight"));
  EXPECT_THAT(report.unused_keys, ElementsAre("score.weight"));
  EXPECT_THAT(LoadLlamaWeights(*model, {{"bert.pooler.dense.weight", torch::zeros({2})}}, "b.bin"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("is it a Llama checkpoint")));
  checkpoint::NamedTensors wrong = checkpoint::ModuleStateDict(*model);
  wrong[0].second = torch::zeros({3, 3});
  EXPECT_THAT(LoadLlamaWeights(*model, wrong, "w.bin"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("size mismatch for model.embed_tokens.weight")));
}

// Loaded deferred (sharded construction), nothing is materialised until the model's fill makes
// each parameter: then every one equals the eagerly loaded model's, a key the folder lacks
// comes from the seed's initialisation, and the report is the same. A size mismatch is still
// refused before anything is built.
TEST(LlamaPretrainedTest, DeferredLoadMakesTheSameWeightsThroughTheFill) {
  for (bool tied : {false, true}) {
    const std::string dir = TempDir(tied ? "deferred_tied" : "deferred");
    ASSERT_OK_AND_ASSIGN(auto model, LlamaForCausalLM::Create(Tiny(tied), 1));
    checkpoint::NamedTensors tensors = checkpoint::ModuleStateDict(*model);
    tensors.erase(tensors.begin() + 1);  // model.layers.0.self_attn.q_proj.weight
    ASSERT_OK(checkpoint::SaveModelWeights(dir, tensors, {.max_shard_size = 4000}).status());
    ASSERT_OK(base::WriteFileAtomically(dir + "/config.json", model->ConfigJson()));
    ASSERT_OK_AND_ASSIGN(LoadedLlama eager, LoadLlamaForCausalLM(dir, {.seed = 5}));
    ASSERT_OK_AND_ASSIGN(LoadedLlama deferred,
                         LoadLlamaForCausalLM(dir, {.seed = 5, .deferred = true}));
    EXPECT_EQ(deferred.Report(), eager.Report());
    EXPECT_THAT(deferred.report.newly_initialized_keys,
                ElementsAre("model.layers.0.self_attn.q_proj.weight"));
    for (const at::Tensor& p : deferred.model->parameters()) EXPECT_TRUE(modeling::IsDeferred(p));
    ASSERT_TRUE(deferred.model->parameter_fill());
    ASSERT_OK(modeling::MaterializeParameters(*deferred.model, "",
                                              deferred.model->parameter_fill()));
    const auto want = eager.model->named_parameters();
    for (const auto& item : deferred.model->named_parameters()) {
      EXPECT_TRUE(torch::equal(item.value(), want[item.key()])) << item.key();
    }
  }
  const std::string dir = TempDir("deferred_mismatch");
  ASSERT_OK_AND_ASSIGN(auto model, LlamaForCausalLM::Create(Tiny(false), 1));
  ASSERT_OK(SaveLlamaForCausalLM(*model, dir).status());
  LlamaConfig wider = Tiny(false);
  wider.intermediate_size = 32;
  ASSERT_OK(base::WriteFileAtomically(dir + "/config.json", wider.ToJson()));
  EXPECT_THAT(LoadLlamaForCausalLM(dir, {.deferred = true}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("size mismatch")));
}

}  // namespace
}  // namespace loom::models::llama
