#include "precision/policy.h"

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

#ifdef LOOM_HAS_CUDA
#include <ATen/cuda/CUDAContext.h>
#endif

namespace loom::precision {
namespace {

absl::Status Invalid(const std::string& msg) { return absl::InvalidArgumentError(msg); }

const char* DtypeName(at::ScalarType t) {
  switch (t) {
    case at::kBFloat16:
      return "bf16";
    case at::kHalf:
      return "fp16";
    default:
      return "fp32";
  }
}

std::string DeviceName(const PrecisionEnvironment& env) {
  return env.device == c10::DeviceType::CUDA ? "cuda" : "cpu";
}

// HF __post_init__ (4.38): fp16 needs a CUDA device.
absl::Status CheckFp16Device(const args::TrainingArguments& a, const PrecisionEnvironment& env) {
  if (env.device == c10::DeviceType::CUDA || !(a.fp16() || a.fp16_full_eval())) {
    return absl::OkStatus();
  }
  return Invalid(absl::StrCat(
      a.fp16() ? "--fp16" : "--fp16_full_eval",
      ": FP16 Mixed precision training with AMP or APEX (`--fp16`) and FP16 half precision "
      "evaluation (`--fp16_full_eval`) can only be used on CUDA or NPU devices or certain XPU "
      "devices (with IPEX). This process trains on cpu (a CPU-only LibTorch, or --use_cpu); "
      "use --bf16 (or --bf16_full_eval) for 16-bit training on CPU.",
      a.deepspeed().empty()
          ? ""
          : " With --deepspeed, replace the config's \"fp16\" section with \"bf16\": "
            "{\"enabled\": \"auto\"} too (ZeRO stages 0-2), or set \"fp16\": {\"enabled\": "
            "false} and train in fp32."));
}

absl::Status CheckBf16Gpu(const args::TrainingArguments& a, const PrecisionEnvironment& env) {
  if (env.device != c10::DeviceType::CUDA || env.cuda_major >= 8 ||
      !(a.bf16() || a.bf16_full_eval())) {
    return absl::OkStatus();
  }
  return Invalid(absl::StrCat(a.bf16() ? "--bf16" : "--bf16_full_eval",
                              ": Your setup doesn't support bf16/gpu. You need torch>=1.10, using "
                              "Ampere GPU with cuda>=11.0 (this GPU has compute capability ",
                              env.cuda_major, ".x)"));
}

std::string SlowBf16Warning(const char* flag, const CpuBf16& cpu) {
  return absl::StrCat(flag, ": this CPU has no native bf16 (", cpu.Describe(),
                      "). bf16 math is emulated here and much slower than fp32; loom trains in "
                      "bf16 as asked (HF allows it). Drop ",
                      flag, " to train in fp32.");
}

bool IsCpu(const PrecisionEnvironment& env) { return env.device == c10::DeviceType::CPU; }

bool NativeBf16(const PrecisionEnvironment& env) { return env.cpu.support == Bf16Support::kNative; }

// The flag combinations refused before anything is resolved.
absl::Status CheckFlags(const args::TrainingArguments& a, const PrecisionEnvironment& env) {
  if (a.fp16() && a.bf16()) {
    return Invalid("At most one of --fp16 and --bf16 can be True, but not both");
  }
  if (a.half_precision_backend() == "apex" && (a.fp16() || a.bf16())) {
    return Invalid(absl::StrCat(a.fp16() ? "--fp16" : "--bf16",
                                " with --half_precision_backend apex: NVIDIA Apex is Python-only "
                                "and not supported by loom; use --half_precision_backend auto"));
  }
  RETURN_IF_ERROR(CheckFp16Device(a, env));
  return CheckBf16Gpu(a, env);
}

// Under --deepspeed its fp16 / bf16 sections decide: half weights with fp32 masters.
absl::Status ResolveDeepSpeedPrecision(const args::DeepSpeedConfig& ds,
                                       const PrecisionEnvironment& env, ResolvedPrecision* out) {
  PrecisionPolicy& p = out->policy;
  const auto enabled = [](const args::AutoOr<bool>& v) { return !v.is_auto() && v.value(); };
  if (ds.amp.present && enabled(ds.amp.enabled)) {
    return Invalid(
        "--deepspeed: amp.enabled is true, but NVIDIA Apex AMP is Python-only and not "
        "supported by loom; use the fp16 or bf16 section instead");
  }
  const bool fp16 = ds.fp16.present && enabled(ds.fp16.enabled);
  const bool bf16 = ds.bf16.present && enabled(ds.bf16.enabled);
  if (fp16 && bf16) {
    return Invalid("--deepspeed: fp16.enabled and bf16.enabled are both true; enable one");
  }
  if (fp16 && IsCpu(env)) {
    return Invalid(
        "--deepspeed: fp16.enabled is true, but this process trains on cpu: fp16 training "
        "needs CUDA. Use the bf16 section (and --bf16) on CPU.");
  }
  if (!fp16 && !bf16) return absl::OkStatus();
  p.mode = PrecisionMode::kHalfWeights;
  p.compute_dtype = fp16 ? at::kHalf : at::kBFloat16;
  p.backend = "deepspeed";
  const nlohmann::ordered_json raw_fp16 =
      ds.raw.contains("fp16") ? ds.raw["fp16"] : nlohmann::ordered_json();
  p.deepspeed_scaler = FromDeepSpeedFp16(ds.fp16, raw_fp16, fp16);
  if (bf16 && IsCpu(env) && !NativeBf16(env)) {
    out->warnings.push_back(SlowBf16Warning("--deepspeed bf16.enabled", env.cpu));
  }
  return absl::OkStatus();
}

// --bf16 / --fp16 without DeepSpeed: autocast over fp32 weights (a GradScaler for fp16).
absl::Status ResolveAutocast(const args::TrainingArguments& a, const PrecisionEnvironment& env,
                             ResolvedPrecision* out) {
  PrecisionPolicy& p = out->policy;
  const bool cpu = IsCpu(env);
  if (a.half_precision_backend() == "cpu_amp" && !cpu) {
    return Invalid(absl::StrCat(
        a.bf16() ? "--bf16" : "--fp16",
        " with --half_precision_backend cpu_amp: cpu_amp autocasts CPU operations, but this "
        "process trains on ",
        DeviceName(env), "; use --half_precision_backend auto"));
  }
  p.mode = PrecisionMode::kAutocast;
  p.compute_dtype = a.bf16() ? at::kBFloat16 : at::kHalf;
  absl::StatusOr<AutocastSpec> spec = MakeAutocastSpec(env.device, p.compute_dtype);
  if (!spec.ok()) return spec.status();
  p.autocast = *spec;
  p.backend = cpu ? "cpu_amp" : "cuda_amp";
  if (a.fp16()) p.grad_scaler = GradScalerOptions();
  if (a.bf16() && cpu && !NativeBf16(env)) {
    out->warnings.push_back(SlowBf16Warning("--bf16", env.cpu));
  }
  return absl::OkStatus();
}

absl::Status ResolveFullEval(const args::TrainingArguments& a, const PrecisionEnvironment& env,
                             ResolvedPrecision* out) {
  if (a.fp16_full_eval() && a.bf16_full_eval()) {
    return Invalid(
        "At most one of --fp16_full_eval and --bf16_full_eval can be True, but not both");
  }
  if (a.fp16_full_eval()) out->policy.full_eval_dtype = at::kHalf;
  if (a.bf16_full_eval()) {
    out->policy.full_eval_dtype = at::kBFloat16;
    if (IsCpu(env) && !NativeBf16(env) && !a.bf16()) {
      out->warnings.push_back(SlowBf16Warning("--bf16_full_eval", env.cpu));
    }
  }
  return absl::OkStatus();
}

absl::Status ResolveTf32(const args::TrainingArguments& a, const PrecisionEnvironment& env,
                         ResolvedPrecision* out) {
  if (!a.has_tf32()) return absl::OkStatus();
  if (IsCpu(env)) {
    out->warnings.push_back(
        "--tf32 only changes CUDA matmuls and convolutions on Ampere or newer GPUs; this "
        "process trains on cpu, so it changes nothing here");
  } else if (a.tf32() && env.cuda_major < 8) {
    return Invalid("--tf32 requires Ampere or a newer GPU arch, cuda>=11 and torch>=1.7");
  } else {
    out->policy.tf32 = a.tf32();
  }
  return absl::OkStatus();
}

}  // namespace

std::string PrecisionPolicy::Describe() const {
  std::string out = "precision: ";
  switch (mode) {
    case PrecisionMode::kFp32:
      absl::StrAppend(&out, "fp32");
      break;
    case PrecisionMode::kAutocast:
      absl::StrAppend(&out, DtypeName(compute_dtype), " autocast (", backend, "), fp32 weights");
      break;
    case PrecisionMode::kHalfWeights:
      absl::StrAppend(&out, DtypeName(compute_dtype), " weights with fp32 master weights (",
                      backend, ")");
      break;
  }
  if (grad_scaler) {
    absl::StrAppend(&out, ", dynamic loss scaling (GradScaler, init ", grad_scaler->init_scale,
                    ")");
  } else if (deepspeed_scaler && deepspeed_scaler->half) {
    absl::StrAppend(&out, deepspeed_scaler->dynamic ? ", dynamic" : ", static",
                    " loss scaling (DeepSpeed, init ", deepspeed_scaler->init_scale, ")");
  }
  if (full_eval_dtype) absl::StrAppend(&out, "; evaluation in ", DtypeName(*full_eval_dtype));
  if (tf32) absl::StrAppend(&out, "; tf32 ", *tf32 ? "on" : "off");
  return out;
}

PrecisionEnvironment CurrentPrecisionEnvironment(const at::Device& training_device) {
  PrecisionEnvironment env;
  env.device = training_device.type();
  env.cpu = CurrentBf16Support();
#ifdef LOOM_HAS_CUDA
  if (training_device.is_cuda()) {
    env.cuda_major = at::cuda::getDeviceProperties(training_device.index())->major;
  }
#endif
  return env;
}

absl::StatusOr<ResolvedPrecision> ResolvePrecisionPolicy(
    const args::TrainingArguments& a, const args::TrainerDeepSpeedConfig* deepspeed,
    const PrecisionEnvironment& env) {
  ResolvedPrecision out;
  RETURN_IF_ERROR(CheckFlags(a, env));
  if (deepspeed != nullptr) {
    RETURN_IF_ERROR(ResolveDeepSpeedPrecision(deepspeed->config(), env, &out));
  } else if (a.bf16() || a.fp16()) {
    RETURN_IF_ERROR(ResolveAutocast(a, env, &out));
  }
  RETURN_IF_ERROR(ResolveFullEval(a, env, &out));
  RETURN_IF_ERROR(ResolveTf32(a, env, &out));
  return out;
}

void ApplyTf32(const PrecisionPolicy& policy) {
  if (!policy.tf32) return;
  at::globalContext().setAllowTF32CuBLAS(*policy.tf32);
  at::globalContext().setAllowTF32CuDNN(*policy.tf32);
}

}  // namespace loom::precision
