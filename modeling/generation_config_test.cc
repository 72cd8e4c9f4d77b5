#include "modeling/generation_config.h"

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::modeling {
namespace {

using ::loom::base::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

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
  EXPECT_OK(g.Set("do_sample", false));
  EXPECT_OK(g.Set("repetition_penalty", 1));
  EXPECT_THAT(g.Set("do_sample", true),
              StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("\"do_sample\"")));
  EXPECT_THAT(g.Set("repetition_penalty", 1.2),
              StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("repetition_penalty")));
  EXPECT_THAT(GenerationConfig::FromJson(R"({"num_beams": "four"})", "g.json"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("g.json")));
  EXPECT_OK(g.Set("temperature", 0.7));  // inert without sampling: kept
  EXPECT_THAT(g.ToJson(), HasSubstr("\"temperature\": 0.7"));
}

}  // namespace
}  // namespace loom::modeling
