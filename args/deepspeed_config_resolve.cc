// TrainerDeepSpeedConfig: HF's HfTrainerDeepSpeedConfig (transformers integrations/deepspeed.py,
// transformers 4.41) over the raw JSON document; the typed view is re-read after each
// phase so both always agree. Also the Python-semantics helpers the mismatch messages need.
#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "args/deepspeed_config.h"
#include "args/field_value.h"
#include "args/derived.h"
#include "base/status_macros.h"

namespace loom::args {
namespace {

using json = nlohmann::ordered_json;

// HF's find_config_node: the object holding the last component of `ds_key`, or nullptr when a
// node on the way is absent (or not an object).
const json* FindNode(const json& root, const std::string& ds_key, std::string* leaf) {
  std::vector<std::string> nodes = absl::StrSplit(ds_key, '.');
  *leaf = nodes.back();
  nodes.pop_back();
  const json* config = &root;
  for (const std::string& node : nodes) {
    if (!config->is_object()) return nullptr;
    auto it = config->find(node);
    if (it == config->end() || !it->is_object()) return nullptr;
    config = &*it;
  }
  return config->is_object() ? config : nullptr;
}

json* FindNode(json& root, const std::string& ds_key, std::string* leaf) {
  return const_cast<json*>(FindNode(static_cast<const json&>(root), ds_key, leaf));
}

std::string PythonList(const std::vector<std::string>& items) {
  std::vector<std::string> quoted;
  for (const auto& s : items) quoted.push_back("'" + s + "'");
  return "[" + absl::StrJoin(quoted, ", ") + "]";
}

bool Truthy(const json& v) {
  if (v.is_null()) return false;
  if (v.is_boolean()) return v.get<bool>();
  if (v.is_number()) return v.get<double>() != 0;
  if (v.is_string() || v.is_array() || v.is_object()) return !v.empty();
  return false;
}

std::string PythonRepr(const json& v);

std::string PythonStrRepr(const std::string& s) {
  const bool dq = s.find('\'') != std::string::npos && s.find('"') == std::string::npos;
  const char q = dq ? '"' : '\'';
  std::string out(1, q);
  for (char ch : s) {
    switch (ch) {
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (ch == q) out += '\\';
        out += ch;
    }
  }
  return out + q;
}

std::string PythonRepr(const json& v) {
  if (v.is_string()) return PythonStrRepr(v.get<std::string>());
  if (v.is_array()) {
    std::vector<std::string> parts;
    for (const auto& e : v) parts.push_back(PythonRepr(e));
    return "[" + absl::StrJoin(parts, ", ") + "]";
  }
  if (v.is_object()) {
    std::vector<std::string> parts;
    for (const auto& [k, e] : v.items()) parts.push_back(PythonStrRepr(k) + ": " + PythonRepr(e));
    return "{" + absl::StrJoin(parts, ", ") + "}";
  }
  return PythonStr(v);
}

}  // namespace

DeepSpeedDtype DecideDtype(const json& raw) {
  auto get = [&raw](const char* section) -> const json* {
    if (!raw.is_object()) return nullptr;
    auto s = raw.find(section);
    if (s == raw.end() || !s->is_object()) return nullptr;
    auto e = s->find("enabled");
    return e == s->end() ? nullptr : &*e;
  };
  const json* bf16 = get("bf16");
  if (bf16 != nullptr && Truthy(*bf16)) return DeepSpeedDtype::kBfloat16;
  const json* fp16 = get("fp16");
  if (fp16 != nullptr && !fp16->is_null() && !Truthy(*fp16)) return DeepSpeedDtype::kFloat32;
  return DeepSpeedDtype::kFloat16;
}

std::optional<int64_t> HiddenSizeOf(const json& model_config) {
  auto from = [](const json& cfg, std::optional<int64_t>* out) -> bool {
    if (!cfg.is_object()) return false;
    if (cfg.contains("hidden_size")) {
      if (cfg["hidden_size"].is_number_integer()) *out = cfg["hidden_size"].get<int64_t>();
      return true;
    }
    if (cfg.contains("hidden_sizes")) {
      for (const auto& h : cfg["hidden_sizes"]) {
        if (h.is_number_integer())
          *out = std::max(out->value_or(h.get<int64_t>()), h.get<int64_t>());
      }
      return true;
    }
    // Encoder-decoder configs (T5, BART, Marian, ...) map hidden_size to d_model through
    // their attribute_map, so HF's `hasattr(model.config, "hidden_size")` sees d_model.
    if (cfg.contains("d_model")) {
      if (cfg["d_model"].is_number_integer()) *out = cfg["d_model"].get<int64_t>();
      return true;
    }
    return false;
  };
  std::optional<int64_t> size;
  if (from(model_config, &size)) return size;
  if (model_config.is_object() && model_config.contains("text_config")) {
    from(model_config["text_config"], &size);
  }
  return size;
}

std::string PythonStr(const json& v) {
  if (v.is_null()) return "None";
  if (v.is_boolean()) return v.get<bool>() ? "True" : "False";
  if (v.is_number_unsigned()) return std::to_string(v.get<uint64_t>());
  if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
  if (v.is_number_float()) return PythonFloat(v.get<double>());
  if (v.is_string()) return v.get<std::string>();
  return PythonRepr(v);
}

bool PythonEqual(const json& a, const json& b) {
  auto numeric = [](const json& v) { return v.is_number() || v.is_boolean(); };
  if (numeric(a) && numeric(b)) {
    auto integral = [](const json& v) { return v.is_number_integer() || v.is_boolean(); };
    auto as_int = [](const json& v) -> int64_t {
      return v.is_boolean() ? (v.get<bool>() ? 1 : 0) : v.get<int64_t>();
    };
    if (integral(a) && integral(b)) {
      if (a.is_number_unsigned() || b.is_number_unsigned()) {
        if ((a.is_number_unsigned() ? 0 : as_int(a)) < 0 ||
            (b.is_number_unsigned() ? 0 : as_int(b)) < 0) {
          return false;
        }
        auto as_u = [&](const json& v) {
          return v.is_number_unsigned() ? v.get<uint64_t>() : static_cast<uint64_t>(as_int(v));
        };
        return as_u(a) == as_u(b);
      }
      return as_int(a) == as_int(b);
    }
    auto as_d = [&](const json& v) {
      return v.is_boolean() ? (v.get<bool>() ? 1.0 : 0.0) : v.get<double>();
    };
    return as_d(a) == as_d(b);
  }
  if (a.is_array() && b.is_array()) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
      if (!PythonEqual(a[i], b[i])) return false;
    }
    return true;
  }
  if (a.is_object() && b.is_object()) {
    if (a.size() != b.size()) return false;
    for (const auto& [k, v] : a.items()) {
      auto it = b.find(k);
      if (it == b.end() || !PythonEqual(v, *it)) return false;
    }
    return true;
  }
  if (a.is_string() && b.is_string()) return a.get<std::string>() == b.get<std::string>();
  return a.is_null() && b.is_null();
}

TrainerDeepSpeedConfig::TrainerDeepSpeedConfig(DeepSpeedConfig config)
    : config_(std::move(config)) {}

absl::StatusOr<DeepSpeedDtype> TrainerDeepSpeedConfig::dtype() const {
  if (!dtype_.has_value()) {
    return absl::FailedPreconditionError(
        "TrainerDeepSpeedConfig: TrainerConfigProcess() wasn't called yet to tell dtype");
  }
  return *dtype_;
}

bool TrainerDeepSpeedConfig::IsAuto(const std::string& ds_key) const {
  std::string leaf;
  const json* node = FindNode(config_.raw, ds_key, &leaf);
  if (node == nullptr) return false;
  auto it = node->find(leaf);
  return it != node->end() && *it == "auto";
}

void TrainerDeepSpeedConfig::FillMatch(const std::string& ds_key, const json& hf_value,
                                       const std::string& hf_name, bool must_match) {
  std::string leaf;
  json* node = FindNode(config_.raw, ds_key, &leaf);
  if (node == nullptr) return;
  auto it = node->find(leaf);
  if (it != node->end() && *it == "auto") {
    *it = hf_value;
    return;
  }
  if (!must_match || it == node->end() || it->is_null()) return;
  if (!PythonEqual(*it, hf_value)) {
    mismatches_.push_back(absl::StrCat("- ds ", ds_key, "=", PythonStr(*it), " vs hf ", hf_name,
                                       "=", PythonStr(hf_value)));
  }
}

absl::Status TrainerDeepSpeedConfig::Reparse() {
  ASSIGN_OR_RETURN(DeepSpeedConfig typed, ParseDeepSpeedConfig(config_.raw, config_.source));
  config_ = std::move(typed);
  return absl::OkStatus();
}

absl::Status TrainerDeepSpeedConfig::TrainerConfigProcess(const TrainingArguments& args,
                                                          int world_size) {
  if (world_size < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("TrainerConfigProcess: world_size must be >= 1, got ", world_size));
  }
  const bool check_batch = !args.auto_find_batch_size();
  const int64_t micro = args.per_device_train_batch_size();  // HF ignores per_gpu_* here
  const int64_t train_batch_size = world_size * micro * args.gradient_accumulation_steps();
  FillMatch("train_micro_batch_size_per_gpu", micro, "per_device_train_batch_size", check_batch);
  FillMatch("gradient_accumulation_steps", args.gradient_accumulation_steps(),
            "gradient_accumulation_steps");
  FillMatch("train_batch_size", train_batch_size, "train_batch_size (calculated)", check_batch);
  FillMatch("gradient_clipping", args.max_grad_norm(), "max_grad_norm");

  FillMatch("optimizer.params.lr", args.learning_rate(), "learning_rate");
  FillMatch("optimizer.params.betas", json::array({args.adam_beta1(), args.adam_beta2()}),
            "adam_beta1+adam_beta2");
  FillMatch("optimizer.params.eps", args.adam_epsilon(), "adam_epsilon");
  FillMatch("optimizer.params.weight_decay", args.weight_decay(), "weight_decay");

  FillMatch("scheduler.params.warmup_min_lr", 0, "", /*must_match=*/false);  // not a trainer arg
  FillMatch("scheduler.params.warmup_max_lr", args.learning_rate(), "learning_rate");

  // fp16 backend: see the header comment ("auto"/"cpu_amp" -> amp, "apex" -> apex).
  const bool half = args.fp16() || args.fp16_full_eval();
  const std::string backend =
      !half ? "" : (args.half_precision_backend() == "apex" ? "apex" : "amp");

  if (args.save_on_each_node()) {
    // DeepSpeed assumes shared storage by default.
    json& checkpoint = config_.raw["checkpoint"];
    if (!checkpoint.is_object()) checkpoint = json::object();
    checkpoint["use_node_local_storage"] = true;
  }
  FillMatch("fp16.enabled", half && backend == "amp", "fp16|fp16_full_eval+fp16_backend(amp)");
  FillMatch("amp.enabled", backend == "apex", "fp16+fp16_backend(apex)");
  FillMatch("amp.opt_level", args.fp16_opt_level(), "fp16_opt_level");
  FillMatch("bf16.enabled", args.bf16() || args.bf16_full_eval(), "bf16|bf16_full_eval");

  dtype_ = DecideDtype(config_.raw);
  return Reparse();
}

absl::Status TrainerDeepSpeedConfig::TrainerConfigFinalize(const TrainingArguments& args,
                                                           std::optional<int64_t> hidden_size,
                                                           int64_t num_training_steps) {
  const std::vector<std::string> hidden_size_keys = {
      "zero_optimization.reduce_bucket_size",
      "zero_optimization.stage3_prefetch_bucket_size",
      "zero_optimization.stage3_param_persistence_threshold",
  };
  std::vector<std::string> auto_keys;
  for (const auto& k : hidden_size_keys) {
    if (IsAuto(k)) auto_keys.push_back(k);
  }
  if (!auto_keys.empty()) {
    if (!hidden_size.has_value()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "The model's config file has neither `hidden_size` nor `hidden_sizes` entry, therefore "
          "it's not possible to automatically fill out the following `auto` entries in the "
          "DeepSpeed config file: ",
          PythonList(auto_keys),
          ". You can fix that by replacing `auto` values for these keys with an integer value of "
          "your choice."));
    }
    const int64_t h = *hidden_size;
    // h * h (and 0.9 * h * h, 10 * h) must be a positive 64-bit integer; Python's ints have no
    // limit, but DeepSpeed's bucket sizes are 64-bit on the C++ side.
    constexpr int64_t kMaxHidden = 3037000499;  // floor(sqrt(2**63 - 1))
    if (h < 1 || h > kMaxHidden) {
      return absl::InvalidArgumentError(absl::StrCat(
          "The model's hidden size ", h,
          " (config.json hidden_size, hidden_sizes or d_model) "
          "is out of range for the `auto` entries ",
          PythonList(auto_keys),
          " of the DeepSpeed config, which are hidden_size * hidden_size and must fit in 64 bits: "
          "it must be between 1 and 3037000499. Fix the model's config.json, or replace `auto` "
          "for these keys with an integer value of your choice."));
    }
    FillMatch("zero_optimization.reduce_bucket_size", h * h, "", /*must_match=*/false);
    if (config_.IsZero3()) {
      // Python evaluates 0.9 * h * h left to right in double, then int() truncates.
      FillMatch("zero_optimization.stage3_prefetch_bucket_size",
                static_cast<int64_t>(0.9 * static_cast<double>(h) * static_cast<double>(h)), "",
                /*must_match=*/false);
      FillMatch("zero_optimization.stage3_param_persistence_threshold", 10 * h, "",
                /*must_match=*/false);
    }
  }
  FillMatch("scheduler.params.total_num_steps", num_training_steps,
            "num_training_steps (calculated)");
  FillMatch("scheduler.params.warmup_num_steps", GetWarmupSteps(args, num_training_steps),
            "warmup_steps");
  RETURN_IF_ERROR(Reparse());
  RETURN_IF_ERROR(CheckMismatches());
  return CheckAdafactor(args);
}

absl::Status TrainerDeepSpeedConfig::CheckMismatches() const {
  if (mismatches_.empty()) return absl::OkStatus();
  // The documents' fp16 configs: --fp16 is CUDA only, so on a CPU the config itself must change.
  const bool fp16 = std::any_of(mismatches_.begin(), mismatches_.end(), [](const std::string& m) {
    return absl::StartsWith(m, "- ds fp16.enabled=");
  });
  return absl::InvalidArgumentError(absl::StrCat(
      "Please correct the following DeepSpeed config values that mismatch TrainingArguments "
      "values:\n",
      absl::StrJoin(mismatches_, "\n"),
      "\nThe easiest method is to set these DeepSpeed config values to 'auto'.",
      fp16 ? "\nfp16 (and --fp16) trains on CUDA only. On a CPU, replace the config's \"fp16\" "
             "section with \"bf16\": {\"enabled\": \"auto\"} and pass --bf16 (ZeRO stages 0-2), "
             "or set \"fp16\": {\"enabled\": false} to train in fp32 (any stage)."
           : ""));
}

absl::Status TrainerDeepSpeedConfig::CheckAdafactor(const TrainingArguments& args) const {
  if (config_.raw.contains("optimizer") && (args.adafactor() || args.optim() == "adafactor")) {
    return absl::InvalidArgumentError(
        "--adafactor was passed, but also found `optimizer` configured in the DeepSpeed config. "
        "Only one optimizer can be configured.");
  }
  return absl::OkStatus();
}

}  // namespace loom::args
