// zero_checkpoint: files written for one world size read back for another, against closed
// forms (the flat buffer holds 0, 1, 2, ...; the optimizer's moment ten times that), and the
// errors that name the file.
#include "sharding/deepspeed_checkpoint/zero_checkpoint.h"

#include <filesystem>
#include <map>

#include "base/file_util.h"
#include "base/status_matchers.h"
#include "checkpoint/torch_pickle.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::sharding {
namespace {

namespace fs = std::filesystem;
using ::loom::base::testing::StatusIs;
using ::testing::HasSubstr;

// One group: "a" [3] and "b" [2, 2] — 7 elements.
std::vector<ZeroGroupLayout> Layout() {
  ZeroGroupLayout g;
  g.names = {"a", "b"};
  g.shapes = {{3}, {2, 2}};
  g.numel = 7;
  return {g};
}

at::Tensor Flat(int world) {
  at::Tensor flat = at::zeros({ZeroAlignedNumel(7, world)});
  flat.slice(0, 0, 7).copy_(at::arange(7, at::kFloat));
  return flat;
}

c10::IValue OptimizerState(const at::Tensor& partition) {
  c10::impl::GenericDict entry(c10::StringType::get(), c10::AnyType::get());
  entry.insert("step", at::full({}, 3.0f));
  entry.insert("exp_avg", partition * 10);
  c10::impl::GenericDict state(c10::IntType::get(), c10::AnyType::get());
  state.insert(int64_t{0}, entry);
  c10::impl::GenericDict group(c10::StringType::get(), c10::AnyType::get());
  group.insert("lr", 0.1);
  c10::impl::GenericList params(c10::AnyType::get());
  params.push_back(int64_t{0});
  group.insert("params", params);
  c10::impl::GenericList groups(c10::AnyType::get());
  groups.push_back(group);
  c10::impl::GenericDict sd(c10::StringType::get(), c10::AnyType::get());
  sd.insert("state", state);
  sd.insert("param_groups", groups);
  return sd;
}

// A checkpoint folder as `world` ranks write it.
std::string Write(int world, int stage = 2) {
  const std::string folder = ::testing::TempDir() + "/zc_" + std::to_string(world) + "_" +
                             std::to_string(stage) + "_" +
                             ::testing::UnitTest::GetInstance()->current_test_info()->name();
  fs::remove_all(folder);
  const std::string dir = folder + "/" + ZeroTagName(5);
  EXPECT_OK(base::MakeDirs(dir));
  const at::Tensor flat = Flat(world);
  const int64_t part = flat.numel() / world;
  ZeroFilesInfo info;
  info.stage = stage;
  info.world_size = world;
  info.global_step = 5;
  checkpoint::NamedTensors module = {{"a", flat.slice(0, 0, 3)},
                                     {"b", flat.slice(0, 3, 7).view({2, 2})}};
  EXPECT_OK(WriteZeroModelStates(dir + "/" + kZeroModelStatesFile, module, {}, Layout(), {}, info));
  for (int r = 0; r < world; ++r) {
    info.rank = r;
    const at::Tensor partition = flat.slice(0, r * part, (r + 1) * part).clone();
    EXPECT_OK(WriteZeroOptimStates(dir + "/" + ZeroOptimStatesFile(r, false), {partition}, Layout(),
                                   OptimizerState(partition), info));
  }
  EXPECT_OK(base::WriteFileAtomically(folder + "/latest", ZeroTagName(5)));
  return folder;
}

TEST(ZeroCheckpointTest, ReadsBackOnAnyWorldSize) {
  const std::string folder = Write(2);
  for (int world : {1, 2, 3, 4}) {
    const at::Tensor flat = Flat(world);  // padded for the reading world size
    const int64_t part = flat.numel() / world;
    for (int rank = 0; rank < world; ++rank) {
      ASSERT_OK_AND_ASSIGN(ZeroRankRestore r, ReadZeroRankState(folder, Layout(), rank, world));
      EXPECT_EQ(r.saved_world_size, 2);
      EXPECT_EQ(r.tag, "global_step5");
      const at::Tensor want = flat.slice(0, rank * part, (rank + 1) * part);
      ASSERT_EQ(r.partitions.size(), 1u);
      EXPECT_TRUE(at::equal(r.partitions[0], want)) << "world " << world << " rank " << rank;
      const auto entry = r.optimizer_state.toGenericDict()
                             .at("state")
                             .toGenericDict()
                             .at(int64_t{0})
                             .toGenericDict();
      EXPECT_TRUE(at::equal(entry.at("exp_avg").toTensor(), want * 10));
      EXPECT_EQ(entry.at("step").toTensor().item<float>(), 3.0f);
      EXPECT_DOUBLE_EQ(r.optimizer_state.toGenericDict()
                           .at("param_groups")
                           .toListRef()[0]
                           .toGenericDict()
                           .at("lr")
                           .toDouble(),
                       0.1);
    }
  }
}

TEST(ZeroCheckpointTest, TheLastRanksPaddingIsCutOffTheFp32Partition) {
  // 7 elements at 4 ranks: padded to 8, two per rank; rank 3 holds element 6 and one pad.
  const std::string folder = Write(4);
  ASSERT_OK_AND_ASSIGN(ZeroRankRestore r, ReadZeroRankState(folder, Layout(), 3, 4));
  EXPECT_TRUE(at::equal(r.partitions[0], at::tensor({6.0f, 0.0f})));
  ASSERT_OK_AND_ASSIGN(r, ReadZeroRankState(folder, Layout(), 0, 1));
  EXPECT_TRUE(at::equal(r.partitions[0], Flat(1)));
}

TEST(ZeroCheckpointTest, ErrorsNameTheFile) {
  const std::string folder = Write(2);
  ZeroGroupLayout other = Layout()[0];
  other.names = {"a", "c"};
  EXPECT_THAT(ReadZeroRankState(folder, {other}, 0, 2).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("the checkpoint is of another model")));
  other = Layout()[0];
  other.shapes = {{3}, {4, 1}};
  EXPECT_THAT(ReadZeroRankState(folder, {other}, 0, 2).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("parameter 'b' has shape")));
  fs::remove(folder + "/" + ZeroTagName(5) + "/" + ZeroOptimStatesFile(1, false));
  EXPECT_THAT(ReadZeroRankState(folder, Layout(), 0, 1).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("Expected 2 of")));
  fs::remove(folder + "/latest");
  EXPECT_THAT(ReadZeroRankState(folder, Layout(), 0, 1).status(),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("Unable to find 'latest'")));
  const std::string stage3 = Write(1, /*stage=*/3);
  EXPECT_THAT(ReadZeroRankState(stage3, Layout(), 0, 1).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("ZeRO stage 3")));
}

// The real DeepSpeed 0.13.5 ZeRO-3 checkpoint (2 ranks): every parameter's pieces, put
// together, equal the state dict DeepSpeed's engine held bitwise; every element of each
// optimizer moment arrives exactly once.
TEST(ZeroCheckpointTest, ReadsTheRealZero3CheckpointPieceByPiece) {
  const std::string dir =
      std::string(std::getenv("TEST_SRCDIR")) + "/loom/tests/testdata/deepspeed/zero3_ws2";
  ASSERT_OK_AND_ASSIGN(checkpoint::NamedTensors want,
                       checkpoint::LoadTorchStateDict(dir + "/reference_full_state_dict.pt"));
  ZeroGroupLayout layout;
  for (const auto& [name, t] : want) {
    layout.names.push_back(name);
    layout.shapes.push_back(t.sizes().vec());
    layout.numel += t.numel();
  }
  std::vector<at::Tensor> got;
  std::map<std::string, std::vector<at::Tensor>> seen;  // elements delivered per state key
  for (const auto& [name, t] : want) got.push_back(at::full({t.numel()}, -7.0f));
  ASSERT_OK_AND_ASSIGN(
      Zero3Read read,
      ReadZero3Partitions(dir, {layout},
                          [&](size_t g, size_t i, const std::string& what, int64_t begin,
                              const at::Tensor& values) -> absl::Status {
                            EXPECT_EQ(g, 0u);
                            if (what == kZero3Fp32) {
                              got[i].slice(0, begin, begin + values.numel()).copy_(values);
                              return absl::OkStatus();
                            }
                            std::vector<at::Tensor>& counts = seen[what];
                            if (counts.empty()) {
                              for (const auto& [n, t] : want)
                                counts.push_back(at::zeros({t.numel()}));
                            }
                            counts[i].slice(0, begin, begin + values.numel()).add_(1);
                            return absl::OkStatus();
                          }));
  EXPECT_EQ(read.saved_world_size, 2);
  EXPECT_EQ(read.tag, "global_step3");
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_TRUE(at::equal(got[i].view(want[i].second.sizes()), want[i].second)) << want[i].first;
  }
  ASSERT_EQ(seen.size(), 2u);  // exp_avg and exp_avg_sq
  for (const auto& [key, counts] : seen) {
    for (size_t i = 0; i < counts.size(); ++i) {
      EXPECT_TRUE(at::equal(counts[i], at::ones_like(counts[i]))) << key << " of " << want[i].first;
    }
  }
}

}  // namespace
}  // namespace loom::sharding
