// The real DeepSpeed 0.13.5 ZeRO-2 checkpoint (tests/testdata/deepspeed/zero2_ws2) read into
// loom equals the state dict DeepSpeed's engine held (reference_full_state_dict.pt) bitwise and
// in the same order; broken copies of it are clear errors.
#include "checkpoint/deepspeed_zero.h"

#include <ATen/ATen.h>

#include <filesystem>
#include <fstream>

#include "base/status_matchers.h"
#include "checkpoint/torch_pickle.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::checkpoint {
namespace {

using ::loom::base::testing::StatusIs;
using ::testing::HasSubstr;

std::string Testdata(const std::string& name) {
  const char* dir = std::getenv("TEST_SRCDIR");
  return std::string(dir) + "/loom/tests/testdata/deepspeed/" + name;
}
std::string Zero2() { return Testdata("zero2_ws2"); }

void ExpectReadsAsReference(const std::string& dir) {
  ASSERT_OK_AND_ASSIGN(NamedTensors got, ConsolidateZeroCheckpoint(dir));
  ASSERT_OK_AND_ASSIGN(NamedTensors want,
                       LoadTorchStateDict(dir + "/reference_full_state_dict.pt"));
  ASSERT_EQ(got.size(), want.size());
  int64_t elements = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got[i].first, want[i].first) << "entry " << i;
    EXPECT_EQ(got[i].second.scalar_type(), want[i].second.scalar_type()) << want[i].first;
    EXPECT_EQ(got[i].second.sizes(), want[i].second.sizes()) << want[i].first;
    EXPECT_TRUE(at::equal(got[i].second, want[i].second)) << want[i].first;
    elements += want[i].second.numel();
  }
  EXPECT_EQ(got.size(), 41u);
  EXPECT_EQ(elements, 139586);
}

TEST(DeepSpeedZeroTest, RealZero2CheckpointEqualsTheEnginesStateDictBitwise) {
  ExpectReadsAsReference(Zero2());
  ASSERT_OK_AND_ASSIGN(NamedTensors got, ConsolidateZeroCheckpoint(Zero2()));
  // The explicit tag reads the same.
  ASSERT_OK_AND_ASSIGN(NamedTensors tagged, ConsolidateZeroCheckpoint(Zero2(), "global_step3"));
  EXPECT_EQ(tagged.size(), got.size());
}

TEST(DeepSpeedZeroTest, RealZero3CheckpointEqualsTheEnginesStateDictBitwise) {
  ExpectReadsAsReference(Testdata("zero3_ws2"));
}

TEST(DeepSpeedZeroTest, ReadsTheDeepSpeedObjectsInTheOptimizerFile) {
  ASSERT_OK_AND_ASSIGN(
      c10::IValue top,
      LoadPickle(Zero2() + "/global_step3/zero_pp_rank_1_mp_rank_00_optim_states.pt"));
  const auto osd = top.toGenericDict().at("optimizer_state_dict").toGenericDict();
  EXPECT_EQ(osd.at("zero_stage").toInt(), 2);  // ZeroStageEnum.gradients
  const auto scaler = osd.at("loss_scaler").toGenericDict();
  EXPECT_EQ(scaler.at("__class__").toStringRef(), "deepspeed.runtime.fp16.loss_scaler.LossScaler");
  EXPECT_EQ(scaler.at("cur_scale").toDouble(), 1.0);
  // Rank 1 holds the last partition: 139,588 / 2 elements with the 2 of padding trimmed.
  EXPECT_EQ(osd.at("single_partition_of_fp32_groups").toListRef()[0].toTensor().numel(), 69792);
}

// A copy of the checkpoint in a scratch folder, for breaking.
std::string CopyOfZero2(const std::string& name) {
  const std::string dir = std::string(std::getenv("TEST_TMPDIR")) + "/" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::copy(Zero2(), dir, std::filesystem::copy_options::recursive);
  return dir;
}

TEST(DeepSpeedZeroTest, BrokenCheckpointsAreClearErrors) {
  // A rank's file missing: partition_count says 2.
  std::string dir = CopyOfZero2("missing_rank");
  std::filesystem::remove(dir + "/global_step3/zero_pp_rank_1_mp_rank_00_optim_states.pt");
  EXPECT_THAT(ConsolidateZeroCheckpoint(dir).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("partition_count is 2")));
  // No latest and no tag.
  dir = CopyOfZero2("no_latest");
  std::filesystem::remove(dir + "/latest");
  EXPECT_THAT(ConsolidateZeroCheckpoint(dir).status(),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("latest")));
  // A tag that does not exist.
  EXPECT_THAT(ConsolidateZeroCheckpoint(Zero2(), "global_step9").status(),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("global_step9")));
  // The model file replaced by the other rank's optimizer file: keys missing.
  dir = CopyOfZero2("wrong_model");
  std::filesystem::copy_file(dir + "/global_step3/zero_pp_rank_0_mp_rank_00_optim_states.pt",
                             dir + "/global_step3/mp_rank_00_model_states.pt",
                             std::filesystem::copy_options::overwrite_existing);
  EXPECT_THAT(ConsolidateZeroCheckpoint(dir).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("buffer_names")));
  // A truncated optimizer file.
  dir = CopyOfZero2("truncated");
  std::filesystem::resize_file(dir + "/global_step3/zero_pp_rank_0_mp_rank_00_optim_states.pt",
                               1000);
  EXPECT_FALSE(ConsolidateZeroCheckpoint(dir).ok());
}

}  // namespace
}  // namespace loom::checkpoint
