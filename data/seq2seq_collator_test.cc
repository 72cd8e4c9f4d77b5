#include "data/seq2seq_collator.h"

#include <torch/torch.h>

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::data {
namespace {

using ::loom::base::testing::StatusIs;
using ::testing::HasSubstr;

Example Ex(std::vector<int64_t> ids, std::vector<int64_t> labels) {
  const int64_t n = static_cast<int64_t>(ids.size());
  return {{"input_ids", torch::tensor(ids, torch::kLong)},
          {"attention_mask", torch::ones({n}, torch::kLong)},
          {"labels", torch::tensor(labels, torch::kLong)}};
}

TEST(Seq2SeqCollatorTest, PadsInputsWithPadAndLabelsWithMinus100) {
  Seq2SeqCollatorOptions o;
  o.pad_token_id = 0;
  ASSERT_OK_AND_ASSIGN(Batch b, Seq2SeqCollator(o).Collate({Ex({5, 6, 1}, {7, 1}),
                                                            Ex({8, 1}, {9, 10, 11, 1})}));
  EXPECT_TRUE(b["input_ids"].equal(torch::tensor({{5, 6, 1}, {8, 1, 0}}, torch::kLong)));
  EXPECT_TRUE(b["attention_mask"].equal(torch::tensor({{1, 1, 1}, {1, 1, 0}}, torch::kLong)));
  EXPECT_TRUE(b["labels"].equal(torch::tensor({{7, 1, -100, -100}, {9, 10, 11, 1}}, torch::kLong)));
  EXPECT_EQ(b.count("decoder_input_ids"), 0u);
}

TEST(Seq2SeqCollatorTest, MultipleOfEightAndDecoderInputsFromTheModel) {
  Seq2SeqCollatorOptions o;
  o.pad_token_id = 0;
  o.label_pad_token_id = 0;  // --ignore_pad_token_for_loss false
  o.pad_to_multiple_of = 8;
  o.decoder_input_ids_from_labels = [](const at::Tensor& labels) {
    return torch::cat({torch::full({labels.size(0), 1}, 42, torch::kLong),
                       labels.narrow(1, 0, labels.size(1) - 1)}, 1);
  };
  ASSERT_OK_AND_ASSIGN(Batch b, Seq2SeqCollator(o).Collate({Ex({5, 1}, {7, 1})}));
  EXPECT_EQ(b["input_ids"].size(1), 8);
  EXPECT_TRUE(b["labels"].equal(torch::tensor({{7, 1, 0, 0, 0, 0, 0, 0}}, torch::kLong)));
  EXPECT_TRUE(b["decoder_input_ids"].equal(
      torch::tensor({{42, 7, 1, 0, 0, 0, 0, 0}}, torch::kLong)));
}

TEST(Seq2SeqCollatorTest, LabelsOnSomeExamplesOnlyAreRefused) {
  Example no_labels = Ex({5}, {1});
  no_labels.erase("labels");
  EXPECT_THAT(Seq2SeqCollator({}).Collate({Ex({5}, {1}), no_labels}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("example 1 lacks")));
}

}  // namespace
}  // namespace loom::data
