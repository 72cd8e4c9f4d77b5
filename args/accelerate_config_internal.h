// Internals of accelerate_config: the table of settings shared by the YAML reader and the
// `accelerate launch` flag parser. Not part of the public API.
#ifndef LOOM_ARGS_ACCELERATE_CONFIG_INTERNAL_H_
#define LOOM_ARGS_ACCELERATE_CONFIG_INTERNAL_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "args/accelerate_config.h"

namespace loom::args::accelerate_internal {

using Values = std::vector<std::string>;

enum class Section { kTop, kFsdp, kDeepSpeed };
enum class CliKind { kValue, kBool, kStoreTrue };  // kBool: the value is optional on the CLI

// One configuration key: where it lives in the YAML, its CLI flag(s), and how to set it from the
// text of its value(s). `where` names the key or flag in error messages.
struct Setting {
  Section section;
  std::string key;               // YAML key inside its section
  std::vector<std::string> cli;  // CLI flag names without "--" (empty: YAML only)
  CliKind kind = CliKind::kValue;
  bool list = false;  // a YAML sequence is accepted
  std::function<absl::Status(AccelerateConfig*, const Values&, const std::string& where)> set;
};

const std::vector<Setting>& Settings();

// "fsdp_config", "deepspeed_config" or "" (top level).
const char* SectionName(Section s);

// Flags that exist only on the command line (the YAML says distributed_type instead).
bool CliOnly(const Setting& s);

// YAML / Python boolean words (true/false/yes/no/on/off/t/f/y/n/1/0, any case).
absl::Status ToBool(const std::string& s, const std::string& where, bool* out);

// Cross-key rules shared by the YAML and CLI paths; may add warnings.
absl::Status Validate(const AccelerateConfig& c, std::vector<std::string>* warnings);

}  // namespace loom::args::accelerate_internal

#endif  // LOOM_ARGS_ACCELERATE_CONFIG_INTERNAL_H_
