// write_frozen_zero_checkpoint OUT_DIR STAGE: a 2-rank ZeRO checkpoint (STAGE 2 or 3) of a tiny
// model with a frozen parameter, written by zero_checkpoint.h's writers as a ZeRO strategy
// writes one (fp32, global step 1), plus the state dict DeepSpeed 0.13.5's zero_to_fp32.py must
// rebuild from it — for tests/sharding's deepspeed_zero_to_fp32_frozen_test, since no run_glue
// test freezes parameters.
//
// The model: buffer "norm.running_mean" [3], frozen "embed.weight" [4, 3] (requires_grad false:
// frozen_param_shapes / frozen_param_fragments) and one trainable group "layer.weight" [3, 5],
// "layer.bias" [3] (18 elements; stage 2 pads the flat group to 20, 10 per rank; stage 3 gives
// each rank ceil(numel / 2) elements of each parameter). Writes OUT_DIR/latest,
// OUT_DIR/global_step1/*.pt and OUT_DIR/expected.bin: zero_to_fp32.py's order (buffers, frozen
// parameters, then param_shapes order).
//
// Example: write_frozen_zero_checkpoint /tmp/z3 3 && python zero_to_fp32.py /tmp/z3 out.bin
#include <ATen/ATen.h>

#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "base/status_macros.h"
#include "checkpoint/named_tensors.h"
#include "checkpoint/torch_pickle.h"
#include "nlohmann/json.hpp"
#include "sharding/deepspeed_checkpoint/zero_checkpoint.h"
#include "sharding/deepspeed_checkpoint/zero_files.h"

namespace loom::sharding {
namespace {

constexpr int kWorld = 2;
constexpr int64_t kStep = 1;

struct TinyModel {
  at::Tensor running_mean = at::arange(3, at::kFloat) * 0.5 - 0.25;
  at::Tensor embed = at::arange(12, at::kFloat).reshape({4, 3}) * 0.125 - 0.75;
  at::Tensor weight = at::arange(15, at::kFloat).reshape({3, 5}) * -0.0625 + 0.3;
  at::Tensor bias = at::arange(3, at::kFloat) * 0.01 + 1.0;
};

ZeroGroupLayout Trainable() {
  ZeroGroupLayout g;
  g.names = {"layer.weight", "layer.bias"};
  g.shapes = {{3, 5}, {3}};
  g.numel = 18;
  return g;
}

// This rank's fp32 partition of the trainable group, in DeepSpeed's layout for `stage`.
at::Tensor Partition(const TinyModel& m, int stage, int rank) {
  const at::Tensor w = m.weight.reshape({-1});
  const at::Tensor b = m.bias.reshape({-1});
  if (stage == 3) return at::cat({Zero3Piece(w, rank, kWorld), Zero3Piece(b, rank, kWorld)});
  const int64_t padded = ZeroAlignedNumel(18, kWorld);
  const at::Tensor flat = at::cat({w, b, at::zeros({padded - 18})});
  const int64_t part = padded / kWorld;
  return flat.narrow(0, rank * part, part).clone();
}

c10::IValue EmptyOptimizerState() {
  c10::impl::GenericDict d(c10::StringType::get(), c10::AnyType::get());
  d.insert("state", c10::impl::GenericDict(c10::IntType::get(), c10::AnyType::get()));
  d.insert("param_groups", c10::impl::GenericList(c10::AnyType::get()));
  return d;
}

absl::Status WriteRank(const std::string& tag_dir, const TinyModel& m, int stage, int rank) {
  const nlohmann::ordered_json ds_config = {{"zero_optimization", {{"stage", stage}}}};
  const ZeroFilesInfo info = MakeZeroFilesInfo(stage, rank, kWorld, kStep, /*global_samples=*/8,
                                               c10::IValue(), ds_config, /*clip_grad=*/0.0);
  const std::vector<ZeroGroupLayout> groups = {Trainable()};
  if (stage == 3 || rank == 0) {
    // Stage 3: DeepSpeed's placeholders for the partitioned parameters.
    const auto param = [&](const at::Tensor& t) { return stage == 3 ? at::empty({0}) : t; };
    const checkpoint::NamedTensors module = {{"embed.weight", param(m.embed)},
                                             {"layer.weight", param(m.weight)},
                                             {"layer.bias", param(m.bias)},
                                             {"norm.running_mean", m.running_mean}};
    RETURN_IF_ERROR(WriteZeroModelStates(tag_dir + "/" + ZeroModelStatesFile(stage, rank), module,
                                         {"norm.running_mean"}, groups, {{"embed.weight", m.embed}},
                                         info));
  }
  return WriteZeroOptimStates(tag_dir + "/" + ZeroOptimStatesFile(rank, false),
                              {Partition(m, stage, rank)}, groups, EmptyOptimizerState(), info);
}

absl::Status Run(const std::string& out, int stage) {
  const TinyModel m;
  ASSIGN_OR_RETURN(const std::string tag_dir, MakeZeroTagFolder(out, kStep));
  for (int rank = 0; rank < kWorld; ++rank) RETURN_IF_ERROR(WriteRank(tag_dir, m, stage, rank));
  RETURN_IF_ERROR(WriteZeroLatest(out, kStep));
  return checkpoint::SaveTorchStateDict(out + "/expected.bin",
                                        {{"norm.running_mean", m.running_mean},
                                         {"embed.weight", m.embed},
                                         {"layer.weight", m.weight},
                                         {"layer.bias", m.bias}});
}

}  // namespace
}  // namespace loom::sharding

int main(int argc, char** argv) {
  const int stage = argc == 3 ? std::atoi(argv[2]) : 0;
  if (stage != 2 && stage != 3) {
    std::cerr << "usage: write_frozen_zero_checkpoint OUT_DIR STAGE (2 or 3)\n";
    return 2;
  }
  const absl::Status status = loom::sharding::Run(argv[1], stage);
  if (!status.ok()) {
    std::cerr << status << "\n";
    return 1;
  }
  return 0;
}
