// accelerate YAML config reader and `accelerate launch` flag parser, both driven by the settings
// table of accelerate_config_settings.cc. The TrainingArguments mapping lives in
// accelerate_config_flags.cc.
#include "args/accelerate_config.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "args/accelerate_config_internal.h"
#include "args/parser.h"
#include "base/file_util.h"
#include "base/status_macros.h"
#include "yaml-cpp/yaml.h"

namespace loom::args {
namespace {

using accelerate_internal::CliKind;
using accelerate_internal::CliOnly;
using accelerate_internal::Section;
using accelerate_internal::SectionName;
using accelerate_internal::Setting;
using accelerate_internal::Settings;
using accelerate_internal::ToBool;
using accelerate_internal::Validate;
using accelerate_internal::Values;

// YAML node -> values: a scalar gives one value, a sequence of scalars several.
absl::Status NodeValues(const YAML::Node& node, const Setting& s, const std::string& where,
                        Values* out) {
  if (node.IsScalar()) {
    out->push_back(node.Scalar());
    return absl::OkStatus();
  }
  if (node.IsSequence() && s.list) {
    for (const auto& item : node) {
      if (!item.IsScalar()) {
        return absl::InvalidArgumentError(absl::StrCat(where, ": expected a list of strings"));
      }
      out->push_back(item.Scalar());
    }
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(where, ": expected ",
                                                 s.list ? "a value or a list" : "a single value",
                                                 ", got a ", node.IsMap() ? "mapping" : "list"));
}

void Unknown(const std::string& where, const std::string& key, Section section,
             std::vector<std::string>* warnings) {
  std::vector<std::string> keys;
  for (const Setting& s : Settings()) {
    if (s.section == section && !CliOnly(s)) keys.push_back(s.key);
  }
  const std::string best = ClosestName(key, keys);
  warnings->push_back(
      absl::StrCat("unknown accelerate config key \"", where, "\" is ignored",
                   best.empty() ? "" : absl::StrCat("; did you mean \"", best, "\"?")));
}

absl::Status ParseSection(const YAML::Node& map, Section section, AccelerateConfig* c,
                          std::vector<std::string>* warnings) {
  const std::string prefix = SectionName(section);
  for (const auto& kv : map) {
    const std::string key = kv.first.as<std::string>();
    const std::string where = prefix.empty() ? key : prefix + "." + key;
    const YAML::Node& value = kv.second;
    if (section == Section::kTop && (key == "fsdp_config" || key == "deepspeed_config")) {
      if (value.IsNull()) continue;
      if (!value.IsMap()) {
        return absl::InvalidArgumentError(absl::StrCat(key, ": expected a mapping"));
      }
      const bool fsdp = key == "fsdp_config";
      if (fsdp && !c->fsdp_config) c->fsdp_config.emplace();
      if (!fsdp && !c->deepspeed_config) c->deepspeed_config.emplace();
      RETURN_IF_ERROR(
          ParseSection(value, fsdp ? Section::kFsdp : Section::kDeepSpeed, c, warnings));
      continue;
    }
    auto it = std::find_if(Settings().begin(), Settings().end(), [&](const Setting& s) {
      return s.section == section && !CliOnly(s) &&
             (s.key == key ||
              (key == "fsdp_backward_prefetch" && s.key == "fsdp_backward_prefetch_policy"));
    });
    if (it == Settings().end()) {
      Unknown(where, key, section, warnings);
      continue;
    }
    if (value.IsNull()) continue;  // `key: null` / `key:` count as absent
    Values values;
    RETURN_IF_ERROR(NodeValues(value, *it, where, &values));
    RETURN_IF_ERROR(it->set(c, values, where));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<AccelerateConfig> ParseAccelerateConfigYaml(const std::string& yaml_text,
                                                           const std::string& source,
                                                           std::vector<std::string>* warnings) {
  std::vector<std::string> local;
  std::vector<std::string>* w = warnings != nullptr ? warnings : &local;
  const std::string ctx = "accelerate config " + source;
  AccelerateConfig c;
  try {
    YAML::Node root = YAML::Load(yaml_text);
    if (root.IsNull()) return c;  // an empty file: all defaults
    if (!root.IsMap()) {
      return absl::InvalidArgumentError(ctx + ": expected a mapping of keys at the top level");
    }
    RETURN_IF_ERROR_CTX(ParseSection(root, Section::kTop, &c, w), ctx);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(ctx, ": not valid YAML: ", e.what()));
  }
  RETURN_IF_ERROR_CTX(Validate(c, w), ctx);
  return c;
}

absl::StatusOr<AccelerateConfig> LoadAccelerateConfig(const std::string& path,
                                                      std::vector<std::string>* warnings) {
  ASSIGN_OR_RETURN(std::string text, base::ReadFile(path), "accelerate config");
  return ParseAccelerateConfigYaml(text, path, warnings);
}

namespace {

absl::Status ApplyFlags(const std::vector<std::string>& args, AccelerateLaunch* launch,
                        std::vector<std::string>* warnings, bool validate) {
  const std::string ctx = "accelerate launch";
  std::vector<std::string> modes;  // --use_fsdp / --use_deepspeed / --multi_gpu given
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (!absl::StartsWith(arg, "--") || arg == "--") {
      const size_t script = arg == "--" ? i + 1 : i;
      if (script < args.size()) {
        launch->training_script = args[script];
        launch->training_script_args.assign(args.begin() + script + 1, args.end());
      }
      break;
    }
    std::string name = arg.substr(2);
    std::optional<std::string> value;
    if (size_t eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    std::replace(name.begin(), name.end(), '-', '_');
    const std::string flag = "--" + name;
    if (name == "config_file") {
      if (!value) {
        if (i + 1 >= args.size())
          return absl::InvalidArgumentError(ctx + ": --config_file expects a path");
        value = args[++i];
      }
      launch->config_file = *value;
      continue;
    }
    auto it = std::find_if(Settings().begin(), Settings().end(), [&](const Setting& s) {
      return std::find(s.cli.begin(), s.cli.end(), name) != s.cli.end();
    });
    if (it == Settings().end()) {
      std::vector<std::string> flags;
      for (const Setting& s : Settings()) flags.insert(flags.end(), s.cli.begin(), s.cli.end());
      // Close spellings only: within half the name's length (at least 3).
      const std::string best =
          ClosestName(name, flags, std::max<size_t>(3, name.size() / 2) + 1);
      return absl::InvalidArgumentError(
          absl::StrCat(ctx, ": unknown flag ", flag,
                       best.empty() ? "" : absl::StrCat("; did you mean --", best, "?")));
    }
    if (!value) {
      bool dummy;
      const bool next_is_value = i + 1 < args.size() && !absl::StartsWith(args[i + 1], "--");
      if (it->kind == CliKind::kStoreTrue) {
        value = "true";
      } else if (it->kind == CliKind::kBool) {
        if (next_is_value && ToBool(args[i + 1], flag, &dummy).ok()) {
          value = args[++i];
        } else {
          value = "true";
        }
      } else if (next_is_value) {
        value = args[++i];
      } else {
        return absl::InvalidArgumentError(absl::StrCat(ctx, ": ", flag, " expects a value"));
      }
    }
    if (name == "use_fsdp" || name == "use_deepspeed" || name == "multi_gpu") {
      bool on = false;
      if (ToBool(*value, flag, &on).ok() && on) {
        if (!modes.empty() && modes.back() != name) {
          return absl::InvalidArgumentError(
              absl::StrCat(ctx, ": --", modes.back(), " and ", flag, " are mutually exclusive"));
        }
        modes.push_back(name);
      }
    }
    RETURN_IF_ERROR_CTX(it->set(&launch->config, {*value}, flag), ctx);
  }
  if (!validate) return absl::OkStatus();
  std::vector<std::string> local;
  return base::Annotate(Validate(launch->config, warnings != nullptr ? warnings : &local), ctx);
}

}  // namespace

absl::Status ApplyAccelerateLaunchFlags(const std::vector<std::string>& args,
                                        AccelerateLaunch* launch,
                                        std::vector<std::string>* warnings) {
  return ApplyFlags(args, launch, warnings, /*validate=*/true);
}

absl::StatusOr<AccelerateLaunch> ParseAccelerateLaunch(const std::vector<std::string>& args,
                                                       std::vector<std::string>* warnings) {
  AccelerateLaunch scratch;  // first pass: find --config_file (and check the flags' syntax)
  RETURN_IF_ERROR(ApplyFlags(args, &scratch, nullptr, /*validate=*/false));
  AccelerateLaunch launch;
  if (scratch.config_file) {
    ASSIGN_OR_RETURN(launch.config, LoadAccelerateConfig(*scratch.config_file, warnings));
  }
  RETURN_IF_ERROR(ApplyAccelerateLaunchFlags(args, &launch, warnings));
  return launch;
}

}  // namespace loom::args
