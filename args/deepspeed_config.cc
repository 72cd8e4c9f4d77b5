// DeepSpeed config loading: a key table per section, each handler type-checking one value at its
// dotted path. Resolution ("auto" filling), DecideDtype, HiddenSizeOf and the Python helpers live
// in deepspeed_config_resolve.cc.
#include "args/deepspeed_config.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "args/parser.h"
#include "base/file_util.h"
#include "base/status_macros.h"

namespace loom::args {
namespace {

using json = nlohmann::ordered_json;

std::string Join(const std::string& prefix, const std::string& key) {
  return prefix.empty() ? key : prefix + "." + key;
}

absl::Status TypeError(const std::string& path, absl::string_view expected, const json& v,
                       bool auto_allowed) {
  std::string hint;
  if (v == "auto" && !auto_allowed) {
    hint =
        " (\"auto\" is accepted only for the keys HF fills from TrainingArguments or the model, "
        "as transformers' HfTrainerDeepSpeedConfig does; give a value)";
  }
  return absl::InvalidArgumentError(absl::StrCat(
      path, ": expected ", expected, auto_allowed ? " or \"auto\"" : "", ", got ", v.dump(), hint));
}

absl::Status ReadInt(const json& v, const std::string& path, int64_t* out, bool auto_ok = false) {
  if (v.is_number_integer()) {
    if (v.is_number_unsigned() &&
        v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return TypeError(path, "an integer that fits in 64 bits", v, auto_ok);
    }
    *out = v.get<int64_t>();
    return absl::OkStatus();
  }
  if (v.is_number_float()) {  // 5e8, 0.94e6: DeepSpeed accepts integral floats
    const double d = v.get<double>();
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.2e18) {
      *out = static_cast<int64_t>(d);
      return absl::OkStatus();
    }
  }
  return TypeError(path, "an integer", v, auto_ok);
}

absl::Status ReadDouble(const json& v, const std::string& path, double* out, bool auto_ok = false) {
  if (!v.is_number()) return TypeError(path, "a number", v, auto_ok);
  *out = v.get<double>();
  return absl::OkStatus();
}

absl::Status ReadBool(const json& v, const std::string& path, bool* out, bool auto_ok = false) {
  if (!v.is_boolean()) return TypeError(path, "true or false", v, auto_ok);
  *out = v.get<bool>();
  return absl::OkStatus();
}

absl::Status ReadString(const json& v, const std::string& path, std::string* out,
                        bool auto_ok = false) {
  if (!v.is_string()) return TypeError(path, "a string", v, auto_ok);
  *out = v.get<std::string>();
  return absl::OkStatus();
}

absl::Status ReadBetas(const json& v, const std::string& path, std::array<double, 2>* out,
                       bool auto_ok) {
  if (!v.is_array() || v.size() != 2 || !v[0].is_number() || !v[1].is_number()) {
    return TypeError(path, "a list of 2 numbers", v, auto_ok);
  }
  *out = {v[0].get<double>(), v[1].get<double>()};
  return absl::OkStatus();
}

// Reads "auto" or a T through `read` (one of the Read* functions above).
template <typename T, typename ReadFn>
absl::Status ReadAuto(const json& v, const std::string& path, AutoOr<T>* out, ReadFn read) {
  if (v == "auto") {
    *out = Auto{};
    return absl::OkStatus();
  }
  T value{};
  RETURN_IF_ERROR(read(v, path, &value, /*auto_ok=*/true));
  *out = std::move(value);
  return absl::OkStatus();
}

// Binders: a handler that reads one key into a destination.
using Handler = std::function<absl::Status(const json& v, const std::string& path)>;
struct Key {
  std::string name;
  Handler handler;
};

Handler Int(int64_t* out) {
  return [out](const json& v, const std::string& p) { return ReadInt(v, p, out); };
}
Handler Dbl(double* out) {
  return [out](const json& v, const std::string& p) { return ReadDouble(v, p, out); };
}
Handler Bool(bool* out) {
  return [out](const json& v, const std::string& p) { return ReadBool(v, p, out); };
}
Handler Str(std::string* out) {
  return [out](const json& v, const std::string& p) { return ReadString(v, p, out); };
}
Handler OptBool(std::optional<bool>* out) {
  return [out](const json& v, const std::string& p) {
    bool b = false;
    RETURN_IF_ERROR(ReadBool(v, p, &b));
    *out = b;
    return absl::OkStatus();
  };
}
Handler OptStr(std::optional<std::string>* out) {
  return [out](const json& v, const std::string& p) {
    std::string s;
    RETURN_IF_ERROR(ReadString(v, p, &s));
    *out = s;
    return absl::OkStatus();
  };
}
Handler AutoInt(AutoOr<int64_t>* out) {
  return [out](const json& v, const std::string& p) {
    return ReadAuto(v, p, out, [](const json& x, const std::string& q, int64_t* o, bool a) {
      return ReadInt(x, q, o, a);
    });
  };
}
Handler AutoDbl(AutoOr<double>* out) {
  return [out](const json& v, const std::string& p) {
    return ReadAuto(v, p, out, [](const json& x, const std::string& q, double* o, bool a) {
      return ReadDouble(x, q, o, a);
    });
  };
}
Handler AutoBool(AutoOr<bool>* out) {
  return [out](const json& v, const std::string& p) {
    return ReadAuto(v, p, out, [](const json& x, const std::string& q, bool* o, bool a) {
      return ReadBool(x, q, o, a);
    });
  };
}
// A positive batch-like count that may be "auto" and may be absent.
Handler OptAutoCount(std::optional<AutoOr<int64_t>>* out) {
  return [out](const json& v, const std::string& p) {
    AutoOr<int64_t> value;
    RETURN_IF_ERROR(AutoInt(&value)(v, p));
    if (!value.is_auto() && value.value() < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat(p, ": must be a positive integer or \"auto\", got ", v.dump()));
    }
    *out = value;
    return absl::OkStatus();
  };
}
Handler Device(OffloadDevice* out) {
  return [out](const json& v, const std::string& p) {
    std::string s;
    RETURN_IF_ERROR(ReadString(v, p, &s));
    if (s == "none") {
      *out = OffloadDevice::kNone;
    } else if (s == "cpu") {
      *out = OffloadDevice::kCpu;
    } else if (s == "nvme") {
      *out = OffloadDevice::kNvme;
    } else {
      const std::string lower = absl::AsciiStrToLower(s);
      return absl::InvalidArgumentError(
          absl::StrCat(p, ": expected one of \"cpu\", \"nvme\", \"none\", got ", v.dump(),
                       lower != s && (lower == "cpu" || lower == "nvme" || lower == "none")
                           ? absl::StrCat(" (device names are lower-case: \"", lower, "\")")
                           : ""));
    }
    return absl::OkStatus();
  };
}

std::string ClosestKey(const std::string& key, const std::vector<Key>& keys) {
  std::vector<std::string> names;
  for (const Key& k : keys) names.push_back(k.name);
  return ClosestName(key, names);
}

// Runs the handler of every key of `obj`; nulls count as absent; unknown keys are warnings.
absl::Status Walk(const json& obj, const std::string& path, const std::vector<Key>& keys,
                  std::vector<std::string>* warnings, bool passthrough = false) {
  if (!obj.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": expected an object ({...}), got ", obj.dump()));
  }
  for (const auto& [name, value] : obj.items()) {
    if (value.is_null()) continue;
    const std::string key_path = Join(path, name);
    // An init-capture: a lambda may not name a structured binding in C++17 (gcc allows it,
    // clang, which builds the fuzzers, does not).
    auto it = std::find_if(keys.begin(), keys.end(),
                           [&wanted = name](const Key& k) { return k.name == wanted; });
    if (it != keys.end()) {
      RETURN_IF_ERROR(it->handler(value, key_path));
      continue;
    }
    if (passthrough) {
      warnings->push_back(
          absl::StrCat("DeepSpeed config key \"", key_path,
                       "\" is not interpreted by loom; it is passed through as given"));
      continue;
    }
    std::string hint = ClosestKey(name, keys);
    warnings->push_back(absl::StrCat(
        "unknown DeepSpeed config key \"", key_path,
        "\" is ignored (DeepSpeed ignores misspelled keys and uses the default)",
        hint.empty() ? "" : absl::StrCat("; did you mean \"", Join(path, hint), "\"?")));
  }
  return absl::OkStatus();
}

std::vector<Key> AioKeys(AioConfig* a) {
  return {
      {"block_size", Int(&a->block_size)},        {"queue_depth", Int(&a->queue_depth)},
      {"thread_count", Int(&a->thread_count)},    {"intra_op_parallelism", Int(&a->thread_count)},
      {"single_submit", Bool(&a->single_submit)}, {"overlap_events", Bool(&a->overlap_events)}};
}

absl::Status ParseZero(const json& obj, DeepSpeedConfig* c, const json** nested_aio,
                       std::vector<std::string>* warnings) {
  ZeroConfig* z = &c->zero_optimization;
  std::vector<Key> keys = {
      {"stage",
       [z](const json& v, const std::string& p) {
         int64_t stage = 0;
         RETURN_IF_ERROR(ReadInt(v, p, &stage));
         if (stage < 0 || stage > 3) {
           return absl::InvalidArgumentError(
               absl::StrCat(p, ": expected a ZeRO stage 0, 1, 2 or 3, got ", v.dump()));
         }
         z->stage = static_cast<int>(stage);
         return absl::OkStatus();
       }},
      {"offload_optimizer",
       [z, warnings](const json& v, const std::string& p) {
         OffloadOptimizerConfig o;
         RETURN_IF_ERROR(Walk(v, p,
                              {{"device", Device(&o.device)},
                               {"nvme_path", OptStr(&o.nvme_path)},
                               {"pin_memory", Bool(&o.pin_memory)},
                               {"buffer_count", Int(&o.buffer_count)},
                               {"fast_init", Bool(&o.fast_init)}},
                              warnings));
         z->offload_optimizer = o;
         return absl::OkStatus();
       }},
      {"offload_param",
       [z, warnings](const json& v, const std::string& p) {
         OffloadParamConfig o;
         RETURN_IF_ERROR(Walk(v, p,
                              {{"device", Device(&o.device)},
                               {"nvme_path", OptStr(&o.nvme_path)},
                               {"pin_memory", Bool(&o.pin_memory)},
                               {"buffer_count", Int(&o.buffer_count)},
                               {"buffer_size", Int(&o.buffer_size)},
                               {"max_in_cpu", Int(&o.max_in_cpu)}},
                              warnings));
         z->offload_param = o;
         return absl::OkStatus();
       }},
      {"allgather_partitions", Bool(&z->allgather_partitions)},
      {"allgather_bucket_size", Int(&z->allgather_bucket_size)},
      {"reduce_scatter", Bool(&z->reduce_scatter)},
      {"reduce_bucket_size", AutoInt(&z->reduce_bucket_size)},
      {"overlap_comm", OptBool(&z->overlap_comm)},
      {"contiguous_gradients", Bool(&z->contiguous_gradients)},
      {"round_robin_gradients", Bool(&z->round_robin_gradients)},
      {"sub_group_size", Int(&z->sub_group_size)},
      {"stage3_prefetch_bucket_size", AutoInt(&z->stage3_prefetch_bucket_size)},
      {"stage3_param_persistence_threshold", AutoInt(&z->stage3_param_persistence_threshold)},
      {"stage3_max_live_parameters", Int(&z->stage3_max_live_parameters)},
      {"stage3_max_reuse_distance", Int(&z->stage3_max_reuse_distance)},
      {"stage3_gather_16bit_weights_on_model_save",
       Bool(&z->stage3_gather_16bit_weights_on_model_save)},
      {"stage3_gather_fp16_weights_on_model_save",
       Bool(&z->stage3_gather_16bit_weights_on_model_save)},
      {"aio",
       [nested_aio](const json& v, const std::string& p) {
         *nested_aio = &v;  // read after the top level is known
         return absl::OkStatus();
       }},
  };
  return Walk(obj, "zero_optimization", keys, warnings);
}

absl::Status ParseOptimizer(const json& obj, DeepSpeedConfig* c, std::vector<std::string>* w) {
  OptimizerConfig o;
  auto betas = [&o](const json& v, const std::string& p) {
    return ReadAuto(v, p, &o.betas,
                    [](const json& x, const std::string& q, std::array<double, 2>* out, bool a) {
                      return ReadBetas(x, q, out, a);
                    });
  };
  RETURN_IF_ERROR(Walk(obj, "optimizer",
                       {{"type", Str(&o.type)},
                        {"params",
                         [&](const json& v, const std::string& p) {
                           return Walk(v, p,
                                       {{"lr", AutoDbl(&o.lr)},
                                        {"betas", betas},
                                        {"eps", AutoDbl(&o.eps)},
                                        {"weight_decay", AutoDbl(&o.weight_decay)}},
                                       w, /*passthrough=*/true);
                         }}},
                       w));
  c->optimizer = o;
  return absl::OkStatus();
}

absl::Status ParseScheduler(const json& obj, DeepSpeedConfig* c, std::vector<std::string>* w) {
  SchedulerConfig s;
  auto total = [&s](const json& v, const std::string& p) {
    AutoOr<int64_t> t;
    RETURN_IF_ERROR(AutoInt(&t)(v, p));
    s.total_num_steps = t;
    return absl::OkStatus();
  };
  auto warmup_type = [&s, w](const json& v, const std::string& p) {
    RETURN_IF_ERROR(ReadString(v, p, &s.warmup_type));
    if (s.warmup_type != "log" && s.warmup_type != "linear") {
      w->push_back(absl::StrCat(p, ": unknown warmup_type \"", s.warmup_type,
                                "\"; DeepSpeed falls back to \"log\" (use \"log\" or \"linear\")"));
    }
    return absl::OkStatus();
  };
  RETURN_IF_ERROR(Walk(obj, "scheduler",
                       {{"type", Str(&s.type)},
                        {"params",
                         [&](const json& v, const std::string& p) {
                           return Walk(v, p,
                                       {{"warmup_min_lr", AutoDbl(&s.warmup_min_lr)},
                                        {"warmup_max_lr", AutoDbl(&s.warmup_max_lr)},
                                        {"warmup_num_steps", AutoInt(&s.warmup_num_steps)},
                                        {"total_num_steps", total},
                                        {"last_batch_iteration", Int(&s.last_batch_iteration)},
                                        {"warmup_type", warmup_type},
                                        {"warmup_min_ratio", Dbl(&s.warmup_min_ratio)},
                                        {"cos_min_ratio", Dbl(&s.cos_min_ratio)}},
                                       w, /*passthrough=*/true);
                         }}},
                       w));
  c->scheduler = s;
  return absl::OkStatus();
}

Handler CommType(std::optional<CommDataType>* out) {
  return [out](const json& v, const std::string& p) {
    std::string s;
    RETURN_IF_ERROR(ReadString(v, p, &s));
    s = absl::AsciiStrToLower(s);  // DeepSpeed lower-cases it
    if (s == "fp16") {
      *out = CommDataType::kFp16;
    } else if (s == "bfp16" || s == "bf16") {
      *out = CommDataType::kBf16;
    } else if (s == "fp32") {
      *out = CommDataType::kFp32;
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          p, ": expected one of \"fp16\", \"bfp16\" (newer DeepSpeed: \"bf16\"), \"fp32\", got ",
          v.dump()));
    }
    return absl::OkStatus();
  };
}

// A section whose presence is recorded (fp16, bf16, amp): walks its keys.
Handler Section(bool* present, std::vector<Key> keys, std::vector<std::string>* w) {
  return [present, keys = std::move(keys), w](const json& v, const std::string& p) {
    *present = true;
    return Walk(v, p, keys, w);
  };
}

// The "fp16", "bf16" and "amp" sections.
std::vector<Key> PrecisionKeys(DeepSpeedConfig* c, std::vector<std::string>* w) {
  return {
      {"fp16", Section(&c->fp16.present,
                       {{"enabled", AutoBool(&c->fp16.enabled)},
                        {"loss_scale", Dbl(&c->fp16.loss_scale)},
                        {"initial_scale_power", Int(&c->fp16.initial_scale_power)},
                        {"loss_scale_window", Int(&c->fp16.loss_scale_window)},
                        {"hysteresis", Int(&c->fp16.hysteresis)},
                        {"consecutive_hysteresis", Bool(&c->fp16.consecutive_hysteresis)},
                        {"min_loss_scale", Dbl(&c->fp16.min_loss_scale)}},
                       w)},
      {"bf16", Section(&c->bf16.present, {{"enabled", AutoBool(&c->bf16.enabled)}}, w)},
      {"amp", Section(&c->amp.present,
                      {{"enabled", AutoBool(&c->amp.enabled)},
                       {"opt_level",
                        [c](const json& v, const std::string& p) {
                          AutoOr<std::string> level;
                          RETURN_IF_ERROR(
                              ReadAuto(v, p, &level,
                                       [](const json& x, const std::string& q, std::string* o,
                                          bool a) { return ReadString(x, q, o, a); }));
                          c->amp.opt_level = level;
                          return absl::OkStatus();
                        }}},
                      w)},
  };
}

// The other top-level keys: optimizer, scheduler, batch sizes, clipping, checkpoint, ...
std::vector<Key> TrainingKeys(DeepSpeedConfig* c, std::vector<std::string>* w) {
  return {
      {"optimizer", [c, w](const json& v, const std::string&) { return ParseOptimizer(v, c, w); }},
      {"scheduler", [c, w](const json& v, const std::string&) { return ParseScheduler(v, c, w); }},
      {"train_batch_size", OptAutoCount(&c->train_batch_size)},
      {"train_micro_batch_size_per_gpu", OptAutoCount(&c->train_micro_batch_size_per_gpu)},
      {"gradient_accumulation_steps", OptAutoCount(&c->gradient_accumulation_steps)},
      {"gradient_clipping", AutoDbl(&c->gradient_clipping)},
      {"steps_per_print", Int(&c->steps_per_print)},
      {"wall_clock_breakdown", Bool(&c->wall_clock_breakdown)},
      {"zero_allow_untested_optimizer", Bool(&c->zero_allow_untested_optimizer)},
      {"zero_force_ds_cpu_optimizer", Bool(&c->zero_force_ds_cpu_optimizer)},
      {"communication_data_type", CommType(&c->communication_data_type)},
      {"checkpoint",
       [c, w](const json& v, const std::string& p) {
         return Walk(v, p,
                     {{"use_node_local_storage", Bool(&c->checkpoint.use_node_local_storage)}}, w);
       }},
  };
}

// DeepSpeed reads only the top-level "aio"; a "zero_optimization.aio" is used when it is alone.
absl::Status ParseAio(const json* top_aio, const json* nested_aio, AioConfig* aio,
                      std::vector<std::string>* w) {
  if (top_aio != nullptr && nested_aio != nullptr) {
    w->push_back(
        "DeepSpeed config has both a top-level \"aio\" and \"zero_optimization.aio\"; the "
        "top-level one is used (DeepSpeed reads only that) and zero_optimization.aio is ignored");
  }
  if (top_aio != nullptr) return Walk(*top_aio, "aio", AioKeys(aio), w);
  if (nested_aio != nullptr) return Walk(*nested_aio, "zero_optimization.aio", AioKeys(aio), w);
  return absl::OkStatus();
}

}  // namespace

const char* OffloadDeviceName(OffloadDevice device) {
  switch (device) {
    case OffloadDevice::kCpu:
      return "cpu";
    case OffloadDevice::kNvme:
      return "nvme";
    case OffloadDevice::kNone:
      break;
  }
  return "none";
}

const char* DeepSpeedDtypeName(DeepSpeedDtype dtype) {
  switch (dtype) {
    case DeepSpeedDtype::kBfloat16:
      return "bfloat16";
    case DeepSpeedDtype::kFloat16:
      return "float16";
    case DeepSpeedDtype::kFloat32:
      break;
  }
  return "float32";
}

bool DeepSpeedConfig::IsOffload() const {
  return (zero_optimization.offload_optimizer &&
          zero_optimization.offload_optimizer->device != OffloadDevice::kNone) ||
         (zero_optimization.offload_param &&
          zero_optimization.offload_param->device != OffloadDevice::kNone);
}

absl::StatusOr<DeepSpeedConfig> ParseDeepSpeedConfig(const json& doc, const std::string& source,
                                                     std::vector<std::string>* warnings) {
  std::vector<std::string> local;
  std::vector<std::string>* w = warnings != nullptr ? warnings : &local;
  const std::string where = absl::StrCat("DeepSpeed config ", source);
  if (!doc.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": expected a JSON object at the top level, got ", doc.dump()));
  }
  DeepSpeedConfig c;
  c.raw = doc;
  c.source = source;
  const json* nested_aio = nullptr;
  const json* top_aio = nullptr;
  std::vector<Key> keys = {
      {"zero_optimization",
       [&](const json& v, const std::string&) { return ParseZero(v, &c, &nested_aio, w); }},
      {"aio",
       [&](const json& v, const std::string&) {
         top_aio = &v;
         return absl::OkStatus();
       }},
  };
  for (Key& k : PrecisionKeys(&c, w)) keys.push_back(std::move(k));
  for (Key& k : TrainingKeys(&c, w)) keys.push_back(std::move(k));
  RETURN_IF_ERROR_CTX(Walk(doc, "", keys, w), where);
  RETURN_IF_ERROR_CTX(ParseAio(top_aio, nested_aio, &c.aio, w), where);
  return c;
}

absl::StatusOr<DeepSpeedConfig> LoadDeepSpeedConfig(const std::string& path_or_json,
                                                    std::vector<std::string>* warnings) {
  const size_t first = path_or_json.find_first_not_of(" \t\r\n");
  const bool inline_json = first != std::string::npos && path_or_json[first] == '{';
  std::string source = inline_json ? "<inline JSON>" : path_or_json;
  std::string text = path_or_json;
  if (!inline_json) {
    if (path_or_json.empty()) {
      return absl::InvalidArgumentError(
          "DeepSpeed config: empty path; pass a JSON file path or inline JSON starting with '{'");
    }
    ASSIGN_OR_RETURN(text, base::ReadFile(path_or_json), "DeepSpeed config");
  }
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::exception& e) {  // parse_error, and out_of_range for a number like 1e999
    return absl::InvalidArgumentError(
        absl::StrCat("DeepSpeed config ", source, ": not valid JSON: ", e.what(),
                     " (DeepSpeed configs are strict JSON: no trailing commas, no comments, "
                     "numbers within the range of a double)"));
  }
  return ParseDeepSpeedConfig(doc, source, warnings);
}

}  // namespace loom::args
