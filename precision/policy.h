// The precision policy of a run, resolved once from TrainingArguments and, with --deepspeed,
// the DeepSpeed config (TrainingArguments bf16/fp16 fields, DeepSpeed 0.13.5 `fp16` / `bf16`
// sections), for the
// machine the run is on.
//
// Modes:
//   kFp32         fp32 weights and math.
//   kAutocast     fp32 weights, forward under LibTorch autocast in bf16/fp16 (HF's amp path:
//                 --bf16 -> cpu_amp on CPU or CUDA amp; --fp16 -> CUDA amp with a GradScaler).
//   kHalfWeights  weights in bf16/fp16 with fp32 master weights (DeepSpeed's fp16/bf16
//                 sections; precision/master_weights.h), fp16 with DeepSpeed's loss scaler.
//
// Rules (errors are InvalidArgument naming both sides):
//   - --fp16 / --fp16_full_eval need CUDA: on CPU they are refused with HF's message and the
//     advice to use --bf16 (HF 4.38 refuses fp16 on CPU too). --half_precision_backend cpu_amp
//     with a CUDA device is refused (it would autocast CPU ops only).
//   - --bf16 / --bf16_full_eval on a GPU below compute capability 8 is refused (HF's message).
//   - On a CPU without native bf16 (precision/cpu_features.h) --bf16 still trains in bf16, as HF
//     allows, with one warning that bf16 is emulated there and much slower than fp32. loom never
//     picks bf16 by itself: a DeepSpeed "auto" bf16 follows the flags.
//   - With a DeepSpeed config (already through TrainerConfigProcess, so "auto" is resolved):
//     amp.enabled -> refused (apex); fp16.enabled -> kHalfWeights fp16 with
//     FromDeepSpeedFp16's scaler (refused on CPU); bf16.enabled -> kHalfWeights bf16; else fp32.
//   - --bf16_full_eval / --fp16_full_eval: evaluation outside training casts the model to that
//     dtype (HF's evaluation_loop), full_eval_dtype.
//   - --tf32: on CUDA sets LibTorch's TF32 flags (ApplyTf32); refused below capability 8 when
//     true (HF's message); on CPU a warning that it changes nothing.
//
// Example:
//   ASSIGN_OR_RETURN(ResolvedPrecision p,
//                    ResolvePrecisionPolicy(args, nullptr, CurrentPrecisionEnvironment(device)));
//   for (const auto& w : p.warnings) LOG(WARNING) << w;
//   LOG(INFO) << p.policy.Describe();
#ifndef LOOM_PRECISION_POLICY_H_
#define LOOM_PRECISION_POLICY_H_

#include <ATen/ATen.h>

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "args/deepspeed_config.h"
#include "args/training_args.pb.h"
#include "precision/autocast.h"
#include "precision/cpu_features.h"
#include "precision/grad_scaler.h"
#include "precision/loss_scaler.h"

namespace loom::precision {

enum class PrecisionMode { kFp32, kAutocast, kHalfWeights };

struct PrecisionPolicy {
  PrecisionMode mode = PrecisionMode::kFp32;
  at::ScalarType compute_dtype = at::kFloat;  // bf16 / fp16 in the 16-bit modes
  std::optional<AutocastSpec> autocast;       // kAutocast only
  std::optional<GradScalerOptions> grad_scaler;     // --fp16 amp
  std::optional<LossScalerOptions> deepspeed_scaler;  // kHalfWeights
  std::optional<at::ScalarType> full_eval_dtype;
  std::optional<bool> tf32;  // set only when it applies (CUDA)
  std::string backend = "none";  // "cpu_amp", "cuda_amp", "deepspeed", "none"

  // Whether training computes in 16 bits (run_glue's "16-bits training").
  bool SixteenBit() const { return mode != PrecisionMode::kFp32; }
  // One line: "precision: bf16 autocast (cpu_amp), fp32 weights, no loss scaling".
  std::string Describe() const;
};

struct ResolvedPrecision {
  PrecisionPolicy policy;
  std::vector<std::string> warnings;
};

// Where the run trains, and what that hardware can do.
struct PrecisionEnvironment {
  c10::DeviceType device = c10::DeviceType::CPU;
  int cuda_major = 0;  // compute capability of the training GPU
  CpuBf16 cpu;
};
PrecisionEnvironment CurrentPrecisionEnvironment(const at::Device& training_device);

// `deepspeed` may be null (no --deepspeed).
absl::StatusOr<ResolvedPrecision> ResolvePrecisionPolicy(
    const args::TrainingArguments& args, const args::TrainerDeepSpeedConfig* deepspeed,
    const PrecisionEnvironment& env);

// Sets LibTorch's TF32 switches (cuBLAS and cuDNN) when policy.tf32 is set.
void ApplyTf32(const PrecisionPolicy& policy);

}  // namespace loom::precision

#endif  // LOOM_PRECISION_POLICY_H_
