// The real DeepSpeed 0.13.5 ZeRO-2 checkpoint (tests/testdata/deepspeed/zero2_ws2) read into
// loom equals the state dict DeepSpeed's engine held (reference_full_state_dict.pt) bitwise and
// in the same order; broken copies of it are clear errors.
#include "sharding/deepspeed_checkpoint/zero_to_fp32.h"

#include <ATen/ATen.h>
#include <torch/nn/module.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>

#include "base/file_util.h"
#include "base/status_matchers.h"
#include "checkpoint/torch_pickle.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::sharding {

using ::loom::checkpoint::NamedTensors;
using ::loom::checkpoint::LoadPickle;
using ::loom::checkpoint::LoadStateDictResult;
using ::loom::checkpoint::LoadTorchStateDict;
using ::loom::checkpoint::SavePickle;
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

// A module tree whose parameter names are the given ones (a submodule per dotted component),
// zero-filled, plus one parameter "extra" the checkpoint does not have.
struct TreeModule : torch::nn::Module {
  std::map<std::string, std::shared_ptr<TreeModule>> children;
  void Add(const std::string& name, const at::Tensor& like) {
    const size_t dot = name.find('.');
    if (dot == std::string::npos) {
      register_parameter(name, at::zeros_like(like));
      return;
    }
    const std::string head = name.substr(0, dot);
    auto& child = children[head];
    if (!child) child = register_module(head, std::make_shared<TreeModule>());
    child->Add(name.substr(dot + 1), like);
  }
};

// DeepSpeed's Python API: the state dict, and a model loaded from it non-strictly.
TEST(DeepSpeedZeroTest, LoadStateDictFromZeroCheckpoint) {
  ASSERT_OK_AND_ASSIGN(NamedTensors want,
                       LoadTorchStateDict(Zero2() + "/reference_full_state_dict.pt"));
  ASSERT_OK_AND_ASSIGN(NamedTensors got, GetFp32StateDictFromZeroCheckpoint(Zero2()));
  ASSERT_EQ(got.size(), want.size());
  TreeModule model;
  for (const auto& [name, t] : want) model.Add(name, t);
  model.register_parameter("extra", at::full({2}, 3.0f));
  ASSERT_OK_AND_ASSIGN(LoadStateDictResult result, LoadStateDictFromZeroCheckpoint(model, Zero2()));
  EXPECT_EQ(result.missing_keys, std::vector<std::string>{"extra"});
  EXPECT_TRUE(result.unexpected_keys.empty());
  const auto params = model.named_parameters();
  for (const auto& [name, t] : want) {
    const at::Tensor* p = params.find(name);
    ASSERT_NE(p, nullptr) << name;
    EXPECT_TRUE(at::equal(*p, t)) << name;
  }
  EXPECT_TRUE(at::equal(*params.find("extra"), at::full({2}, 3.0f)));
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
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("Expected 2 of '*_optim_states.pt' under '" + dir +
                                 "/global_step3' but found 1 files. Possibly due to an overwrite "
                                 "of an old checkpoint, or a checkpoint didn't get saved by one "
                                 "or more processes.")));
  // No latest and no tag.
  dir = CopyOfZero2("no_latest");
  std::filesystem::remove(dir + "/latest");
  EXPECT_THAT(ConsolidateZeroCheckpoint(dir).status(),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("Unable to find 'latest' file at " + dir + "/latest")));
  // An output_dir instead of its checkpoint folder: the message names the folder to pass.
  const std::string output_dir = std::string(std::getenv("TEST_TMPDIR")) + "/output_dir";
  for (const char* name : {"checkpoint-5", "checkpoint-20", "checkpoint-100-old"}) {
    std::filesystem::create_directories(output_dir + "/" + name);
    ASSERT_OK(base::WriteFileAtomically(output_dir + "/" + name + "/latest", "global_step5"));
  }
  std::filesystem::create_directories(output_dir + "/checkpoint-30");  // no latest: not ZeRO
  EXPECT_THAT(ConsolidateZeroCheckpoint(output_dir).status(),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("looks like a training output_dir; pass one of its checkpoint "
                                 "folders instead, e.g. " + output_dir + "/checkpoint-20")));
  // A tag that does not exist.
  EXPECT_THAT(ConsolidateZeroCheckpoint(Zero2(), "global_step9").status(),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("Directory '" + Zero2() + "/global_step9' doesn't exist")));
  // No optimizer file at all.
  dir = CopyOfZero2("no_optim");
  for (int r : {0, 1}) {
    std::filesystem::remove(dir + "/global_step3/zero_pp_rank_" + std::to_string(r) +
                            "_mp_rank_00_optim_states.pt");
  }
  EXPECT_THAT(ConsolidateZeroCheckpoint(dir).status(),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("can't find '*_optim_states.pt' files in directory '" + dir +
                                 "/global_step3'")));
  // Partitions that param_shapes do not use up: zero_to_fp32's "consumed ... numels out of ..."
  // (a hand-made 2-rank ZeRO-2 checkpoint: one parameter of 4 elements, partitions of 4 each,
  // so 4 of 8 elements are consumed).
  dir = std::string(std::getenv("TEST_TMPDIR")) + "/consumed";
  std::filesystem::create_directories(dir + "/global_step1");
  ASSERT_OK(base::WriteFileAtomically(dir + "/latest", "global_step1"));
  const auto str_dict = [] {
    return c10::impl::GenericDict(c10::StringType::get(), c10::AnyType::get());
  };
  c10::impl::GenericDict shapes = str_dict();
  shapes.insert("w", c10::ivalue::Tuple::create({c10::IValue(int64_t{4})}));
  c10::impl::GenericList param_shapes(c10::AnyType::get());
  param_shapes.push_back(shapes);
  c10::impl::GenericDict model = str_dict();
  model.insert("module", str_dict());
  model.insert("buffer_names", c10::impl::GenericList(c10::AnyType::get()));
  model.insert("param_shapes", param_shapes);
  model.insert("shared_params", str_dict());
  model.insert("frozen_param_shapes", c10::IValue());
  model.insert("frozen_param_fragments", c10::IValue());
  model.insert("ds_version", std::string("0.13.5"));
  ASSERT_OK(SavePickle(dir + "/global_step1/mp_rank_00_model_states.pt", model));
  for (int r : {0, 1}) {
    c10::impl::GenericList groups(c10::AnyType::get());
    groups.push_back(at::ones({4}));
    c10::impl::GenericDict osd = str_dict();
    osd.insert("zero_stage", int64_t{2});
    osd.insert("partition_count", int64_t{2});
    osd.insert("single_partition_of_fp32_groups", groups);
    c10::impl::GenericDict top = str_dict();
    top.insert("optimizer_state_dict", osd);
    ASSERT_OK(SavePickle(
        dir + "/global_step1/zero_pp_rank_" + std::to_string(r) + "_mp_rank_00_optim_states.pt",
        top));
  }
  EXPECT_THAT(ConsolidateZeroCheckpoint(dir).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("consumed 4 numels out of 8 - something is wrong")));
}

}  // namespace
}  // namespace loom::sharding
