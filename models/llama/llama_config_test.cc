#include "models/llama/llama_config.h"

#include <string>

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace loom::models::llama {
namespace {

using ::loom::base::testing::StatusIs;
using ::testing::HasSubstr;
using json = nlohmann::json;

// TinyLlama-1.1B's config.json as transformers 4.41 saves it.
constexpr char kTinyLlama[] = R"({
  "architectures": [
    "LlamaForCausalLM"
  ],
  "attention_bias": false,
  "attention_dropout": 0.0,
  "bos_token_id": 1,
  "eos_token_id": 2,
  "hidden_act": "silu",
  "hidden_size": 2048,
  "initializer_range": 0.02,
  "intermediate_size": 5632,
  "max_position_embeddings": 2048,
  "mlp_bias": false,
  "model_type": "llama",
  "num_attention_heads": 32,
  "num_hidden_layers": 22,
  "num_key_value_heads": 4,
  "pretraining_tp": 1,
  "rms_norm_eps": 1e-05,
  "rope_scaling": null,
  "rope_theta": 10000.0,
  "tie_word_embeddings": false,
  "torch_dtype": "float32",
  "transformers_version": "4.41.2",
  "use_cache": true,
  "vocab_size": 32000
}
)";

TEST(LlamaConfigTest, SavePretrainedTextRoundTripsExactly) {
  ASSERT_OK_AND_ASSIGN(LlamaConfig c, LlamaConfig::FromJson(kTinyLlama, "config.json"));
  EXPECT_EQ(c.KeyValueHeads(), 4);
  EXPECT_EQ(c.HeadDim(), 64);
  EXPECT_EQ(c.rms_norm_eps, 1e-5);
  EXPECT_EQ(c.ToJson(), kTinyLlama);
}

TEST(LlamaConfigTest, DefaultsAreHfsAndNullIdsAreWrittenBackAsNull) {
  LlamaConfig c;
  const json j = json::parse(c.ToJson());
  EXPECT_EQ(j["num_key_value_heads"], 32);
  EXPECT_EQ(j["eos_token_id"], 2);
  EXPECT_EQ(j["tie_word_embeddings"], false);
  EXPECT_FALSE(j.contains("pad_token_id"));
  ASSERT_OK_AND_ASSIGN(LlamaConfig none,
                       LlamaConfig::FromJson(R"({"bos_token_id": null, "eos_token_id": null})", "c"));
  ASSERT_OK_AND_ASSIGN(LlamaConfig back, LlamaConfig::FromJson(none.ToJson(), "again"));
  EXPECT_FALSE(back.bos_token_id.has_value());
  EXPECT_TRUE(back.eos_token_id.empty());
  ASSERT_OK_AND_ASSIGN(LlamaConfig llama3,
                       LlamaConfig::FromJson(R"({"vocab_size": 200, "eos_token_id": [128, 129]})", "c"));
  EXPECT_EQ(json::parse(llama3.ToJson())["eos_token_id"], json::array({128, 129}));
}

TEST(LlamaConfigTest, RopeScalingTypesItImplementsAndOthersNamed) {
  ASSERT_OK_AND_ASSIGN(LlamaConfig linear, LlamaConfig::FromJson(
      R"({"rope_scaling": {"type": "linear", "factor": 2.0}})", "c"));
  EXPECT_EQ(linear.rope_scaling->type, RopeScalingType::kLinear);
  EXPECT_THAT(json::parse(linear.ToJson())["rope_scaling"]["factor"], 2.0);
  ASSERT_OK_AND_ASSIGN(LlamaConfig dynamic, LlamaConfig::FromJson(
      R"({"rope_scaling": {"type": "dynamic", "factor": 4.0}})", "c"));
  EXPECT_EQ(dynamic.rope_scaling->type, RopeScalingType::kDynamic);
  ASSERT_OK_AND_ASSIGN(LlamaConfig llama3, LlamaConfig::FromJson(
      R"({"rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
          "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}})", "c"));
  EXPECT_EQ(llama3.rope_scaling->original_max_position_embeddings, 8192);
  EXPECT_THAT(LlamaConfig::FromJson(R"({"rope_scaling": {"type": "yarn", "factor": 4.0}})", "c.json"),
              StatusIs(absl::StatusCode::kUnimplemented,
                       HasSubstr("c.json: key \"rope_scaling\" has the type \"yarn\"")));
  EXPECT_THAT(LlamaConfig::FromJson(R"({"rope_scaling": {"type": "linear", "factor": 0.5}})", "c"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("float > 1")));
  EXPECT_THAT(LlamaConfig::FromJson(R"({"rope_scaling": {"rope_type": "llama3", "factor": 8.0}})", "c"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("low_freq_factor")));
}

TEST(LlamaConfigTest, BadShapesAndSettingsAreNamed) {
  EXPECT_THAT(LlamaConfig::FromJson(
                  R"({"hidden_size": 64, "num_attention_heads": 8, "num_key_value_heads": 3})", "c"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("num_attention_heads\" (8) must be divisible by "
                                 "num_key_value_heads (3)")));
  EXPECT_THAT(LlamaConfig::FromJson(R"({"hidden_size": 60, "num_attention_heads": 8})", "c"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("hidden_size")));
  EXPECT_THAT(LlamaConfig::FromJson(R"({"pretraining_tp": 2})", "c"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("pretraining_tp")));
  EXPECT_THAT(LlamaConfig::FromJson(R"({"hidden_act": "swiglu"})", "c"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("hidden_act")));
  EXPECT_THAT(LlamaConfig::FromJson(R"({"vocab_size": 2})", "c"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("eos_token_id\" (2)")));
  EXPECT_THAT(LlamaConfig::FromJson(R"({"model_type": "bert"})", "c"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("model_type")));
  EXPECT_THAT(LlamaConfig::FromJson(R"({"_attn_implementation": "flash_attention_2"})", "c"),
              StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("flash_attention_2")));
}

}  // namespace
}  // namespace loom::models::llama
