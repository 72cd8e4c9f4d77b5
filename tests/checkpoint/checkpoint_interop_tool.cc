// Drives python_interop_test.sh: the C++ half of the checkpoint file round trip with Python.
//
//   checkpoint_interop_tool write DIR
//       builds the tiny model (see below) with values v(i, k) = k * 0.01 + i * 0.5 - 0.3 for
//       element k of the i-th state-dict tensor, trains it 3 AdamW steps (HF's two groups,
//       linear warmup schedule 2/10, gradient g(i, k, t) = sin(k * (i + 1) + t)), then writes
//       DIR/model.safetensors, DIR/pytorch_model.bin, DIR/sharded/ (max_shard_size 100 bytes),
//       DIR/optimizer.pt, DIR/scheduler.pt, DIR/dtypes.safetensors (every dtype, special bit
//       patterns) and DIR/after_step4.safetensors (the parameters after one more step).
//   checkpoint_interop_tool read DIR
//       loads the files check_checkpoint.py wrote: py_model.safetensors (values
//       w(i, k) = k * 0.02 - i), py_plain.bin and py_state_dict.bin (Python's OrderedDict) into
//       the model and checks every value; checks the exact errors for
//       py_bad_shape.safetensors, py_missing.safetensors and py_legacy.bin; resumes the run
//       from Python's py_optimizer.pt and py_scheduler.pt (written after 3 steps) and expects
//       the next step to equal its own run's.
// Exit status 0 on success; otherwise a message on stderr.
#include <ATen/ATen.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/optim/adamw.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/file_util.h"
#include "base/status_macros.h"
#include "checkpoint/module_state.h"
#include "checkpoint/optimizer_state.h"
#include "checkpoint/safetensors.h"
#include "checkpoint/safetensors_sharded.h"
#include "checkpoint/scheduler_state.h"
#include "checkpoint/torch_pickle.h"
#include "logging/process_logging.h"
#include "optim/lr_lambdas.h"
#include "optim/lr_scheduler.h"
#include "optim/torch_adamw.h"

namespace loom::checkpoint::testing {
namespace {

// Python twin (check_checkpoint.py): Tiny with embed = nn.Embedding(10, 4), proj =
// nn.Linear(4, 3), norm = nn.LayerNorm(3) and a buffer position_ids = arange(5).
struct TinyImpl : torch::nn::Module {
  TinyImpl() {
    position_ids = register_buffer("position_ids", at::arange(5, at::kLong));
    embed = register_module("embed", torch::nn::Embedding(10, 4));
    proj = register_module("proj", torch::nn::Linear(4, 3));
    norm = register_module("norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({3})));
  }
  at::Tensor position_ids;
  torch::nn::Embedding embed{nullptr};
  torch::nn::Linear proj{nullptr};
  torch::nn::LayerNorm norm{nullptr};
};
TORCH_MODULE(Tiny);

// Element k of the i-th floating-point tensor: k * scale + i * step + offset (float32 ops).
at::Tensor Pattern(const at::Tensor& like, int64_t i, double scale, double step, double offset) {
  return (at::arange(like.numel(), at::kFloat) * scale + (i * step + offset)).reshape(like.sizes());
}

void Fill(Tiny& model, double scale, double step, double offset) {
  at::NoGradGuard no_grad;
  int64_t i = 0;
  for (auto& [name, t] : ModuleStateDict(*model)) {
    if (t.is_floating_point()) t.copy_(Pattern(t, i, scale, step, offset));
    ++i;
  }
}

std::vector<at::Tensor> Params(Tiny& model) {
  return {model->embed->weight, model->proj->weight, model->proj->bias, model->norm->weight,
          model->norm->bias};
}

void SetGrads(Tiny& model, int t) {
  const std::vector<at::Tensor> params = Params(model);
  for (size_t i = 0; i < params.size(); ++i) {
    params[i].mutable_grad() =
        at::sin(at::arange(params[i].numel(), at::kFloat) * static_cast<double>(i + 1) + t)
            .reshape(params[i].sizes());
  }
}

// Model, AdamW over HF's decay / no-decay groups, and the linear warmup schedule.
struct Run {
  Tiny model;
  std::unique_ptr<optim::TorchAdamW> optimizer;
  std::unique_ptr<optim::LambdaLrScheduler> scheduler;

  Run() {
    Fill(model, 0.01, 0.5, -0.3);
    const std::vector<at::Tensor> p = Params(model);
    std::vector<torch::optim::OptimizerParamGroup> groups;
    groups.emplace_back(std::vector<at::Tensor>{p[0], p[1]},
                        std::make_unique<torch::optim::AdamWOptions>(
                            torch::optim::AdamWOptions(1e-2).weight_decay(0.1)));
    groups.emplace_back(std::vector<at::Tensor>{p[2], p[3], p[4]},
                        std::make_unique<torch::optim::AdamWOptions>(
                            torch::optim::AdamWOptions(1e-2).weight_decay(0.0)));
    optimizer =
        std::make_unique<optim::TorchAdamW>(std::move(groups), torch::optim::AdamWOptions(1e-2));
    scheduler = std::make_unique<optim::LambdaLrScheduler>(
        optimizer.get(), [](int64_t s) { return optim::LinearLambda(s, 2, 10); });
  }
  void Step(int t) {
    SetGrads(model, t);
    optimizer->step();
    scheduler->Step();
  }
};

template <typename T>
at::Tensor Bits(const std::vector<T>& bits, at::ScalarType storage, at::ScalarType dtype) {
  at::Tensor raw = at::empty({static_cast<int64_t>(bits.size())}, at::TensorOptions(storage));
  std::memcpy(raw.data_ptr(), bits.data(), bits.size() * sizeof(T));
  return raw.view(dtype);
}

// check_checkpoint.py lists the same patterns.
NamedTensors EveryDtype() {
  return {
      {"f64", Bits<uint64_t>({0x7ff8000000000001, 0xfff0000000000001, 0x8000000000000000, 1},
                             at::kLong, at::kDouble)},
      {"f32", Bits<uint32_t>({0x7fc00001, 0xffbfffff, 0x7f800001, 0x80000000, 1, 0x3f800000},
                             at::kInt, at::kFloat)
                  .reshape({2, 3})},
      {"f16", Bits<uint16_t>({0x7e01, 0xfc01, 0x8000, 0x0001}, at::kShort, at::kHalf)},
      {"bf16", Bits<uint16_t>({0x7fc1, 0xff81, 0x8000, 0x0001, 0x3f80}, at::kShort, at::kBFloat16)},
      {"i64", Bits<int64_t>({INT64_MIN, -1, INT64_MAX}, at::kLong, at::kLong)},
      {"i32", Bits<int32_t>({INT32_MIN, -1, INT32_MAX}, at::kInt, at::kInt)},
      {"i16", Bits<int16_t>({INT16_MIN, -1, INT16_MAX}, at::kShort, at::kShort)},
      {"i8", Bits<int8_t>({-128, -1, 127}, at::kChar, at::kChar)},
      {"u8", Bits<uint8_t>({0, 128, 255}, at::kByte, at::kByte)},
      {"bool", at::tensor({1, 0, 1}, at::kByte).to(at::kBool)},
      {"scalar", at::scalar_tensor(2.5, at::kFloat)},
      {"empty", at::empty({0, 3}, at::kFloat)},
  };
}

absl::Status Write(const std::string& dir) {
  Run run;
  for (int t = 0; t < 3; ++t) run.Step(t);
  const NamedTensors sd = ModuleStateDict(*run.model);
  RETURN_IF_ERROR(SaveSafetensors(dir + "/model.safetensors", sd, kHfSafetensorsMetadata));
  RETURN_IF_ERROR(SaveTorchStateDict(dir + "/pytorch_model.bin", sd));
  RETURN_IF_ERROR(base::MakeDirs(dir + "/sharded"));
  SaveShardedOptions sharded;
  sharded.max_shard_size = 100;
  RETURN_IF_ERROR(SaveShardedSafetensors(dir + "/sharded", sd, sharded).status());
  RETURN_IF_ERROR(SaveOptimizerState(dir + "/optimizer.pt", *run.optimizer));
  RETURN_IF_ERROR(SaveSchedulerState(dir + "/scheduler.pt", *run.scheduler));
  RETURN_IF_ERROR(SaveSafetensors(dir + "/dtypes.safetensors", EveryDtype(),
                                  {{"format", "pt"}, {"note", "caf\xc3\xa9 \"quoted\""}}));
  run.Step(3);
  return SaveSafetensors(dir + "/after_step4.safetensors", ModuleStateDict(*run.model));
}

absl::Status ExpectValues(Tiny& model, const std::string& source) {
  int64_t i = 0;
  for (const auto& [name, t] : ModuleStateDict(*model)) {
    at::Tensor expected =
        t.is_floating_point() ? Pattern(t, i, 0.02, -1.0, 0.0) : at::arange(5, at::kLong) + 1;
    if (!at::equal(t, expected)) {
      return absl::InternalError(absl::StrCat(source, ": ", name, " differs from Python's"));
    }
    ++i;
  }
  return absl::OkStatus();
}

absl::Status ExpectError(const absl::Status& status, const std::string& expected,
                         bool exact = true) {
  const bool ok = !status.ok() && (exact ? std::string(status.message()) == expected
                                         : absl::StrContains(status.message(), expected));
  if (ok) return absl::OkStatus();
  return absl::InternalError(
      absl::StrCat("expected the error \"", expected, "\", got: ", status.ToString()));
}

absl::Status Read(const std::string& dir) {
  {
    Tiny model;
    ASSIGN_OR_RETURN(SafetensorsFile file, LoadSafetensors(dir + "/py_model.safetensors"));
    if (file.metadata != SafetensorsMetadata{{"format", "pt"}, {"writer", "numpy"}}) {
      return absl::InternalError("py_model.safetensors: unexpected metadata");
    }
    RETURN_IF_ERROR(LoadStateDict(*model, file.tensors).status());
    RETURN_IF_ERROR(ExpectValues(model, "py_model.safetensors"));
  }
  for (const char* file : {"py_plain.bin", "py_state_dict.bin"}) {
    Tiny model;
    ASSIGN_OR_RETURN(NamedTensors sd, LoadTorchStateDict(dir + "/" + file));
    RETURN_IF_ERROR(LoadStateDict(*model, sd).status());
    RETURN_IF_ERROR(ExpectValues(model, file));
  }
  {
    Tiny model;
    ASSIGN_OR_RETURN(SafetensorsFile bad, LoadSafetensors(dir + "/py_bad_shape.safetensors"));
    RETURN_IF_ERROR(ExpectError(
        LoadStateDict(*model, bad.tensors).status(),
        "Error(s) in loading state_dict for Tiny:\n\tsize mismatch for proj.weight: copying a "
        "param with shape torch.Size([4, 3]) from checkpoint, the shape in current model is "
        "torch.Size([3, 4])."));
    ASSIGN_OR_RETURN(SafetensorsFile missing, LoadSafetensors(dir + "/py_missing.safetensors"));
    RETURN_IF_ERROR(ExpectError(LoadStateDict(*model, missing.tensors).status(),
                                "Error(s) in loading state_dict for Tiny:\n\tMissing key(s) in "
                                "state_dict: \"norm.weight\", \"norm.bias\". \n\tUnexpected "
                                "key(s) in state_dict: \"lm_head.weight\". "));
  }
  RETURN_IF_ERROR(ExpectError(LoadTorchStateDict(dir + "/py_legacy.bin").status(),
                              "the legacy torch.save format", /*exact=*/false));

  // Resume from Python's optimizer and scheduler state: the next step matches loom's own run.
  Run own;
  for (int t = 0; t < 3; ++t) own.Step(t);
  Run resumed;
  {
    at::NoGradGuard no_grad;
    const NamedTensors from = ModuleStateDict(*own.model);
    NamedTensors to = ModuleStateDict(*resumed.model);
    for (size_t i = 0; i < to.size(); ++i) to[i].second.copy_(from[i].second);
  }
  RETURN_IF_ERROR(LoadOptimizerState(dir + "/py_optimizer.pt", *resumed.optimizer));
  RETURN_IF_ERROR(LoadSchedulerState(dir + "/py_scheduler.pt", *resumed.scheduler));
  if (resumed.scheduler->last_epoch() != 3 ||
      resumed.scheduler->LastLr() != own.scheduler->LastLr()) {
    return absl::InternalError("py_scheduler.pt: last_epoch or last lr differ from loom's run");
  }
  own.Step(3);
  resumed.Step(3);
  const NamedTensors a = ModuleStateDict(*own.model);
  const NamedTensors b = ModuleStateDict(*resumed.model);
  for (size_t i = 0; i < a.size(); ++i) {
    if (!at::equal(a[i].second, b[i].second)) {
      return absl::InternalError(absl::StrCat(
          "after resuming from Python's optimizer.pt, step 4 differs for ", a[i].first));
    }
  }
  return absl::OkStatus();
}

}  // namespace
}  // namespace loom::checkpoint::testing

int main(int argc, char** argv) {
  loom::logging::InitProcessLogging(argv[0]);
  if (argc != 3 || (std::string(argv[1]) != "write" && std::string(argv[1]) != "read")) {
    std::fprintf(stderr, "usage: %s write|read DIR\n", argv[0]);
    return 2;
  }
  const absl::Status status = std::string(argv[1]) == "write"
                                  ? loom::checkpoint::testing::Write(argv[2])
                                  : loom::checkpoint::testing::Read(argv[2]);
  if (!status.ok()) {
    std::fprintf(stderr, "checkpoint_interop_tool %s: %s\n", argv[1], status.ToString().c_str());
    return 1;
  }
  return 0;
}
