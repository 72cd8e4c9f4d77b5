#include "modeling/generation_config.h"

#include <string>
#include <vector>

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::modeling {
namespace {

using ::loom::base::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

// transformers 4.41.2: GenerationConfig(num_beams=4, early_stopping="never",
// eos_token_id=[1, 2], length_penalty=0.6, max_new_tokens=5, decoder_start_token_id=0,
// pad_token_id=0).to_json_string().
constexpr char kHf[] = R"({
  "decoder_start_token_id": 0,
  "early_stopping": "never",
  "eos_token_id": [
    1,
    2
  ],
  "length_penalty": 0.6,
  "max_new_tokens": 5,
  "num_beams": 4,
  "pad_token_id": 0,
  "transformers_version": "4.41.2"
}
)";

TEST(GenerationConfigTest, RoundTripsHfsJson) {
  ASSERT_OK_AND_ASSIGN(GenerationConfig g, GenerationConfig::FromJson(kHf, "g.json"));
  EXPECT_EQ(g.num_beams, 4);
  EXPECT_EQ(g.early_stopping, EarlyStopping::kNever);
  EXPECT_THAT(g.eos_token_id, ElementsAre(1, 2));
  EXPECT_EQ(g.max_new_tokens, 5);
  EXPECT_EQ(g.ToJson(), kHf);
}

TEST(GenerationConfigTest, FromModelIsWhatSavePretrainedWrites) {
  const GenerationConfig g = GenerationConfig::FromModel({0, 1, 0});
  // transformers 4.41.2's generation_config.json next to a saved T5ForConditionalGeneration.
  EXPECT_EQ(g.ToJson(), R"({
  "_from_model_config": true,
  "decoder_start_token_id": 0,
  "eos_token_id": 1,
  "pad_token_id": 0,
  "transformers_version": "4.41.2"
}
)");
}

TEST(GenerationConfigTest, ValidatesAsHf) {
  GenerationConfig g;
  g.num_return_sequences = 2;
  EXPECT_THAT(g.Validate(), StatusIs(absl::StatusCode::kInvalidArgument,
                                     HasSubstr("Greedy methods without beam search")));
  g.num_beams = 2;
  g.num_return_sequences = 3;
  EXPECT_THAT(g.Validate(), StatusIs(absl::StatusCode::kInvalidArgument,
                                     HasSubstr("`num_return_sequences` (3) has to be smaller")));
  EXPECT_THAT(g.Set("early_stopping", "sometimes"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'never'")));
}

TEST(GenerationConfigTest, RefusesWhatItDoesNotImplementUnlessDefault) {
  GenerationConfig g;
  EXPECT_OK(g.Set("num_beam_groups", 1));
  EXPECT_THAT(g.Set("num_beam_groups", 2),
              StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("\"num_beam_groups\"")));
  EXPECT_THAT(g.Set("suppress_tokens", std::vector<int>{3}),
              StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("suppress_tokens")));
  EXPECT_THAT(GenerationConfig::FromJson(R"({"num_beams": "four"})", "g.json"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("g.json")));
}

TEST(GenerationConfigTest, SamplingFieldsRoundTripAndAreChecked) {
  ASSERT_OK_AND_ASSIGN(
      GenerationConfig g,
      GenerationConfig::FromJson(R"({"do_sample": true, "temperature": 0.7, "top_k": null,
                                     "top_p": 0.9, "repetition_penalty": 1.3})",
                                 "g.json"));
  EXPECT_TRUE(g.do_sample);
  EXPECT_EQ(g.temperature, 0.7);
  EXPECT_EQ(g.top_k, 0);
  EXPECT_EQ(g.top_p, 0.9);
  EXPECT_EQ(g.repetition_penalty, 1.3);
  EXPECT_OK(g.Validate());
  const std::string text = g.ToJson();
  EXPECT_THAT(text, HasSubstr("\"do_sample\": true"));
  EXPECT_THAT(text, HasSubstr("\"top_k\": 0"));
  EXPECT_THAT(text, HasSubstr("\"temperature\": 0.7"));
  EXPECT_THAT(GenerationConfig().ToJson(), Not(HasSubstr("top_k")));
  g.num_return_sequences = 3;  // sampling may return several sequences per prompt
  EXPECT_OK(g.Validate());
  g.temperature = 0;
  EXPECT_THAT(g.Validate(), StatusIs(absl::StatusCode::kInvalidArgument,
                                     HasSubstr("`temperature` (=0) has to be a strictly positive")));
  g.temperature = 1;
  g.top_p = 1.5;
  EXPECT_THAT(g.Validate(), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("`top_p`")));
  g.top_p = 1;
  g.repetition_penalty = 0;
  EXPECT_THAT(g.Validate(), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("`penalty`")));
  EXPECT_THAT(g.Set("temperature", "hot"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("\"temperature\"")));
}

}  // namespace
}  // namespace loom::modeling
