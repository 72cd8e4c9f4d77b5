// LazyTorchSave on a file torch::pickle_save wrote (the zip format Python's torch.save writes):
// the tensors are meta placeholders with their real shapes; ranges read from the file and whole
// tensors materialized equal the saved ones, views of a shared storage included; bad requests
// and files are errors.
#include "checkpoint/lazy_torch_save.h"

#include <cstdlib>
#include <fstream>

#include "base/status_matchers.h"
#include "checkpoint/torch_pickle.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::checkpoint {
namespace {

using ::loom::base::testing::StatusIs;

TEST(LazyTorchSaveTest, ReadsRangesAndTensorsFromTheFile) {
  const std::string path = std::string(std::getenv("TEST_TMPDIR")) + "/lazy.pt";
  const at::Tensor big = at::arange(1000, at::kFloat);
  const at::Tensor ints = at::arange(12, at::kLong).view({3, 4});
  c10::impl::GenericDict d(c10::StringType::get(), c10::AnyType::get());
  d.insert("big", big);
  d.insert("tail", big.slice(0, 900));  // a view of the same storage
  d.insert("ints", ints);
  ASSERT_OK(SavePickle(path, d));
  ASSERT_OK_AND_ASSIGN(auto file, LazyTorchSave::Open(path));
  const auto dict = file->value().toGenericDict();
  const at::Tensor lazy_big = dict.at("big").toTensor();
  EXPECT_TRUE(lazy_big.is_meta());
  EXPECT_EQ(lazy_big.numel(), 1000);
  std::vector<float> got(10);
  ASSERT_OK(file->ReadElements(lazy_big, 495, 10, got.data()));
  for (int i = 0; i < 10; ++i) EXPECT_EQ(got[i], 495.0f + i);
  ASSERT_OK(file->ReadElements(dict.at("tail").toTensor(), 0, 3, got.data()));
  EXPECT_EQ(got[2], 902.0f);
  ASSERT_OK_AND_ASSIGN(at::Tensor whole, file->Materialize(dict.at("ints").toTensor()));
  EXPECT_TRUE(at::equal(whole, ints));
  EXPECT_THAT(file->ReadElements(lazy_big, 995, 10, got.data()),
              StatusIs(absl::StatusCode::kInvalidArgument, ::testing::_));
  EXPECT_THAT(file->ReadElements(dict.at("ints").toTensor(), 0, 1, got.data()),
              StatusIs(absl::StatusCode::kInvalidArgument, ::testing::HasSubstr("1-D")));
  EXPECT_THAT(file->ReadElements(at::zeros({3}), 0, 1, got.data()),
              StatusIs(absl::StatusCode::kInvalidArgument, ::testing::HasSubstr("not a tensor")));
  std::ofstream(path + ".txt") << "not a zip";
  EXPECT_THAT(LazyTorchSave::Open(path + ".txt").status(),
              StatusIs(absl::StatusCode::kInvalidArgument, ::testing::HasSubstr("zip")));
}

}  // namespace
}  // namespace loom::checkpoint
