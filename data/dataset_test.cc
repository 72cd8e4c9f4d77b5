#include "data/dataset.h"

#include <ATen/ATen.h>

#include <thread>
#include <vector>

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::data {
namespace {

using base::testing::IsOkAndHolds;
using base::testing::StatusIs;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

at::Tensor Long(std::vector<int64_t> v) { return at::tensor(v, at::kLong); }

TEST(TensorDatasetTest, GetReturnsRowIOfEveryColumn) {
  const at::Tensor ids = at::arange(12, at::kLong).reshape({4, 3});
  const at::Tensor labels = at::tensor({0.5, 1.5, 2.5, 3.5}, at::kDouble);
  ASSERT_OK_AND_ASSIGN(auto ds, TensorDataset::Create({{"input_ids", ids}, {"label", labels}}));
  EXPECT_EQ(ds->Size(), 4);
  ASSERT_OK_AND_ASSIGN(const Example row, ds->Get(2));
  ASSERT_EQ(row.size(), 2u);
  EXPECT_TRUE(row.at("input_ids").equal(Long({6, 7, 8})));
  EXPECT_EQ(row.at("label").dim(), 0);
  EXPECT_EQ(row.at("label").item<double>(), 2.5);
  EXPECT_EQ(row.at("label").scalar_type(), at::kDouble);
}

TEST(TensorDatasetTest, RejectsBadColumns) {
  EXPECT_THAT(TensorDataset::Create({}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no columns")));
  EXPECT_THAT(TensorDataset::Create({{"a", at::zeros({3})}, {"b", at::zeros({4, 2})}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("'b' has 4 rows"), HasSubstr("'a' has 3"))));
  EXPECT_THAT(TensorDataset::Create({{"x", at::scalar_tensor(3)}}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("column 'x'")));
  EXPECT_THAT(TensorDataset::Create({{"x", at::Tensor()}}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("column 'x'")));
}

TEST(TensorDatasetTest, OutOfRangeIndexIsAnError) {
  ASSERT_OK_AND_ASSIGN(auto ds, TensorDataset::Create({{"a", at::zeros({3})}}));
  EXPECT_THAT(ds->Get(3),
              StatusIs(absl::StatusCode::kOutOfRange, HasSubstr("index 3 is out of range [0, 3)")));
  EXPECT_THAT(ds->Get(-1), StatusIs(absl::StatusCode::kOutOfRange, HasSubstr("index -1")));
}

TEST(TensorDatasetTest, ConcurrentGetsSeeTheSameRows) {
  ASSERT_OK_AND_ASSIGN(auto ds, TensorDataset::Create({{"x", at::arange(1000, at::kLong)}}));
  std::vector<std::thread> threads;
  std::vector<int64_t> sums(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int64_t i = 0; i < ds->Size(); ++i)
        sums[t] += ds->Get(i).value().at("x").item<int64_t>();
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_THAT(sums, ElementsAre(499500, 499500, 499500, 499500));  // 999 * 1000 / 2
}

TEST(ExampleListDatasetTest, GetReturnsTheStoredExample) {
  ExampleListDataset ds({{{"input_ids", Long({1, 2, 3})}}, {{"input_ids", Long({4})}}});
  EXPECT_EQ(ds.Size(), 2);
  ASSERT_OK_AND_ASSIGN(const Example e, ds.Get(1));
  EXPECT_TRUE(e.at("input_ids").equal(Long({4})));
  EXPECT_THAT(ds.Get(2), StatusIs(absl::StatusCode::kOutOfRange, HasSubstr("index 2")));
}

TEST(LengthsForGroupingTest, MeasuresTheInputField) {
  ExampleListDataset ds({{{"input_ids", Long({1, 2, 3})}},
                         {{"input_ids", Long({4})}},
                         {{"input_ids", at::zeros({0}, at::kLong)}}});
  EXPECT_THAT(LengthsForGrouping(ds), IsOkAndHolds(ElementsAre(3, 1, 0)));
}

TEST(LengthsForGroupingTest, PrefersTheLengthColumn) {
  ExampleListDataset ds({{{"input_ids", Long({1, 2, 3})}, {"n", at::scalar_tensor(7, at::kLong)}},
                         {{"input_ids", Long({4})}, {"n", at::scalar_tensor(2, at::kLong)}}});
  EXPECT_THAT(LengthsForGrouping(ds, "n"), IsOkAndHolds(ElementsAre(7, 2)));
  EXPECT_THAT(LengthsForGrouping(ds, "length"), IsOkAndHolds(ElementsAre(3, 1)));
  EXPECT_THAT(
      LengthsForGrouping(ds, "missing", "tokens"),
      StatusIs(absl::StatusCode::kInvalidArgument,
               AllOf(HasSubstr("example 0"), HasSubstr("'missing'"), HasSubstr("'tokens'"))));
  EXPECT_THAT(LengthsForGrouping(ds, "input_ids"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("example 0"), HasSubstr("one number"))));
}

}  // namespace
}  // namespace loom::data
