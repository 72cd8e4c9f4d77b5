// --fsdp / --fsdp_config resolution (TrainingArguments `fsdp`, `fsdp_config`) in HF 4.41's
// __post_init__ order; contract in fsdp_config.h.
#include "args/fsdp_config.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "args/parser.h"
#include "base/file_util.h"
#include "base/status_macros.h"

namespace loom::args {
namespace {

using json = nlohmann::ordered_json;

constexpr const char* kFlagKeys[] = {"forward_prefetch",
                                     "limit_all_gathers",
                                     "use_orig_params",
                                     "sync_module_states",
                                     "cpu_ram_efficient_loading",
                                     "activation_checkpointing",
                                     "xla",
                                     "xla_fsdp_v2",
                                     "xla_fsdp_grad_ckpt"};

const std::vector<std::string>& KnownKeys() {
  static const auto* keys = [] {
    auto* k = new std::vector<std::string>{"min_num_params", "transformer_layer_cls_to_wrap",
                                           "backward_prefetch", "xla_fsdp_settings"};
    k->insert(k->end(), std::begin(kFlagKeys), std::end(kFlagKeys));
    return k;
  }();
  return *keys;
}

bool IsKnown(const std::string& key) {
  return std::find(KnownKeys().begin(), KnownKeys().end(), key) != KnownKeys().end();
}

absl::Status BadValue(const std::string& key, absl::string_view expected, const json& value) {
  return absl::InvalidArgumentError(
      absl::StrCat("--fsdp_config: ", key, " must be ", expected, ", got ", value.dump()));
}

// A flag: true/false, or "true"/"false" in any case (HF passes the text on to accelerate).
absl::StatusOr<bool> Flag(const json& cfg, const char* key, bool fallback) {
  auto it = cfg.find(key);
  if (it == cfg.end() || it->is_null()) return fallback;
  if (it->is_boolean()) return it->get<bool>();
  if (it->is_string()) {
    const std::string s = absl::AsciiStrToLower(it->get<std::string>());
    if (s == "true" || s == "false") return s == "true";
  }
  return BadValue(key, "true or false", *it);
}

absl::StatusOr<int64_t> MinNumParams(const json& cfg) {
  auto it = cfg.find("min_num_params");
  if (it == cfg.end() || it->is_null()) return 0;
  if (it->is_number_unsigned() || it->is_number_integer()) {
    if (it->is_number_integer() && !it->is_number_unsigned() && it->get<int64_t>() < 0) {
      return BadValue("min_num_params", "a non-negative integer", *it);
    }
    return it->get<int64_t>();
  }
  if (it->is_number_float()) {  // 1e8
    const double d = it->get<double>();
    if (d >= 0 && d < 9.2e18 && d == std::floor(d)) return static_cast<int64_t>(d);
  }
  return BadValue("min_num_params", "a non-negative integer", *it);
}

absl::StatusOr<std::vector<std::string>> ClsToWrap(const json& cfg) {
  std::vector<std::string> out;
  auto it = cfg.find("transformer_layer_cls_to_wrap");
  if (it == cfg.end() || it->is_null()) return out;
  if (it->is_string()) return std::vector<std::string>{it->get<std::string>()};
  if (it->is_array() &&
      std::all_of(it->begin(), it->end(), [](const json& v) { return v.is_string(); })) {
    for (const json& v : *it) out.push_back(v.get<std::string>());
    return out;
  }
  return BadValue("transformer_layer_cls_to_wrap", "a class name or a list of class names", *it);
}

absl::StatusOr<std::optional<FsdpBackwardPrefetchPolicy>> BackwardPrefetch(const json& cfg) {
  auto it = cfg.find("backward_prefetch");
  if (it == cfg.end() || it->is_null()) return std::nullopt;
  const std::string s = it->is_string() ? absl::AsciiStrToLower(it->get<std::string>()) : "";
  if (s == "backward_pre") return FsdpBackwardPrefetchPolicy::kBackwardPre;
  if (s == "backward_post") return FsdpBackwardPrefetchPolicy::kBackwardPost;
  if (s == "no_prefetch") return FsdpBackwardPrefetchPolicy::kNoPrefetch;
  return BadValue("backward_prefetch", "\"backward_pre\" or \"backward_post\" (or \"no_prefetch\")",
                  *it);
}

// Reads every known key of a (resolved or not) fsdp_config with its type.
absl::StatusOr<FsdpConfig> Typed(const json& cfg) {
  FsdpConfig c;
  ASSIGN_OR_RETURN(c.min_num_params, MinNumParams(cfg));
  ASSIGN_OR_RETURN(c.transformer_layer_cls_to_wrap, ClsToWrap(cfg));
  ASSIGN_OR_RETURN(c.backward_prefetch, BackwardPrefetch(cfg));
  bool* const flags[] = {&c.forward_prefetch,
                         &c.limit_all_gathers,
                         &c.use_orig_params,
                         &c.sync_module_states,
                         &c.cpu_ram_efficient_loading,
                         &c.activation_checkpointing,
                         &c.xla,
                         &c.xla_fsdp_v2,
                         &c.xla_fsdp_grad_ckpt};
  for (size_t i = 0; i < std::size(kFlagKeys); ++i) {
    ASSIGN_OR_RETURN(*flags[i], Flag(cfg, kFlagKeys[i], *flags[i]));
  }
  if (auto it = cfg.find("xla_fsdp_settings"); it != cfg.end() && !it->is_null()) {
    if (!it->is_object()) return BadValue("xla_fsdp_settings", "an object", *it);
    c.xla_fsdp_settings = *it;
  }
  return c;
}

void WarnUnknownKeys(const json& cfg, bool inline_json, std::vector<std::string>* warnings) {
  for (const auto& [key, value] : cfg.items()) {
    if (IsKnown(key)) continue;
    if (inline_json && absl::StartsWith(key, "fsdp_") && IsKnown(key.substr(5))) {
      warnings->push_back(absl::StrCat("--fsdp_config: key \"", key,
                                       "\" is ignored: HF strips the fsdp_ prefix only when it "
                                       "reads a config file, not from inline JSON; write \"",
                                       key.substr(5), "\""));
      continue;
    }
    const std::string best = ClosestName(key, KnownKeys());
    warnings->push_back(absl::StrCat(
        "--fsdp_config: unknown key \"", key, "\" is ignored",
        best.empty() ? absl::StrCat(" (known keys: ", absl::StrJoin(KnownKeys(), ", "), ")")
                     : absl::StrCat("; did you mean \"", best, "\"?")));
  }
}

absl::Status CheckFsdpOptions(const TrainingArguments& a) {
  std::set<std::string> opts(a.fsdp().begin(), a.fsdp().end());
  if (opts == std::set<std::string>{"offload"}) {
    return absl::InvalidArgumentError(
        "`--fsdp offload` can't work on its own. It needs to be added to `--fsdp full_shard` or "
        "`--fsdp shard_grad_op`. For example, `--fsdp \"full_shard offload\"`.");
  }
  if (opts.count("full_shard") && opts.count("shard_grad_op")) {
    return absl::InvalidArgumentError(
        "`--fsdp full_shard` is not compatible with `--fsdp shard_grad_op`.");
  }
  if (opts.count("offload") && !opts.count("full_shard") && !opts.count("shard_grad_op")) {
    return absl::InvalidArgumentError(
        "--fsdp offload is only compatible with full_shard and shard_grad_op, e.g. "
        "`--fsdp \"full_shard offload\"`");
  }
  const int strategies = opts.count("full_shard") + opts.count("shard_grad_op") +
                         opts.count("no_shard") + opts.count("hybrid_shard") +
                         opts.count("hybrid_shard_zero2");
  if (strategies > 1) {
    return absl::InvalidArgumentError(absl::StrCat("--fsdp takes one sharding strategy, got \"",
                                                   absl::StrJoin(a.fsdp(), " "), "\""));
  }
  return absl::OkStatus();
}

// The --fsdp_config value as a JSON object: inline JSON as given, a file with prefixes stripped
// (HF pops each fsdp_* key and re-inserts it unprefixed at the end).
absl::StatusOr<json> LoadGiven(const TrainingArguments& a, bool* inline_json,
                               std::vector<std::string>* warnings) {
  *inline_json = false;
  if (!a.has_fsdp_config()) return json::object();
  const std::string& v = a.fsdp_config();
  if (!v.empty() && v[0] == '{') {
    *inline_json = true;
    json cfg = json::parse(v, nullptr, false);
    if (cfg.is_discarded() || !cfg.is_object()) {
      return absl::InvalidArgumentError("--fsdp_config: not a JSON object: " + v);
    }
    return cfg;
  }
  if (a.fsdp_size() == 0) {
    warnings->push_back("`--fsdp_config` is useful only when `--fsdp` is specified.");
  }
  ASSIGN_OR_RETURN(std::string text, base::ReadFile(v), "--fsdp_config");
  json loaded = json::parse(text, nullptr, false);
  if (loaded.is_discarded() || !loaded.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat("--fsdp_config: ", v, " is not a JSON object"));
  }
  json cfg = json::object();
  json prefixed = json::object();
  for (auto& [k, val] : loaded.items()) {
    if (absl::StartsWith(k, "fsdp_")) {
      prefixed[k.substr(5)] = val;
    } else {
      cfg[k] = val;
    }
  }
  for (auto& [k, val] : prefixed.items()) cfg[k] = val;
  return cfg;
}

}  // namespace

absl::Status ResolveFsdp(TrainingArguments* a, std::vector<std::string>* warnings) {
  RETURN_IF_ERROR(CheckFsdpOptions(*a));
  bool inline_json = false;
  ASSIGN_OR_RETURN(json cfg, LoadGiven(*a, &inline_json, warnings));
  WarnUnknownKeys(cfg, inline_json, warnings);
  ASSIGN_OR_RETURN(FsdpConfig typed, Typed(cfg));  // every value checked before it is used

  if (a->fsdp_min_num_params() > 0) {
    warnings->push_back("using `--fsdp_min_num_params` is deprecated. Use fsdp_config instead ");
  }
  const int64_t min_params = std::max<int64_t>(typed.min_num_params, a->fsdp_min_num_params());
  cfg["min_num_params"] = min_params;
  if (cfg.contains("transformer_layer_cls_to_wrap") &&
      cfg["transformer_layer_cls_to_wrap"].is_string()) {
    cfg["transformer_layer_cls_to_wrap"] = json::array({cfg["transformer_layer_cls_to_wrap"]});
  }
  if (a->has_fsdp_transformer_layer_cls_to_wrap()) {
    warnings->push_back(
        "using `--fsdp_transformer_layer_cls_to_wrap` is deprecated. Use fsdp_config instead ");
    json list = cfg.value("transformer_layer_cls_to_wrap", json::array());
    if (!list.is_array()) list = json::array();  // null
    list.push_back(a->fsdp_transformer_layer_cls_to_wrap());
    cfg["transformer_layer_cls_to_wrap"] = list;
  }
  const bool has_cls = cfg.contains("transformer_layer_cls_to_wrap") &&
                       !cfg["transformer_layer_cls_to_wrap"].is_null();
  if (a->fsdp_size() == 0 && min_params > 0) {
    warnings->push_back("`min_num_params` is useful only when `--fsdp` is specified.");
  }
  if (a->fsdp_size() == 0 && has_cls) {
    warnings->push_back(
        "`transformer_layer_cls_to_wrap` is useful only when `--fsdp` is specified.");
  }
  if (a->fsdp_size() > 0 && min_params > 0 && has_cls) {
    return absl::InvalidArgumentError(
        "`min_num_params` and `transformer_layer_cls_to_wrap` are mutually exclusive.");
  }
  for (const char* k : {"xla", "xla_fsdp_v2", "xla_fsdp_grad_ckpt"}) {
    if (!cfg.contains(k)) cfg[k] = false;
  }
  if (typed.cpu_ram_efficient_loading && !typed.sync_module_states) {
    return absl::InvalidArgumentError(
        "--fsdp_config: `sync_module_states` must be `\"True\"` if `cpu_ram_efficient_loading` "
        "is `\"True\"`");
  }
  a->set_fsdp_config(cfg.dump());
  return absl::OkStatus();
}

absl::StatusOr<FsdpConfig> FsdpConfigOf(const TrainingArguments& args) {
  if (!args.has_fsdp_config()) return FsdpConfig{};
  json cfg = json::parse(args.fsdp_config(), nullptr, false);
  if (cfg.is_discarded() || !cfg.is_object()) {
    return absl::InvalidArgumentError(
        "--fsdp_config: not resolved JSON; run PostInit on the TrainingArguments first (got " +
        args.fsdp_config() + ")");
  }
  return Typed(cfg);
}

}  // namespace loom::args
