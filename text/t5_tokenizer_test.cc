#include "text/t5_tokenizer.h"

#include <stdlib.h>

#include <fstream>
#include <string>
#include <vector>

#include "base/file_util.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace loom::text {
namespace {

using ::loom::base::testing::IsOkAndHolds;
using ::loom::base::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kModel[] = "text/testdata/spiece.model";

std::string ModelBytes() {
  absl::StatusOr<std::string> bytes = base::ReadFile(kModel);
  EXPECT_TRUE(bytes.ok()) << bytes.status();
  return bytes.ok() ? *bytes : "";
}

// The tokenizer of the expected values below: transformers 4.41.2
// T5Tokenizer("text/testdata/spiece.model", extra_ids=3).
T5Tokenizer Tokenizer() {
  T5TokenizerOptions options;
  options.extra_ids = 3;
  absl::StatusOr<T5Tokenizer> tok = T5Tokenizer::Create(ModelBytes(), options);
  EXPECT_TRUE(tok.ok()) << tok.status();
  return *std::move(tok);
}

std::string NewFolder() {
  std::string tmpl = std::string(getenv("TEST_TMPDIR")) + "/t5tok.XXXXXX";
  return mkdtemp(tmpl.data());
}

TEST(T5Tokenizer, VocabularyLayout) {
  T5Tokenizer tok = Tokenizer();
  EXPECT_EQ(tok.vocab_size(), 300);
  EXPECT_EQ(tok.size(), 303);
  EXPECT_EQ(tok.pad_token_id(), 0);
  EXPECT_EQ(tok.eos_token_id(), 1);
  EXPECT_EQ(tok.unk_token_id(), 2);
  EXPECT_THAT(tok.ConvertTokensToIds({"<extra_id_0>", "<extra_id_2>", "<extra_id_3>"}),
              ElementsAre(302, 300, 2));
  EXPECT_THAT(tok.ConvertIdToToken(301), IsOkAndHolds("<extra_id_1>"));
  EXPECT_THAT(tok.ConvertIdToToken(303), StatusIs(absl::StatusCode::kInvalidArgument,
                                                  HasSubstr("token id 303 is outside")));
}

TEST(T5Tokenizer, SplitsAddedTokensAndStripsAroundSentinels) {
  T5Tokenizer tok = Tokenizer();
  const std::string text = "Hello <extra_id_0>  world</s>x <pad>";
  EXPECT_THAT(tok.Tokenize(text),
              IsOkAndHolds(ElementsAre("\u2581H", "e", "l", "l", "o", "<extra_id_0>", "\u2581",
                                       "w", "o", "r", "l", "d", "</s>", "\u2581", "x", "<pad>")));
  ASSERT_OK_AND_ASSIGN(Encoding enc, tok.Encode(text));
  EXPECT_THAT(enc.input_ids,
              ElementsAre(116, 125, 293, 293, 295, 302, 111, 284, 295, 299, 293, 292, 1, 111, 2,
                          0, 1));
  EXPECT_THAT(enc.token_type_ids, ::testing::Each(0));
  EXPECT_EQ(enc.attention_mask.size(), enc.input_ids.size());
}

TEST(T5Tokenizer, EosAppendedOnceTruncationLeavesRoomForIt) {
  T5Tokenizer tok = Tokenizer();
  EXPECT_THAT(tok.Encode(""), IsOkAndHolds(::testing::Field(&Encoding::input_ids, ElementsAre(1))));
  EXPECT_THAT(tok.Encode("Hello </s>"),
              IsOkAndHolds(::testing::Field(&Encoding::input_ids,
                                            ElementsAre(116, 125, 293, 293, 295, 1))));
  EncodeOptions options;
  options.max_length = 5;
  options.truncation = Truncation::kLongestFirst;
  EXPECT_THAT(tok.Encode("Casa este mică verde", options),
              IsOkAndHolds(::testing::Field(&Encoding::input_ids, ElementsAre(99, 132, 6, 53, 1))));
}

TEST(T5Tokenizer, BatchPadsToLongestWithPadId) {
  T5Tokenizer tok = Tokenizer();
  EncodeOptions options;
  options.padding = Padding::kLongest;
  options.return_token_type_ids = false;
  ASSERT_OK_AND_ASSIGN(std::vector<Encoding> batch, tok.EncodeBatch({"Casa este", "mică"}, options));
  ASSERT_EQ(batch.size(), 2u);
  EXPECT_THAT(batch[0].input_ids, ElementsAre(99, 132, 6, 1));
  EXPECT_THAT(batch[1].input_ids, ElementsAre(53, 1, 0, 0));
  EXPECT_THAT(batch[1].attention_mask, ElementsAre(1, 1, 0, 0));
  EXPECT_TRUE(batch[1].token_type_ids.empty());
}

TEST(T5Tokenizer, DecodeFollowsHf) {
  T5Tokenizer tok = Tokenizer();
  const std::vector<int64_t> ids = {99,  132, 111, 79,  6,  53, 111, 35, 111, 143, 296,
                                    111, 125, 111, 5,   3,  4,  300, 27, 111, 91,  1};
  EXPECT_THAT(tok.Decode(ids), IsOkAndHolds("Casa, este mică? Nu en't <extra_id_2> gară.</s>"));
  DecodeOptions skip;
  skip.skip_special_tokens = true;
  EXPECT_THAT(tok.Decode(ids, skip), IsOkAndHolds("Casa, este mică? Nu en't gară."));
  DecodeOptions raw;
  raw.clean_up_tokenization_spaces = false;
  EXPECT_THAT(tok.Decode(ids, raw),
              IsOkAndHolds("Casa , este mică ? Nu e n't <extra_id_2> gară .</s>"));
  EXPECT_THAT(tok.Decode({111, 1, 2, 111, 300, 0}), IsOkAndHolds("</s><unk> <extra_id_2> <pad>"));
  EXPECT_THAT(tok.Decode({116, 125, 299, 2, 0, 1, 301, 302, 5}),
              IsOkAndHolds("Her<unk><pad></s> <extra_id_1> <extra_id_0> n"));
  EXPECT_THAT(tok.Decode({116, 125, 299, 2, 0, 1, 301, 302, 5}, skip), IsOkAndHolds("Hern"));
  EXPECT_THAT(tok.Decode({5, 400}), StatusIs(absl::StatusCode::kInvalidArgument,
                                             HasSubstr("token id 400 is outside")));
}

TEST(T5Tokenizer, RejectsBadInput) {
  EXPECT_THAT(T5Tokenizer::Create("not a model"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("spiece.model")));
  T5TokenizerOptions options;
  options.pad_token = "[PAD]";
  EXPECT_THAT(T5Tokenizer::Create(ModelBytes(), options),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("pad_token \"[PAD]\" is not a piece")));
  EXPECT_THAT(Tokenizer().Tokenize("bad \xff byte"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("byte")));
}

TEST(T5Tokenizer, SaveAndLoadRoundTrip) {
  const std::string dir = NewFolder();
  T5TokenizerOptions options;
  options.extra_ids = 3;
  options.model_max_length = 512;
  ASSERT_OK_AND_ASSIGN(T5Tokenizer tok, T5Tokenizer::Create(ModelBytes(), options));
  ASSERT_OK(tok.SavePretrained(dir));
  EXPECT_THAT(base::ReadFile(dir + "/spiece.model"), IsOkAndHolds(ModelBytes()));
  ASSERT_OK_AND_ASSIGN(std::string config_text, base::ReadFile(dir + "/tokenizer_config.json"));
  nlohmann::json config = nlohmann::json::parse(config_text);
  EXPECT_EQ(config["extra_ids"], 3);
  EXPECT_EQ(config["model_max_length"], 512);
  EXPECT_EQ(config["added_tokens_decoder"]["302"]["content"], "<extra_id_0>");
  EXPECT_EQ(config["added_tokens_decoder"]["302"]["lstrip"], true);
  ASSERT_OK_AND_ASSIGN(T5Tokenizer back, T5Tokenizer::FromPretrained(dir));
  EXPECT_EQ(back.size(), 303);
  EXPECT_EQ(back.options().model_max_length, 512);
  EXPECT_THAT(back.Encode("mică <extra_id_1>"),
              IsOkAndHolds(::testing::Field(&Encoding::input_ids, ElementsAre(53, 301, 1))));
}

TEST(T5Tokenizer, FolderErrorsNameTheFile) {
  const std::string dir = NewFolder();
  ASSERT_OK(base::WriteFileAtomically(dir + "/tokenizer.json", "{}"));
  EXPECT_THAT(T5Tokenizer::FromPretrained(dir),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("has tokenizer.json but no spiece.model")));
  ASSERT_OK(base::WriteFileAtomically(dir + "/spiece.model", ModelBytes()));
  ASSERT_OK(base::WriteFileAtomically(dir + "/tokenizer_config.json", R"({"legacy": false})"));
  EXPECT_THAT(T5Tokenizer::FromPretrained(dir),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("\"legacy\" is false")));
  ASSERT_OK(base::WriteFileAtomically(
      dir + "/tokenizer_config.json",
      R"({"extra_ids": 2, "additional_special_tokens": ["<extra_id_0>", "<extra_id_1>"],
          "added_tokens_decoder": {"5": {"content": "<mine>"}}})"));
  EXPECT_THAT(T5Tokenizer::FromPretrained(dir),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("adds \"<mine>\" as id 5")));
  ASSERT_OK(base::WriteFileAtomically(
      dir + "/tokenizer_config.json",
      R"({"extra_ids": 3, "additional_special_tokens": ["<extra_id_0>", "<extra_id_1>"]})"));
  EXPECT_THAT(T5Tokenizer::FromPretrained(dir),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("lists 2 sentinels but extra_ids is 3")));
}

}  // namespace
}  // namespace loom::text
