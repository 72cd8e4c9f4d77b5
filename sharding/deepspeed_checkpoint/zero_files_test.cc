// zero_files: DeepSpeed 0.13.5's names and partition arithmetic against closed forms (the file
// names the real checkpoints in tests/testdata carry), `latest` and the tag folder on real
// files, and the checked value readers' errors.
#include "sharding/deepspeed_checkpoint/zero_files.h"

#include <filesystem>

#include "base/file_util.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::sharding {
namespace {

namespace fs = std::filesystem;
using ::loom::base::testing::IsOkAndHolds;
using ::loom::base::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string FreshDir(const std::string& name) {
  const std::string dir = ::testing::TempDir() + "/zero_files_" + name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

TEST(ZeroFilesTest, NamesAreDeepSpeeds) {
  EXPECT_EQ(ZeroTagName(12), "global_step12");
  EXPECT_EQ(ZeroOptimStatesFile(3, false), "zero_pp_rank_3_mp_rank_00_optim_states.pt");
  EXPECT_EQ(ZeroOptimStatesFile(0, true), "bf16_zero_pp_rank_0_mp_rank_00_optim_states.pt");
  EXPECT_EQ(ZeroModelStatesFile(1, 5), "mp_rank_00_model_states.pt");
  EXPECT_EQ(ZeroModelStatesFile(2, 0), kZeroModelStatesFile);
  EXPECT_EQ(ZeroModelStatesFile(3, 1), "zero_pp_rank_1_mp_rank_00_model_states.pt");
}

TEST(ZeroFilesTest, PartitionArithmetic) {
  // Stages 1-2: a multiple of 2 x world.
  EXPECT_EQ(ZeroAlignedNumel(7, 1), 8);
  EXPECT_EQ(ZeroAlignedNumel(7, 2), 8);
  EXPECT_EQ(ZeroAlignedNumel(9, 2), 12);
  EXPECT_EQ(ZeroAlignedNumel(0, 4), 0);
  // Stage 3: ceil(numel / world) per rank; the last ranks' pieces may be padding only.
  EXPECT_EQ(Zero3PartitionNumel(7, 2), 4);
  EXPECT_EQ(Zero3PartitionNumel(8, 4), 2);
  EXPECT_EQ(Zero3PartitionNumel(5, 1), 5);
  EXPECT_EQ(ZeroValidInPartition(7, 4, 0), 4);
  EXPECT_EQ(ZeroValidInPartition(7, 4, 1), 3);
  EXPECT_EQ(ZeroValidInPartition(3, 1, 5), 0);
}

TEST(ZeroFilesTest, Zero3PieceIsTheRanksSliceZeroPadded) {
  const at::Tensor flat = at::arange(5, at::kFloat);  // 0 1 2 3 4 over 2 ranks: 3 + 2 (+1 pad)
  EXPECT_TRUE(at::equal(Zero3Piece(flat, 0, 2), at::tensor({0.f, 1.f, 2.f})));
  EXPECT_TRUE(at::equal(Zero3Piece(flat, 1, 2), at::tensor({3.f, 4.f, 0.f})));
  EXPECT_TRUE(at::equal(Zero3Piece(at::arange(2, at::kFloat), 3, 4), at::tensor({0.f})));
}

TEST(ZeroFilesTest, NaturalOrderComparesDigitRunsAsNumbers) {
  EXPECT_TRUE(NaturalLess("rank_2_x", "rank_10_x"));
  EXPECT_FALSE(NaturalLess("rank_10_x", "rank_2_x"));
  EXPECT_TRUE(NaturalLess("a", "ab"));
  EXPECT_FALSE(NaturalLess("rank_007", "rank_7"));
  EXPECT_FALSE(NaturalLess("rank_7", "rank_007"));
  const std::string dir = FreshDir("list");
  for (int r : {10, 2, 0, 1}) {
    ASSERT_OK(base::WriteFileAtomically(dir + "/" + ZeroOptimStatesFile(r, false), "x"));
  }
  ASSERT_OK(base::WriteFileAtomically(dir + "/" + kZeroModelStatesFile, "x"));
  fs::create_directories(dir + "/sub_optim_states.pt");  // a folder is not a file
  EXPECT_THAT(ListZeroFiles(dir, kZeroOptimStatesSuffix),
              ElementsAre(ZeroOptimStatesFile(0, false), ZeroOptimStatesFile(1, false),
                          ZeroOptimStatesFile(2, false), ZeroOptimStatesFile(10, false)));
  EXPECT_THAT(ListZeroFiles(dir, kZeroModelStatesSuffix), ElementsAre(kZeroModelStatesFile));
  EXPECT_TRUE(ListZeroFiles(dir + "/none", kZeroModelStatesSuffix).empty());
}

TEST(ZeroFilesTest, LatestAndTagFolder) {
  const std::string dir = FreshDir("latest");
  EXPECT_THAT(ReadZeroLatestTag(dir),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("Unable to find 'latest' file at " + dir + "/latest")));
  ASSERT_OK(base::WriteFileAtomically(dir + "/latest", " global_step4\n"));
  EXPECT_THAT(ReadZeroLatestTag(dir), IsOkAndHolds(std::string("global_step4")));
  EXPECT_THAT(ZeroTagFolder(dir, "global_step4"),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("Directory '" + dir + "/global_step4' doesn't exist")));
  fs::create_directories(dir + "/global_step4");
  EXPECT_THAT(ZeroTagFolder(dir, "global_step4"), IsOkAndHolds(dir + "/global_step4"));
}

TEST(ZeroFilesTest, ValueReadersNameTheFileAndKey) {
  c10::impl::GenericDict d(c10::StringType::get(), c10::AnyType::get());
  d.insert("n", int64_t{3});
  d.insert("counts", c10::List<int64_t>({2, 4, 1}));
  d.insert("bad", std::string("x"));
  const c10::IValue dict(d);
  EXPECT_THAT(ZeroEntry(dict, "missing", "f.pt"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("f.pt: no 'missing' entry")));
  EXPECT_THAT(ZeroEntry(c10::IValue(int64_t{1}), "n", "f.pt"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("expected a dict")));
  EXPECT_THAT(ZeroIntOrMax(*ZeroEntry(dict, "n", "f.pt"), "n", "f.pt"), IsOkAndHolds(3));
  EXPECT_THAT(ZeroIntOrMax(*ZeroEntry(dict, "counts", "f.pt"), "counts", "f.pt"), IsOkAndHolds(4));
  EXPECT_THAT(ZeroIntOrMax(*ZeroEntry(dict, "bad", "f.pt"), "bad", "f.pt"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("f.pt: 'bad' is not an int or a list of ints")));
  const c10::IValue tuple = c10::ivalue::Tuple::create({int64_t{2}, int64_t{3}});
  EXPECT_THAT(ZeroShape(tuple, "w"), IsOkAndHolds(ElementsAre(2, 3)));
  EXPECT_THAT(ZeroShape(c10::IValue(c10::List<int64_t>({4})), "w"), IsOkAndHolds(ElementsAre(4)));
  EXPECT_THAT(ZeroShape(c10::ivalue::Tuple::create({int64_t{-1}}), "f.pt: w"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("f.pt: w: a shape entry")));
  EXPECT_THAT(ZeroShape(c10::IValue(std::string("x")), "w"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not a tuple")));
  EXPECT_THAT(ZeroNumel({2, 3, 4}, "w"), IsOkAndHolds(24));
  EXPECT_THAT(ZeroNumel({int64_t{1} << 40, int64_t{1} << 40}, "w"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("too large")));
}

}  // namespace
}  // namespace loom::sharding
