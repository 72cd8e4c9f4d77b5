// Expected batches are written out by hand from HF's rules (data/collator.h cites them).
#include "data/collator.h"

#include <ATen/ATen.h>

#include <vector>

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::data {
namespace {

using base::testing::StatusIs;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Key;

at::Tensor Long(std::vector<int64_t> v) { return at::tensor(v, at::kLong); }
at::Tensor Long2(std::vector<std::vector<int64_t>> rows) {
  std::vector<at::Tensor> t;
  for (auto& r : rows) t.push_back(Long(r));
  return at::stack(t);
}
at::Tensor Scalar(int64_t v, at::ScalarType type = at::kLong) { return at::scalar_tensor(v, type); }

// Same dtype, same shape, same values.
MATCHER_P(TensorIs, expected, "") {
  if (arg.scalar_type() != expected.scalar_type() || !arg.sizes().equals(expected.sizes()) ||
      !arg.equal(expected)) {
    *result_listener << "got " << arg << " (" << arg.scalar_type() << ")";
    return false;
  }
  return true;
}

TEST(DefaultCollatorTest, StacksFieldsAndTurnsIntegerLabelIntoLongLabels) {
  const std::vector<Example> examples = {
      {{"input_ids", Long({1, 2, 3})},
       {"attention_mask", Long({1, 1, 0})},
       {"label", Scalar(1, at::kInt)}},
      {{"input_ids", Long({4, 5, 6})},
       {"attention_mask", Long({1, 1, 1})},
       {"label", Scalar(0, at::kInt)}},
  };
  ASSERT_OK_AND_ASSIGN(const Batch batch, DefaultCollator().Collate(examples));
  EXPECT_THAT(batch, ElementsAre(Key("attention_mask"), Key("input_ids"), Key("labels")));
  EXPECT_THAT(batch.at("input_ids"), TensorIs(Long2({{1, 2, 3}, {4, 5, 6}})));
  EXPECT_THAT(batch.at("attention_mask"), TensorIs(Long2({{1, 1, 0}, {1, 1, 1}})));
  EXPECT_THAT(batch.at("labels"), TensorIs(Long({1, 0})));
}

TEST(DefaultCollatorTest, FloatLabelBecomesFloat32AndBoolBecomesLong) {
  ASSERT_OK_AND_ASSIGN(
      const Batch f, DefaultCollator().Collate({{{"label", at::scalar_tensor(0.5, at::kDouble)}},
                                                {{"label", at::scalar_tensor(2.0, at::kDouble)}}}));
  EXPECT_THAT(f.at("labels"), TensorIs(at::tensor({0.5f, 2.0f}, at::kFloat)));
  ASSERT_OK_AND_ASSIGN(
      const Batch b, DefaultCollator().Collate({{{"label", at::scalar_tensor(true, at::kBool)}},
                                                {{"label", at::scalar_tensor(false, at::kBool)}}}));
  EXPECT_THAT(b.at("labels"), TensorIs(Long({1, 0})));
  // A one-element label of shape [1] still gives labels of shape [B] (HF calls .item()).
  ASSERT_OK_AND_ASSIGN(const Batch one,
                       DefaultCollator().Collate({{{"label", Long({7})}}, {{"label", Long({8})}}}));
  EXPECT_THAT(one.at("labels"), TensorIs(Long({7, 8})));
}

TEST(DefaultCollatorTest, LabelIdsAreStackedWithTheirDtype) {
  const at::Tensor a = at::tensor({1, 2}, at::kInt);
  const at::Tensor b = at::tensor({3, 4}, at::kInt);
  ASSERT_OK_AND_ASSIGN(const Batch batch,
                       DefaultCollator().Collate({{{"label_ids", a}}, {{"label_ids", b}}}));
  EXPECT_THAT(batch, ElementsAre(Key("labels")));
  EXPECT_THAT(batch.at("labels"), TensorIs(at::stack({a, b})));
}

TEST(DefaultCollatorTest, UndefinedFieldsAreLeftOut) {
  ASSERT_OK_AND_ASSIGN(const Batch batch,
                       DefaultCollator().Collate({{{"x", Long({1})}, {"none", at::Tensor()}},
                                                  {{"x", Long({2})}, {"none", at::Tensor()}}}));
  EXPECT_THAT(batch, ElementsAre(Key("x")));
}

TEST(DefaultCollatorTest, ErrorsNameTheField) {
  const DefaultCollator c;
  EXPECT_THAT(c.Collate({}), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("empty")));
  EXPECT_THAT(c.Collate({{{"input_ids", Long({1, 2, 3})}}, {{"input_ids", Long({4, 5})}}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("'input_ids'"), HasSubstr("[3] in example 0"),
                             HasSubstr("[2] in example 1"), HasSubstr("PaddingCollator"))));
  EXPECT_THAT(c.Collate({{{"a", Long({1})}, {"b", Long({1})}}, {{"a", Long({2})}}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("'b'"), HasSubstr("missing from example 1"))));
  EXPECT_THAT(c.Collate({{{"a", Long({1})}}, {{"a", Long({2})}, {"extra", Long({2})}}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("'extra'"), HasSubstr("example 1"))));
  EXPECT_THAT(c.Collate({{{"a", Long({1})}}, {{"a", at::tensor({2.0f})}}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("'a'"), HasSubstr("Long"), HasSubstr("Float"))));
  EXPECT_THAT(c.Collate({{{"label", Long({1, 2})}}, {{"label", Long({3, 4})}}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("'label'"), HasSubstr("label_ids"))));
}

TEST(PaddingCollatorTest, PadsToTheLongestInputAndAddsAnAttentionMask) {
  const std::vector<Example> examples = {
      {{"input_ids", Long({5, 6, 7})}, {"token_type_ids", Long({0, 1, 1})}, {"label", Scalar(2)}},
      {{"input_ids", Long({8})}, {"token_type_ids", Long({0})}, {"label", Scalar(0)}},
  };
  ASSERT_OK_AND_ASSIGN(const Batch batch, PaddingCollator().Collate(examples));
  EXPECT_THAT(batch, ElementsAre(Key("attention_mask"), Key("input_ids"), Key("labels"),
                                 Key("token_type_ids")));
  EXPECT_THAT(batch.at("input_ids"), TensorIs(Long2({{5, 6, 7}, {8, 0, 0}})));
  EXPECT_THAT(batch.at("attention_mask"), TensorIs(Long2({{1, 1, 1}, {1, 0, 0}})));
  EXPECT_THAT(batch.at("token_type_ids"), TensorIs(Long2({{0, 1, 1}, {0, 0, 0}})));
  EXPECT_THAT(batch.at("labels"), TensorIs(Long({2, 0})));
}

TEST(PaddingCollatorTest, UsesThePadIdsAndPadsExistingMasks) {
  const std::vector<Example> examples = {
      {{"input_ids", Long({5, 6})},
       {"attention_mask", Long({1, 1})},
       {"token_type_ids", Long({1, 1})},
       {"special_tokens_mask", Long({1, 0})}},
      {{"input_ids", Long({8, 9, 10, 11})},
       {"attention_mask", Long({1, 1, 1, 0})},
       {"token_type_ids", Long({0, 0, 1, 1})},
       {"special_tokens_mask", Long({1, 0, 0, 1})}},
  };
  PaddingCollator c(PaddingCollatorOptions().set_pad_token_id(103).set_pad_token_type_id(2));
  ASSERT_OK_AND_ASSIGN(const Batch batch, c.Collate(examples));
  EXPECT_THAT(batch.at("input_ids"), TensorIs(Long2({{5, 6, 103, 103}, {8, 9, 10, 11}})));
  EXPECT_THAT(batch.at("attention_mask"), TensorIs(Long2({{1, 1, 0, 0}, {1, 1, 1, 0}})));
  EXPECT_THAT(batch.at("token_type_ids"), TensorIs(Long2({{1, 1, 2, 2}, {0, 0, 1, 1}})));
  EXPECT_THAT(batch.at("special_tokens_mask"), TensorIs(Long2({{1, 0, 1, 1}, {1, 0, 0, 1}})));
}

TEST(PaddingCollatorTest, PadToMultipleOfRoundsUp) {
  PaddingCollator by4(PaddingCollatorOptions().set_pad_to_multiple_of(4));
  ASSERT_OK_AND_ASSIGN(Batch batch,
                       by4.Collate({{{"input_ids", Long({1, 2, 3})}}, {{"input_ids", Long({4})}}}));
  EXPECT_THAT(batch.at("input_ids"), TensorIs(Long2({{1, 2, 3, 0}, {4, 0, 0, 0}})));
  EXPECT_THAT(batch.at("attention_mask"), TensorIs(Long2({{1, 1, 1, 0}, {1, 0, 0, 0}})));
  // Already a multiple: unchanged.
  ASSERT_OK_AND_ASSIGN(
      batch, by4.Collate({{{"input_ids", Long({1, 2, 3, 4})}}, {{"input_ids", Long({5, 6})}}}));
  EXPECT_THAT(batch.at("input_ids"), TensorIs(Long2({{1, 2, 3, 4}, {5, 6, 0, 0}})));
  // A single example is padded too (5 -> 8).
  ASSERT_OK_AND_ASSIGN(batch, by4.Collate({{{"input_ids", Long({1, 2, 3, 4, 5})}}}));
  EXPECT_THAT(batch.at("input_ids"), TensorIs(Long2({{1, 2, 3, 4, 5, 0, 0, 0}})));
  EXPECT_THAT(PaddingCollator(PaddingCollatorOptions().set_pad_to_multiple_of(0))
                  .Collate({{{"input_ids", Long({1})}}}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("pad_to_multiple_of")));
}

TEST(PaddingCollatorTest, PadLabelsWithMinus100AsTokenClassificationDoes) {
  const std::vector<Example> examples = {
      {{"input_ids", Long({5, 6, 7})}, {"label", Long({1, 2, 3})}},
      {{"input_ids", Long({8})}, {"label", Long({4})}},
  };
  ASSERT_OK_AND_ASSIGN(
      const Batch batch,
      PaddingCollator(PaddingCollatorOptions().set_pad_labels(true)).Collate(examples));
  EXPECT_THAT(batch, ElementsAre(Key("attention_mask"), Key("input_ids"), Key("labels")));
  EXPECT_THAT(batch.at("labels"), TensorIs(Long2({{1, 2, 3}, {4, -100, -100}})));
  ASSERT_OK_AND_ASSIGN(
      const Batch custom,
      PaddingCollator(PaddingCollatorOptions()
                          .set_pad_labels(true)
                          .set_label_pad_token_id(-1)
                          .set_pad_to_multiple_of(2))
          .Collate({{{"input_ids", Long({5, 6, 7})}, {"labels", Long({1, 2, 3})}}}));
  EXPECT_THAT(custom.at("labels"), TensorIs(Long2({{1, 2, 3, -1}})));
  // Without pad_labels ragged labels cannot be stacked.
  EXPECT_THAT(PaddingCollator().Collate(examples),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'label'")));
}

TEST(PaddingCollatorTest, LabelIdsAreRenamedLabels) {
  ASSERT_OK_AND_ASSIGN(const Batch batch,
                       PaddingCollator(PaddingCollatorOptions().set_return_attention_mask(false))
                           .Collate({{{"input_ids", Long({1, 2})}, {"label_ids", Scalar(3)}},
                                     {{"input_ids", Long({1})}, {"label_ids", Scalar(4)}}}));
  EXPECT_THAT(batch, ElementsAre(Key("input_ids"), Key("labels")));
  EXPECT_THAT(batch.at("labels"), TensorIs(Long({3, 4})));
}

TEST(PaddingCollatorTest, OtherRaggedFieldsNeedAnExplicitPadValue) {
  const std::vector<Example> examples = {
      {{"input_ids", Long({1, 2, 3})}, {"frames", at::ones({3, 2}, at::kFloat)}},
      {{"input_ids", Long({4})}, {"frames", at::full({1, 2}, 2.0f)}},
  };
  EXPECT_THAT(PaddingCollator().Collate(examples),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("'frames'"), HasSubstr("extra_pad_values"))));
  ASSERT_OK_AND_ASSIGN(const Batch batch,
                       PaddingCollator(PaddingCollatorOptions().add_extra_pad_value("frames", -1.5))
                           .Collate(examples));
  const at::Tensor expected = at::tensor({1.f, 1.f, 1.f, 1.f, 1.f, 1.f,  //
                                          2.f, 2.f, -1.5f, -1.5f, -1.5f, -1.5f})
                                  .reshape({2, 3, 2});
  EXPECT_THAT(batch.at("frames"), TensorIs(expected));
}

TEST(PaddingCollatorTest, ErrorsNameTheField) {
  const PaddingCollator c;
  EXPECT_THAT(c.Collate({{{"tokens", Long({1})}}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("'input_ids'"), HasSubstr("model_input_name"))));
  EXPECT_THAT(c.Collate({{{"input_ids", Scalar(1)}}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("'input_ids'"), HasSubstr("scalar"))));
  EXPECT_THAT(c.Collate({{{"input_ids", Long({1, 2})}, {"attention_mask", Long({1, 1, 1})}},
                         {{"input_ids", Long({1})}, {"attention_mask", Long({1})}}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("'attention_mask' of example 0 has length 3"),
                             HasSubstr("padded length 2"))));
  EXPECT_THAT(
      c.Collate({{{"input_ids", Long({1, 2})}, {"x", Long({1})}}, {{"input_ids", Long({1})}}}),
      StatusIs(absl::StatusCode::kInvalidArgument,
               AllOf(HasSubstr("'x'"), HasSubstr("missing from example 1"))));
  EXPECT_THAT(
      c.Collate({{{"input_ids", Long({1, 2})}}, {{"input_ids", at::tensor({1}, at::kInt)}}}),
      StatusIs(absl::StatusCode::kInvalidArgument,
               AllOf(HasSubstr("'input_ids'"), HasSubstr("Int in example 1"))));
}

}  // namespace
}  // namespace loom::data
