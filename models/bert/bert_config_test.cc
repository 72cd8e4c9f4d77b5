#include "models/bert/bert_config.h"

#include <string>

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::models::bert {
namespace {

using ::loom::base::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

// BertConfig().to_json_string() of transformers 4.41.2 (every BertConfig key; model_type,
// transformers_version and pad_token_id, which differs from PretrainedConfig's None).
constexpr char kDefaultJson[] = R"({
  "attention_probs_dropout_prob": 0.1,
  "classifier_dropout": null,
  "hidden_act": "gelu",
  "hidden_dropout_prob": 0.1,
  "hidden_size": 768,
  "initializer_range": 0.02,
  "intermediate_size": 3072,
  "layer_norm_eps": 1e-12,
  "max_position_embeddings": 512,
  "model_type": "bert",
  "num_attention_heads": 12,
  "num_hidden_layers": 12,
  "pad_token_id": 0,
  "position_embedding_type": "absolute",
  "transformers_version": "4.41.2",
  "type_vocab_size": 2,
  "use_cache": true,
  "vocab_size": 30522
}
)";

// bert-base-uncased's config.json as the Hub serves it (older keys included).
constexpr char kBertBaseUncased[] = R"({
  "architectures": ["BertForMaskedLM"],
  "attention_probs_dropout_prob": 0.1,
  "gradient_checkpointing": false,
  "hidden_act": "gelu",
  "hidden_dropout_prob": 0.1,
  "hidden_size": 768,
  "initializer_range": 0.02,
  "intermediate_size": 3072,
  "layer_norm_eps": 1e-12,
  "max_position_embeddings": 512,
  "model_type": "bert",
  "num_attention_heads": 12,
  "num_hidden_layers": 12,
  "pad_token_id": 0,
  "position_embedding_type": "absolute",
  "transformers_version": "4.6.0.dev0",
  "type_vocab_size": 2,
  "use_cache": true,
  "vocab_size": 30522
})";

TEST(BertConfigTest, EmptyObjectGivesHfDefaultsAndTheirJson) {
  ASSERT_OK_AND_ASSIGN(BertConfig c, BertConfig::FromJson("{}", "config.json"));
  EXPECT_EQ(c.vocab_size, 30522);
  EXPECT_EQ(c.num_labels(), 2);
  EXPECT_EQ(c.id2label.at(1), "LABEL_1");
  EXPECT_EQ(c.label2id.at("LABEL_0"), 0);
  EXPECT_FALSE(c.classifier_dropout.has_value());
  EXPECT_DOUBLE_EQ(c.ClassifierDropout(), 0.1);
  EXPECT_EQ(c.ToJson(), kDefaultJson);
}

TEST(BertConfigTest, HubConfigRoundTripsKeepingUnknownKeys) {
  ASSERT_OK_AND_ASSIGN(BertConfig c, BertConfig::FromJson(kBertBaseUncased, "config.json"));
  ASSERT_TRUE(c.architectures.has_value());
  EXPECT_EQ(*c.architectures, std::vector<std::string>{"BertForMaskedLM"});
  EXPECT_EQ(c.extra, nlohmann::json::parse(R"({"gradient_checkpointing": false})"));
  const std::string text = c.ToJson();
  EXPECT_THAT(text, HasSubstr("  \"architectures\": [\n    \"BertForMaskedLM\"\n  ],\n"));
  EXPECT_THAT(text, HasSubstr("  \"gradient_checkpointing\": false,\n"));
  // transformers_version is rewritten, as save_pretrained does.
  EXPECT_THAT(text, HasSubstr("\"transformers_version\": \"4.41.2\""));
  ASSERT_OK_AND_ASSIGN(BertConfig again, BertConfig::FromJson(text, "again.json"));
  EXPECT_EQ(again.ToJson(), text);
}

// transformers 4.41 reads "_attn_implementation" as the requested implementation and never
// writes it (to_dict drops _attn_implementation_internal); what a newer transformers saves
// about it ("_attn_implementation_autoset") is an unknown key, written back as read.
TEST(BertConfigTest, AttnImplementationIsReadNotWrittenAndNewerKeysAreKept) {
  ASSERT_OK_AND_ASSIGN(BertConfig plain, BertConfig::FromJson("{}", "config.json"));
  EXPECT_FALSE(plain.attn_implementation.has_value());
  ASSERT_OK_AND_ASSIGN(BertConfig c, BertConfig::FromJson(R"({"_attn_implementation": "eager",
      "_attn_implementation_autoset": true})",
                                                          "config.json"));
  EXPECT_EQ(c.attn_implementation, AttnImplementation::kEager);
  EXPECT_EQ(c.extra, nlohmann::json::parse(R"({"_attn_implementation_autoset": true})"));
  const std::string text = c.ToJson();
  EXPECT_THAT(text, HasSubstr("  \"_attn_implementation_autoset\": true,\n"));
  EXPECT_THAT(text, Not(HasSubstr("\"_attn_implementation\"")));
  c.attn_implementation = AttnImplementation::kSdpa;
  EXPECT_EQ(c.ToJson(), text);
  ASSERT_OK_AND_ASSIGN(BertConfig sdpa,
                       BertConfig::FromJson(R"({"_attn_implementation": "sdpa"})", "c.json"));
  EXPECT_EQ(sdpa.attn_implementation, AttnImplementation::kSdpa);
  ASSERT_OK_AND_ASSIGN(BertConfig null_request,
                       BertConfig::FromJson(R"({"_attn_implementation": null})", "c.json"));
  EXPECT_FALSE(null_request.attn_implementation.has_value());

  EXPECT_THAT(BertConfig::FromJson(R"({"_attn_implementation": "flash"})", "c.json"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("c.json"), HasSubstr("_attn_implementation"),
                             HasSubstr("\"eager\""), HasSubstr("\"sdpa\""))));
  EXPECT_THAT(BertConfig::FromJson(R"({"_attn_implementation": "flash_attention_2"})", "c.json"),
              StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("flash_attention_2")));
  EXPECT_THAT(BertConfig::FromJson(R"({"_attn_implementation": 1})", "c.json"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("_attn_implementation")));
  EXPECT_EQ(AttnImplementationName(AttnImplementation::kSdpa), "sdpa");
  EXPECT_EQ(AttnImplementationName(AttnImplementation::kEager), "eager");
}

TEST(BertConfigTest, Id2LabelDecidesNumLabelsAndIsWrittenInNumericOrder) {
  std::string id2label;
  for (int i = 0; i < 11; ++i) {
    id2label += (i ? ", " : "") + std::string("\"") + std::to_string(i) + "\": \"c" +
                std::to_string(i) + "\"";
  }
  ASSERT_OK_AND_ASSIGN(
      BertConfig c,
      BertConfig::FromJson("{\"num_labels\": 3, \"id2label\": {" + id2label + "}}", "c.json"));
  EXPECT_EQ(c.num_labels(), 11);
  EXPECT_EQ(c.label2id.at("c10"), 10);  // derived from id2label when absent
  const std::string text = c.ToJson();
  EXPECT_THAT(text, HasSubstr("    \"8\": \"c8\",\n    \"9\": \"c9\",\n    \"10\": \"c10\"\n"));
  EXPECT_THAT(text,
              HasSubstr("  \"label2id\": {\n    \"c0\": 0,\n    \"c1\": 1,\n    \"c10\": 10,"));
  EXPECT_THAT(text, Not(HasSubstr("num_labels")));
}

TEST(BertConfigTest, NumLabelsAloneMakesDefaultLabels) {
  ASSERT_OK_AND_ASSIGN(BertConfig c, BertConfig::FromJson(R"({"num_labels": 3})", "c.json"));
  EXPECT_EQ(c.num_labels(), 3);
  EXPECT_EQ(c.id2label.at(2), "LABEL_2");
  EXPECT_EQ(c.label2id.at("LABEL_2"), 2);
  EXPECT_THAT(c.ToJson(), HasSubstr("\"id2label\": {\n    \"0\": \"LABEL_0\",\n    \"1\": "
                                    "\"LABEL_1\",\n    \"2\": \"LABEL_2\"\n  },"));
}

TEST(BertConfigTest, SettersForRunGlue) {
  BertConfig c;
  c.set_num_labels(3);
  EXPECT_EQ(c.num_labels(), 3);
  ASSERT_OK(c.set_labels({{0, "neg"}, {1, "pos"}}, {{"neg", 0}, {"pos", 1}}));
  EXPECT_EQ(c.num_labels(), 2);
  c.set_num_labels(2);  // same count: labels kept, as HF's setter
  EXPECT_EQ(c.id2label.at(0), "neg");
  EXPECT_THAT(c.set_labels({{0, "a"}, {2, "b"}}, {{"a", 0}, {"b", 2}}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("id2label")));
  EXPECT_THAT(c.set_labels({{0, "a"}, {1, "b"}}, {{"a", 1}, {"b", 0}}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("label2id")));
  ASSERT_OK(c.set_problem_type("regression"));
  EXPECT_THAT(c.set_problem_type("ranking"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("problem_type"), HasSubstr("ranking"))));
  c.finetuning_task = "sst2";
  const std::string text = c.ToJson();
  EXPECT_THAT(text, HasSubstr("\"finetuning_task\": \"sst2\""));
  EXPECT_THAT(text, HasSubstr("\"problem_type\": \"regression\""));
  EXPECT_THAT(text, HasSubstr("\"id2label\": {\n    \"0\": \"neg\",\n    \"1\": \"pos\"\n  },"));
}

TEST(BertConfigTest, NullablesAndActivations) {
  ASSERT_OK_AND_ASSIGN(
      BertConfig c,
      BertConfig::FromJson(
          R"({"classifier_dropout": 0.3, "pad_token_id": null, "hidden_act": "gelu_new",
              "problem_type": "multi_label_classification", "finetuning_task": null})",
          "c.json"));
  EXPECT_DOUBLE_EQ(c.ClassifierDropout(), 0.3);
  EXPECT_FALSE(c.pad_token_id.has_value());
  EXPECT_EQ(c.problem_type, "multi_label_classification");
  EXPECT_FALSE(c.finetuning_task.has_value());
  const std::string text = c.ToJson();
  EXPECT_THAT(text, HasSubstr("\"pad_token_id\": null"));
  EXPECT_THAT(text, HasSubstr("\"classifier_dropout\": 0.3"));
  for (const char* act : {"gelu", "gelu_pytorch_tanh", "relu", "silu", "swish", "quick_gelu"}) {
    EXPECT_OK(BertConfig::FromJson(std::string("{\"hidden_act\": \"") + act + "\"}", "c.json"))
        << act;
  }
}

TEST(BertConfigTest, ErrorsNameTheKeyAndFile) {
  EXPECT_THAT(BertConfig::FromJson(R"({"hidden_size": "768"})", "/m/config.json"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("/m/config.json"), HasSubstr("\"hidden_size\""),
                             HasSubstr("integer"))));
  EXPECT_THAT(BertConfig::FromJson(R"({"position_embedding_type": "relative_key"})", "c.json"),
              StatusIs(absl::StatusCode::kUnimplemented,
                       AllOf(HasSubstr("c.json"), HasSubstr("position_embedding_type"),
                             HasSubstr("relative_key"))));
  EXPECT_THAT(BertConfig::FromJson(R"({"hidden_act": "mish"})", "c.json"),
              StatusIs(absl::StatusCode::kUnimplemented,
                       AllOf(HasSubstr("hidden_act"), HasSubstr("mish"))));
  EXPECT_THAT(BertConfig::FromJson(R"({"model_type": "roberta"})", "c.json"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("model_type"), HasSubstr("roberta"))));
  EXPECT_THAT(BertConfig::FromJson(R"({"hidden_size": 30, "num_attention_heads": 4})", "c.json"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("hidden_size"), HasSubstr("num_attention_heads"))));
  EXPECT_THAT(BertConfig::FromJson(R"({"problem_type": "ranking"})", "c.json"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("c.json"), HasSubstr("problem_type"))));
  EXPECT_THAT(BertConfig::FromJson(R"({"id2label": {"x": "a"}})", "c.json"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("id2label")));
  EXPECT_THAT(BertConfig::FromJson(R"({"id2label": {"0": "a", "2": "b"}})", "c.json"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("id2label")));
  EXPECT_THAT(BertConfig::FromJson(R"({"pad_token_id": 40000})", "c.json"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("pad_token_id")));
  EXPECT_THAT(BertConfig::FromJson(R"({"hidden_dropout_prob": 1.5})", "c.json"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("hidden_dropout_prob")));
  EXPECT_THAT(BertConfig::FromJson("{", "c.json"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("c.json"), HasSubstr("not valid JSON"))));
  EXPECT_THAT(BertConfig::FromJson("[]", "c.json"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("JSON object")));
  EXPECT_THAT(BertConfig::FromFile("/nonexistent/config.json"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("/nonexistent/config.json")));
}

}  // namespace
}  // namespace loom::models::bert
