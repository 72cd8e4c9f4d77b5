#include "precision/policy.h"

#include <string>
#include <vector>

#include "args/training_args_testing.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::precision {
namespace {

using ::loom::args::testing::ResolveForTest;
using ::loom::base::testing::StatusIs;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

PrecisionEnvironment Cpu(Bf16Support bf16) {
  PrecisionEnvironment env;
  env.device = c10::DeviceType::CPU;
  CpuFeatures f;
  f.avx2 = true;
  if (bf16 != Bf16Support::kSlow) f.avx512f = f.avx512bw = f.avx512vl = f.avx512dq = true;
  if (bf16 == Bf16Support::kNative) f.avx512_bf16 = true;
  env.cpu = ClassifyBf16(f, true, "");
  EXPECT_EQ(env.cpu.support, bf16);
  return env;
}

PrecisionEnvironment Gpu(int major) {
  PrecisionEnvironment env = Cpu(Bf16Support::kNative);
  env.device = c10::DeviceType::CUDA;
  env.cuda_major = major;
  return env;
}

absl::StatusOr<ResolvedPrecision> Resolve(std::vector<std::string> flags,
                                          const PrecisionEnvironment& env) {
  absl::StatusOr<args::TrainingArguments> a = ResolveForTest(std::move(flags));
  if (!a.ok()) return a.status();
  return ResolvePrecisionPolicy(*a, nullptr, env);
}

TEST(PolicyTest, DefaultsAreFp32Everywhere) {
  for (const PrecisionEnvironment& env :
       {Cpu(Bf16Support::kNative), Cpu(Bf16Support::kSlow), Gpu(9)}) {
    ASSERT_OK_AND_ASSIGN(ResolvedPrecision r, Resolve({}, env));
    EXPECT_EQ(r.policy.mode, PrecisionMode::kFp32);
    EXPECT_FALSE(r.policy.SixteenBit());
    EXPECT_FALSE(r.policy.autocast.has_value());
    EXPECT_THAT(r.warnings, IsEmpty());
    EXPECT_EQ(r.policy.Describe(), "precision: fp32");
  }
}

TEST(PolicyTest, Bf16OnCpuIsCpuAmp) {
  ASSERT_OK_AND_ASSIGN(ResolvedPrecision r, Resolve({"--bf16"}, Cpu(Bf16Support::kNative)));
  EXPECT_EQ(r.policy.mode, PrecisionMode::kAutocast);
  EXPECT_TRUE(r.policy.SixteenBit());
  ASSERT_TRUE(r.policy.autocast.has_value());
  EXPECT_EQ(r.policy.autocast->device, c10::DeviceType::CPU);
  EXPECT_EQ(r.policy.autocast->dtype, at::kBFloat16);
  EXPECT_FALSE(r.policy.grad_scaler.has_value());
  EXPECT_EQ(r.policy.backend, "cpu_amp");
  EXPECT_THAT(r.warnings, IsEmpty());
  EXPECT_EQ(r.policy.Describe(), "precision: bf16 autocast (cpu_amp), fp32 weights");
}

TEST(PolicyTest, Bf16OnACpuWithoutNativeBf16TrainsButWarnsOnce) {
  for (Bf16Support s : {Bf16Support::kSlow, Bf16Support::kEmulated}) {
    ASSERT_OK_AND_ASSIGN(ResolvedPrecision r, Resolve({"--bf16"}, Cpu(s)));
    EXPECT_EQ(r.policy.mode, PrecisionMode::kAutocast);
    ASSERT_EQ(r.warnings.size(), 1u);
    EXPECT_THAT(r.warnings[0], HasSubstr("--bf16: this CPU has no native bf16"));
    EXPECT_THAT(r.warnings[0], HasSubstr("much slower than fp32"));
  }
}

TEST(PolicyTest, Fp16NeedsCuda) {
  EXPECT_THAT(Resolve({"--fp16"}, Cpu(Bf16Support::kNative)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--fp16: FP16 Mixed precision training with AMP or APEX")));
  EXPECT_THAT(Resolve({"--fp16"}, Cpu(Bf16Support::kNative)).status().message(),
              HasSubstr("use --bf16"));
  EXPECT_THAT(Resolve({"--fp16_full_eval"}, Cpu(Bf16Support::kNative)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--fp16_full_eval: FP16")));
  ASSERT_OK_AND_ASSIGN(ResolvedPrecision r, Resolve({"--fp16"}, Gpu(7)));
  EXPECT_EQ(r.policy.autocast->device, c10::DeviceType::CUDA);
  EXPECT_EQ(r.policy.autocast->dtype, at::kHalf);
  ASSERT_TRUE(r.policy.grad_scaler.has_value());
  EXPECT_EQ(r.policy.grad_scaler->init_scale, 65536.0);
  EXPECT_EQ(r.policy.backend, "cuda_amp");
}

TEST(PolicyTest, Bf16OnOldGpusAndCpuAmpOnGpus) {
  EXPECT_THAT(Resolve({"--bf16"}, Gpu(7)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--bf16: Your setup doesn't support bf16/gpu")));
  ASSERT_OK(Resolve({"--bf16"}, Gpu(8)).status());
  EXPECT_THAT(Resolve({"--bf16", "--half_precision_backend", "cpu_amp"}, Gpu(9)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--bf16 with --half_precision_backend cpu_amp")));
  ASSERT_OK(Resolve({"--bf16", "--half_precision_backend", "cpu_amp"}, Cpu(Bf16Support::kNative))
                .status());
}

TEST(PolicyTest, BothSidesAreNamed) {
  EXPECT_THAT(Resolve({"--bf16", "--fp16"}, Gpu(9)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--fp16 and --bf16")));
  EXPECT_THAT(Resolve({"--fp16", "--half_precision_backend", "apex"}, Gpu(9)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--fp16 with --half_precision_backend apex")));
}

TEST(PolicyTest, FullEvalAndTf32) {
  ASSERT_OK_AND_ASSIGN(ResolvedPrecision r,
                       Resolve({"--bf16_full_eval", "--tf32", "true"}, Cpu(Bf16Support::kNative)));
  EXPECT_EQ(r.policy.mode, PrecisionMode::kFp32);
  EXPECT_EQ(r.policy.full_eval_dtype, at::kBFloat16);
  EXPECT_FALSE(r.policy.tf32.has_value());
  EXPECT_THAT(r.warnings, Contains(HasSubstr("--tf32 only changes CUDA matmuls")));
  ASSERT_OK_AND_ASSIGN(ResolvedPrecision g, Resolve({"--tf32", "true"}, Gpu(8)));
  EXPECT_EQ(g.policy.tf32, true);
  EXPECT_THAT(Resolve({"--tf32", "true"}, Gpu(7)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--tf32 requires Ampere")));
  ASSERT_OK_AND_ASSIGN(ResolvedPrecision off, Resolve({"--tf32", "false"}, Gpu(7)));
  EXPECT_EQ(off.policy.tf32, false);
}

// The DeepSpeed path: half weights with fp32 masters, resolved after HF's "auto" filling.
absl::StatusOr<ResolvedPrecision> ResolveDs(std::vector<std::string> flags,
                                            const std::string& ds_json,
                                            const PrecisionEnvironment& env) {
  std::vector<std::string> all = flags;
  absl::StatusOr<args::TrainingArguments> a =
      ResolveForTest(all, nullptr, /*reject_unsupported=*/false);
  if (!a.ok()) return a.status();
  absl::StatusOr<args::DeepSpeedConfig> ds = args::LoadDeepSpeedConfig(ds_json);
  if (!ds.ok()) return ds.status();
  args::TrainerDeepSpeedConfig hf(std::move(*ds));
  absl::Status s = hf.TrainerConfigProcess(*a, 1);
  if (!s.ok()) return s;
  return ResolvePrecisionPolicy(*a, &hf, env);
}

TEST(PolicyTest, DeepSpeedSections) {
  ASSERT_OK_AND_ASSIGN(
      ResolvedPrecision fp16,
      ResolveDs({"--fp16"}, R"({"fp16": {"enabled": "auto", "initial_scale_power": 12}})", Gpu(9)));
  EXPECT_EQ(fp16.policy.mode, PrecisionMode::kHalfWeights);
  EXPECT_EQ(fp16.policy.compute_dtype, at::kHalf);
  EXPECT_FALSE(fp16.policy.autocast.has_value());
  ASSERT_TRUE(fp16.policy.deepspeed_scaler.has_value());
  EXPECT_EQ(fp16.policy.deepspeed_scaler->init_scale, 4096.0);
  EXPECT_EQ(fp16.policy.backend, "deepspeed");

  ASSERT_OK_AND_ASSIGN(ResolvedPrecision bf16, ResolveDs({"--bf16"}, R"({"bf16": {"enabled": true}})",
                                                         Cpu(Bf16Support::kNative)));
  EXPECT_EQ(bf16.policy.mode, PrecisionMode::kHalfWeights);
  EXPECT_EQ(bf16.policy.compute_dtype, at::kBFloat16);
  EXPECT_EQ(bf16.policy.Describe(), "precision: bf16 weights with fp32 master weights (deepspeed)");

  // "auto" never picks bf16 by itself, whatever the CPU.
  for (Bf16Support s : {Bf16Support::kNative, Bf16Support::kSlow}) {
    ASSERT_OK_AND_ASSIGN(ResolvedPrecision none,
                         ResolveDs({}, R"({"bf16": {"enabled": "auto"}})", Cpu(s)));
    EXPECT_EQ(none.policy.mode, PrecisionMode::kFp32);
  }
  EXPECT_THAT(ResolveDs({"--fp16"}, R"({"fp16": {"enabled": "auto"}})", Cpu(Bf16Support::kNative)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--fp16")));
  EXPECT_THAT(ResolveDs({}, R"({"amp": {"enabled": true}})", Gpu(9)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("amp.enabled")));
}

}  // namespace
}  // namespace loom::precision
