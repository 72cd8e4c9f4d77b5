#include "models/t5/t5_config.h"

#include <string>

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::models::t5 {
namespace {

using ::loom::base::testing::StatusIs;
using ::testing::HasSubstr;

// What transformers 4.41.2 wrote for T5Config(vocab_size=64, d_model=32, d_kv=8, d_ff=48,
// num_layers=2, num_decoder_layers=3, num_heads=4, feed_forward_proj="gated-gelu",
// tie_word_embeddings=False, decoder_start_token_id=0) with
// T5ForConditionalGeneration.save_pretrained.
constexpr char kHfConfig[] = R"({
  "architectures": [
    "T5ForConditionalGeneration"
  ],
  "classifier_dropout": 0.0,
  "d_ff": 48,
  "d_kv": 8,
  "d_model": 32,
  "decoder_start_token_id": 0,
  "dense_act_fn": "gelu_new",
  "dropout_rate": 0.1,
  "eos_token_id": 1,
  "feed_forward_proj": "gated-gelu",
  "initializer_factor": 1.0,
  "is_encoder_decoder": true,
  "is_gated_act": true,
  "layer_norm_epsilon": 1e-06,
  "model_type": "t5",
  "num_decoder_layers": 3,
  "num_heads": 4,
  "num_layers": 2,
  "pad_token_id": 0,
  "relative_attention_max_distance": 128,
  "relative_attention_num_buckets": 32,
  "tie_word_embeddings": false,
  "torch_dtype": "float32",
  "transformers_version": "4.41.2",
  "use_cache": true,
  "vocab_size": 64
}
)";

TEST(T5ConfigTest, ReadsAndWritesHfConfigJsonByteForByte) {
  ASSERT_OK_AND_ASSIGN(T5Config c, T5Config::FromJson(kHfConfig, "config.json"));
  EXPECT_EQ(c.vocab_size, 64);
  EXPECT_EQ(c.d_model, 32);
  EXPECT_EQ(c.num_layers, 2);
  EXPECT_EQ(c.DecoderLayers(), 3);
  EXPECT_FALSE(c.tie_word_embeddings);
  EXPECT_EQ(c.decoder_start_token_id, 0);
  EXPECT_EQ(c.DenseActFn(), "gelu_new");
  EXPECT_TRUE(c.IsGatedAct());
  EXPECT_EQ(c.ToJson(), kHfConfig);
}

TEST(T5ConfigTest, DefaultsAreT5SmallAndActivationsFollowFeedForwardProj) {
  T5Config c;
  EXPECT_EQ(c.vocab_size, 32128);
  EXPECT_EQ(c.DecoderLayers(), 6);
  EXPECT_EQ(c.DenseActFn(), "relu");
  EXPECT_FALSE(c.IsGatedAct());
  c.feed_forward_proj = "gated-silu";
  EXPECT_EQ(c.DenseActFn(), "silu");
  EXPECT_TRUE(c.IsGatedAct());
  EXPECT_OK(c.Validate("test"));
}

TEST(T5ConfigTest, KeepsUnknownKeys) {
  ASSERT_OK_AND_ASSIGN(T5Config c,
                       T5Config::FromJson(R"({"n_positions": 512, "d_model": 16})", "c.json"));
  EXPECT_EQ(c.extra["n_positions"], 512);
  EXPECT_THAT(c.ToJson(), HasSubstr("\"n_positions\": 512"));
}

TEST(T5ConfigTest, RejectsWhatItCannotBuild) {
  EXPECT_THAT(T5Config::FromJson(R"({"feed_forward_proj": "gated-gelu-x"})", "c.json"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("gated-{ACT_FN}")));
  EXPECT_THAT(T5Config::FromJson(R"({"feed_forward_proj": "mish"})", "c.json"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("\"mish\"")));
  EXPECT_THAT(T5Config::FromJson(R"({"is_encoder_decoder": false})", "c.json"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("is_encoder_decoder")));
  EXPECT_THAT(T5Config::FromJson(R"({"model_type": "bert"})", "c.json"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("model_type")));
  EXPECT_THAT(T5Config::FromJson(R"({"_attn_implementation": "sdpa"})", "c.json"),
              StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("_attn_implementation")));
  EXPECT_THAT(T5Config::FromJson(R"({"d_model": "big"})", "c.json"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("c.json: key \"d_model\"")));
  EXPECT_THAT(T5Config::FromJson(R"({"vocab_size": 8, "pad_token_id": 9})", "c.json"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("pad_token_id")));
}

}  // namespace
}  // namespace loom::models::t5
