// The accelerate settings table (one entry per YAML key / launcher flag, accelerate 0.27)
// and the cross-key validation shared by the YAML and CLI readers.
#include <functional>
#include <optional>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "args/accelerate_config.h"
#include "args/accelerate_config_internal.h"
#include "args/parser.h"
#include "base/status_macros.h"

namespace loom::args {
namespace accelerate_internal {
namespace {

using Setter = decltype(Setting::set);
template <typename E>
using Names = std::vector<std::pair<std::string, E>>;

absl::Status Bad(const std::string& where, absl::string_view expected, const std::string& got) {
  return absl::InvalidArgumentError(
      absl::StrCat(where, ": expected ", expected, ", got \"", absl::CEscape(got), "\""));
}

absl::Status One(const Values& v, const std::string& where) {
  if (v.size() != 1) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": expected a single value, got a list"));
  }
  return absl::OkStatus();
}

absl::Status ToInt(const std::string& s, const std::string& where, int64_t* out, int64_t min,
                   int64_t max) {
  if (!absl::SimpleAtoi(s, out)) return Bad(where, "an integer", s);
  if (*out < min || *out > max) {
    return Bad(where,
               max == INT64_MAX ? absl::StrCat("an integer >= ", min)
                                : absl::StrCat("an integer in [", min, ", ", max, "]"),
               s);
  }
  return absl::OkStatus();
}

// Parses one of `names` (case-insensitive).
template <typename E>
absl::Status ToEnum(const std::string& s, const std::string& where, const Names<E>& names, E* out) {
  std::vector<std::string> all;
  for (const auto& [name, value] : names) {
    if (absl::EqualsIgnoreCase(s, name)) {
      *out = value;
      return absl::OkStatus();
    }
    all.push_back(name);
  }
  return Bad(where, absl::StrCat("one of ", absl::StrJoin(all, ", ")), s);
}

const Names<FsdpShardingStrategy> kStrategies = {
    {"FULL_SHARD", FsdpShardingStrategy::kFullShard},
    {"SHARD_GRAD_OP", FsdpShardingStrategy::kShardGradOp},
    {"NO_SHARD", FsdpShardingStrategy::kNoShard},
    {"HYBRID_SHARD", FsdpShardingStrategy::kHybridShard},
    {"HYBRID_SHARD_ZERO2", FsdpShardingStrategy::kHybridShardZero2}};
const Names<DistributedType> kDistributedTypes = {{"NO", DistributedType::kNo},
                                                  {"MULTI_CPU", DistributedType::kMultiCpu},
                                                  {"MULTI_GPU", DistributedType::kMultiGpu},
                                                  {"FSDP", DistributedType::kFsdp},
                                                  {"DEEPSPEED", DistributedType::kDeepSpeed}};
const Names<MixedPrecision> kMixedPrecisions = {
    {"no", MixedPrecision::kNo}, {"fp16", MixedPrecision::kFp16}, {"bf16", MixedPrecision::kBf16}};
const Names<FsdpAutoWrapPolicy> kWrapPolicies = {
    {"TRANSFORMER_BASED_WRAP", FsdpAutoWrapPolicy::kTransformerBased},
    {"SIZE_BASED_WRAP", FsdpAutoWrapPolicy::kSizeBased},
    {"NO_WRAP", FsdpAutoWrapPolicy::kNoWrap}};
const Names<FsdpBackwardPrefetch> kPrefetch = {
    {"BACKWARD_PRE", FsdpBackwardPrefetch::kBackwardPre},
    {"BACKWARD_POST", FsdpBackwardPrefetch::kBackwardPost},
    {"NO_PREFETCH", FsdpBackwardPrefetch::kNoPrefetch}};
const Names<FsdpStateDictType> kStateDictTypes = {
    {"FULL_STATE_DICT", FsdpStateDictType::kFullStateDict},
    {"LOCAL_STATE_DICT", FsdpStateDictType::kLocalStateDict},
    {"SHARDED_STATE_DICT", FsdpStateDictType::kShardedStateDict}};
const Names<OffloadDevice> kDevices = {
    {"none", OffloadDevice::kNone}, {"cpu", OffloadDevice::kCpu}, {"nvme", OffloadDevice::kNvme}};

// Field parsers: (owner, text, where) -> Status, assigning a plain or std::optional member.
template <typename T>
struct Unwrap {
  using type = T;
};
template <typename T>
struct Unwrap<std::optional<T>> {
  using type = T;
};

template <typename O, typename M>
auto IntField(M O::*m, int64_t min = 0, int64_t max = INT64_MAX) {
  return [=](O* o, const std::string& s, const std::string& w) -> absl::Status {
    int64_t n = 0;
    RETURN_IF_ERROR(ToInt(s, w, &n, min, max));
    o->*m = static_cast<typename Unwrap<M>::type>(n);
    return absl::OkStatus();
  };
}
template <typename O, typename M>
auto BoolField(M O::*m) {
  return [=](O* o, const std::string& s, const std::string& w) -> absl::Status {
    bool b = false;
    RETURN_IF_ERROR(ToBool(s, w, &b));
    o->*m = b;
    return absl::OkStatus();
  };
}
template <typename O, typename M>
auto StrField(M O::*m) {
  return [=](O* o, const std::string& s, const std::string&) -> absl::Status {
    o->*m = s;
    return absl::OkStatus();
  };
}
template <typename O, typename M>
auto EnumField(M O::*m, const Names<typename Unwrap<M>::type>& names) {
  return [m, &names](O* o, const std::string& s, const std::string& w) -> absl::Status {
    typename Unwrap<M>::type e{};
    RETURN_IF_ERROR(ToEnum(s, w, names, &e));
    o->*m = e;
    return absl::OkStatus();
  };
}

// Section adapters: a single-value field parser -> a Setter on AccelerateConfig.
template <typename F>
Setter Top(F f) {
  return [f](AccelerateConfig* c, const Values& v, const std::string& w) -> absl::Status {
    RETURN_IF_ERROR(One(v, w));
    return f(c, v[0], w);
  };
}
AccelerateFsdpConfig* FsdpOf(AccelerateConfig* c) {
  if (!c->fsdp_config) c->fsdp_config.emplace();
  return &*c->fsdp_config;
}
AccelerateDeepSpeedConfig* DsOf(AccelerateConfig* c) {
  if (!c->deepspeed_config) c->deepspeed_config.emplace();
  return &*c->deepspeed_config;
}
template <typename F>
Setter Fsdp(F f) {
  return [f](AccelerateConfig* c, const Values& v, const std::string& w) -> absl::Status {
    RETURN_IF_ERROR(One(v, w));
    return f(FsdpOf(c), v[0], w);
  };
}
template <typename F>
Setter Ds(F f) {
  return [f](AccelerateConfig* c, const Values& v, const std::string& w) -> absl::Status {
    RETURN_IF_ERROR(One(v, w));
    return f(DsOf(c), v[0], w);
  };
}

// Sets distributed_type from --use_fsdp / --use_deepspeed / --multi_gpu given as true.
Setter Mode(DistributedType type) {
  return Top([type](AccelerateConfig* c, const std::string& s, const std::string& w) {
    bool on = false;
    RETURN_IF_ERROR(ToBool(s, w, &on));
    if (!on) return absl::OkStatus();
    c->distributed_type = type;
    if (type == DistributedType::kFsdp) FsdpOf(c);
    if (type == DistributedType::kDeepSpeed) DsOf(c);
    return absl::OkStatus();
  });
}

absl::Status ComputeEnvironment(AccelerateConfig* c, const std::string& s, const std::string& w) {
  if (s != "LOCAL_MACHINE") return Bad(w, "LOCAL_MACHINE (loom launches local processes only)", s);
  c->compute_environment = s;
  return absl::OkStatus();
}

absl::Status GpuIds(AccelerateConfig* c, const std::string& s, const std::string& w) {
  if (!absl::EqualsIgnoreCase(s, "all")) {
    for (absl::string_view id : absl::StrSplit(s, ',')) {
      int64_t n;
      if (!absl::SimpleAtoi(id, &n) || n < 0) {
        return Bad(w, "\"all\" or comma-separated GPU indices like \"0,1\"", s);
      }
    }
  }
  c->gpu_ids = s;
  return absl::OkStatus();
}

absl::Status TpuEnv(AccelerateConfig* c, const Values& v, const std::string&) {
  c->tpu_env = v;
  return absl::OkStatus();
}

absl::Status ShardingStrategy(AccelerateFsdpConfig* f, const std::string& s, const std::string& w) {
  int64_t n;
  if (!absl::SimpleAtoi(s, &n)) return ToEnum(s, w, kStrategies, &f->sharding_strategy);
  if (n < 1 || n > 5) {
    return Bad(w,
               "1-5 or one of FULL_SHARD, SHARD_GRAD_OP, NO_SHARD, HYBRID_SHARD, "
               "HYBRID_SHARD_ZERO2",
               s);
  }
  f->sharding_strategy = static_cast<FsdpShardingStrategy>(n);
  return absl::OkStatus();
}

// Whether `s` is well-formed UTF-8 (no overlong forms, surrogates or code points past U+10FFFF).
bool IsUtf8(absl::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    const size_t n = c >= 0xC2 && c <= 0xDF   ? 1
                     : c >= 0xE0 && c <= 0xEF ? 2
                     : c >= 0xF0 && c <= 0xF4 ? 3
                                              : 0;  // continuation bytes
    if (n == 0 || s.size() - i <= n) return false;
    uint32_t cp = c & (0x3F >> n);
    for (size_t k = 1; k <= n; ++k) {
      const unsigned char d = static_cast<unsigned char>(s[i + k]);
      if ((d & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (d & 0x3F);
    }
    if ((n == 2 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) ||
        (n == 3 && (cp < 0x10000 || cp > 0x10FFFF))) {
      return false;
    }
    i += n + 1;
  }
  return true;
}

// A YAML list or a comma-separated string ("BertLayer,BertEmbeddings"), as accelerate splits it.
absl::Status ClsToWrap(AccelerateConfig* c, const Values& v, const std::string& w) {
  AccelerateFsdpConfig* f = FsdpOf(c);
  f->transformer_layer_cls_to_wrap.clear();
  for (const std::string& item : v) {
    // The names go into the --fsdp_config JSON the script is given, which must be UTF-8.
    if (!IsUtf8(item)) return Bad(w, "class names in UTF-8 (save the file as UTF-8)", item);
    for (absl::string_view name : absl::StrSplit(item, ',', absl::SkipWhitespace())) {
      f->transformer_layer_cls_to_wrap.emplace_back(absl::StripAsciiWhitespace(name));
    }
  }
  return absl::OkStatus();
}

absl::Status GradientClipping(AccelerateDeepSpeedConfig* d, const std::string& s,
                              const std::string& w) {
  double x;
  if (!absl::SimpleAtod(s, &x) || x < 0) return Bad(w, "a number >= 0", s);
  d->gradient_clipping = x;
  return absl::OkStatus();
}

// A YAML-only key, and a key that is also the launcher flag --<key> (plus `more_flags`).
Setting Yaml(Section section, std::string key, Setter set, bool list = false) {
  return {section, std::move(key), {}, CliKind::kValue, list, std::move(set)};
}
Setting Flag(Section section, std::string key, CliKind kind, Setter set,
             std::vector<std::string> more_flags = {}, bool list = false) {
  more_flags.insert(more_flags.begin(), key);
  return {section, std::move(key), std::move(more_flags), kind, list, std::move(set)};
}

}  // namespace

absl::Status ToBool(const std::string& s, const std::string& where, bool* out) {
  const std::string l = absl::AsciiStrToLower(s);
  if (l == "on" || l == "off") {
    *out = l == "on";
    return absl::OkStatus();
  }
  if (!ParsePythonBool(l, out).ok()) return Bad(where, "true or false", s);
  return absl::OkStatus();
}

const std::vector<Setting>& Settings() {
  using A = AccelerateConfig;
  using F = AccelerateFsdpConfig;
  using D = AccelerateDeepSpeedConfig;
  constexpr Section kTop = Section::kTop, kFsdp = Section::kFsdp, kDs = Section::kDeepSpeed;
  constexpr CliKind kValue = CliKind::kValue, kBool = CliKind::kBool,
                    kStoreTrue = CliKind::kStoreTrue;
  static const auto* settings = new std::vector<Setting>{
      Yaml(kTop, "compute_environment", Top(ComputeEnvironment)),
      Yaml(kTop, "distributed_type", Top(EnumField(&A::distributed_type, kDistributedTypes))),
      Flag(kTop, "use_fsdp", kStoreTrue, Mode(DistributedType::kFsdp)),
      Flag(kTop, "use_deepspeed", kStoreTrue, Mode(DistributedType::kDeepSpeed)),
      Flag(kTop, "multi_gpu", kStoreTrue, Mode(DistributedType::kMultiGpu)),
      Flag(kTop, "downcast_bf16", kStoreTrue, Top(BoolField(&A::downcast_bf16))),
      Flag(kTop, "gpu_ids", kValue, Top(GpuIds)),
      Flag(kTop, "machine_rank", kValue, Top(IntField(&A::machine_rank))),
      Flag(kTop, "main_process_ip", kValue, Top(StrField(&A::main_process_ip))),
      Flag(kTop, "main_process_port", kValue, Top(IntField(&A::main_process_port, 1, 65535))),
      Flag(kTop, "main_training_function", kValue, Top(StrField(&A::main_training_function))),
      Flag(kTop, "mixed_precision", kValue, Top(EnumField(&A::mixed_precision, kMixedPrecisions))),
      Flag(kTop, "num_machines", kValue, Top(IntField(&A::num_machines, 1))),
      Flag(kTop, "num_processes", kValue, Top(IntField(&A::num_processes, 1))),
      Flag(kTop, "rdzv_backend", kValue, Top(StrField(&A::rdzv_backend))),
      Flag(kTop, "same_network", kStoreTrue, Top(BoolField(&A::same_network))),
      Yaml(kTop, "tpu_env", TpuEnv, /*list=*/true),
      Flag(kTop, "tpu_use_cluster", kStoreTrue, Top(BoolField(&A::tpu_use_cluster))),
      Flag(kTop, "tpu_use_sudo", kStoreTrue, Top(BoolField(&A::tpu_use_sudo))),
      Flag(kTop, "use_cpu", kStoreTrue, Top(BoolField(&A::use_cpu)), {"cpu"}),
      // fsdp_config.*
      Flag(kFsdp, "fsdp_auto_wrap_policy", kValue,
           Fsdp(EnumField(&F::auto_wrap_policy, kWrapPolicies))),
      Flag(kFsdp, "fsdp_backward_prefetch_policy", kValue,
           Fsdp(EnumField(&F::backward_prefetch, kPrefetch)), {"fsdp_backward_prefetch"}),
      Flag(kFsdp, "fsdp_forward_prefetch", kBool, Fsdp(BoolField(&F::forward_prefetch))),
      Flag(kFsdp, "fsdp_offload_params", kBool, Fsdp(BoolField(&F::offload_params))),
      Flag(kFsdp, "fsdp_sharding_strategy", kValue, Fsdp(ShardingStrategy)),
      Flag(kFsdp, "fsdp_state_dict_type", kValue,
           Fsdp(EnumField(&F::state_dict_type, kStateDictTypes))),
      Flag(kFsdp, "fsdp_sync_module_states", kBool, Fsdp(BoolField(&F::sync_module_states))),
      Flag(kFsdp, "fsdp_transformer_layer_cls_to_wrap", kValue, ClsToWrap, {}, /*list=*/true),
      Flag(kFsdp, "fsdp_use_orig_params", kBool, Fsdp(BoolField(&F::use_orig_params))),
      Flag(kFsdp, "fsdp_min_num_params", kValue, Fsdp(IntField(&F::min_num_params))),
      Flag(kFsdp, "fsdp_cpu_ram_efficient_loading", kBool,
           Fsdp(BoolField(&F::cpu_ram_efficient_loading))),
      // deepspeed_config.*
      Flag(kDs, "deepspeed_config_file", kValue, Ds(StrField(&D::deepspeed_config_file))),
      Flag(kDs, "zero3_init_flag", kBool, Ds(BoolField(&D::zero3_init_flag))),
      Flag(kDs, "gradient_accumulation_steps", kValue,
           Ds(IntField(&D::gradient_accumulation_steps, 1))),
      Flag(kDs, "gradient_clipping", kValue, Ds(GradientClipping)),
      Flag(kDs, "offload_optimizer_device", kValue,
           Ds(EnumField(&D::offload_optimizer_device, kDevices))),
      Flag(kDs, "offload_param_device", kValue, Ds(EnumField(&D::offload_param_device, kDevices))),
      Flag(kDs, "zero_stage", kValue, Ds(IntField(&D::zero_stage, 0, 3))),
  };
  return *settings;
}

const char* SectionName(Section s) {
  return s == Section::kFsdp ? "fsdp_config" : s == Section::kDeepSpeed ? "deepspeed_config" : "";
}

bool CliOnly(const Setting& s) {
  return s.key == "use_fsdp" || s.key == "use_deepspeed" || s.key == "multi_gpu";
}

// Cross-key rules shared by the YAML and CLI paths.
absl::Status Validate(const AccelerateConfig& c, std::vector<std::string>* warnings) {
  if (c.machine_rank >= c.num_machines) {
    return absl::InvalidArgumentError(absl::StrCat("machine_rank: must be < num_machines (",
                                                   c.num_machines, "), got ", c.machine_rank));
  }
  if (!c.deepspeed_config) return absl::OkStatus();
  const AccelerateDeepSpeedConfig& d = *c.deepspeed_config;
  if (d.deepspeed_config_file) {
    std::vector<std::string> ignored;
    if (d.gradient_accumulation_steps) ignored.push_back("gradient_accumulation_steps");
    if (d.gradient_clipping) ignored.push_back("gradient_clipping");
    if (d.offload_optimizer_device) ignored.push_back("offload_optimizer_device");
    if (d.offload_param_device) ignored.push_back("offload_param_device");
    if (d.zero_stage) ignored.push_back("zero_stage");
    if (!ignored.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "deepspeed_config.deepspeed_config_file: when it is given, these keys must be set in "
          "that DeepSpeed JSON file instead, not in the accelerate config: deepspeed_config.",
          absl::StrJoin(ignored, ", deepspeed_config.")));
    }
  }
  if (d.zero3_init_flag.value_or(false) && d.zero_stage && *d.zero_stage != 3) {
    warnings->push_back(
        absl::StrCat("deepspeed_config.zero3_init_flag applies only to ZeRO stage 3 "
                     "(zero_stage is ",
                     *d.zero_stage, "); it has no effect"));
  }
  return absl::OkStatus();
}

}  // namespace accelerate_internal

const char* DistributedTypeName(DistributedType type) {
  switch (type) {
    case DistributedType::kMultiCpu:
      return "MULTI_CPU";
    case DistributedType::kMultiGpu:
      return "MULTI_GPU";
    case DistributedType::kFsdp:
      return "FSDP";
    case DistributedType::kDeepSpeed:
      return "DEEPSPEED";
    case DistributedType::kNo:
      break;
  }
  return "NO";
}

const char* ShardingStrategyName(FsdpShardingStrategy s) {
  for (const auto& [name, value] : accelerate_internal::kStrategies) {
    if (value == s) return name.c_str();
  }
  return "FULL_SHARD";
}

}  // namespace loom::args
