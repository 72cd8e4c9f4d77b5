// libFuzzer target for accelerate's YAML config (args/accelerate_config.h): any bytes as the
// file `accelerate config` writes must give an error or a config whose implied TrainingArguments
// flags (ImpliedTrainingArgumentsFlags) are an error or flags the training script accepts:
// --deepspeed JSON that LoadDeepSpeedConfig reads, --fsdp options and --fsdp_config JSON that
// ResolveFsdp resolves, and numbers for --gradient_accumulation_steps / --max_grad_norm.
// Any crash, sanitizer report, leak or uncaught exception (yaml-cpp throws) is a finding.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "args/accelerate_config.h"
#include "args/deepspeed_config.h"
#include "args/fsdp_config.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

using fuzz::Check;

void CheckFlags(const std::vector<std::string>& flags, bool user_ds_file) {
  loom::args::TrainingArguments args;
  bool has_fsdp_config = false;
  for (size_t i = 0; i < flags.size(); ++i) {
    const std::string& flag = flags[i];
    Check(flag.rfind("--", 0) == 0, "implied flags are --name [value] pairs");
    if (flag == "--bf16" || flag == "--fp16" || flag == "--use_cpu") continue;
    Check(i + 1 < flags.size(), "a valued flag has its value");
    const std::string& value = flags[++i];
    if (flag == "--deepspeed") {
      if (user_ds_file) continue;  // the user's deepspeed_config_file, passed on as given
      Check(loom::args::LoadDeepSpeedConfig(value).ok(), "the implied --deepspeed JSON loads");
    } else if (flag == "--fsdp") {
      for (absl::string_view option : absl::StrSplit(value, ' ')) {
        args.add_fsdp(std::string(option));
      }
    } else if (flag == "--fsdp_config") {
      args.set_fsdp_config(value);
      has_fsdp_config = true;
    } else if (flag == "--gradient_accumulation_steps") {
      int64_t n = 0;
      Check(absl::SimpleAtoi(value, &n) && n >= 1, "--gradient_accumulation_steps is >= 1");
    } else if (flag == "--max_grad_norm") {
      double x = 0;
      Check(absl::SimpleAtod(value, &x), "--max_grad_norm is a number");
    } else {
      Check(false, "ImpliedTrainingArgumentsFlags gives only the flags its contract lists");
    }
  }
  if (has_fsdp_config) {
    std::vector<std::string> warnings;
    Check(loom::args::ResolveFsdp(&args, &warnings).ok(),
          "the implied --fsdp / --fsdp_config resolve");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string yaml(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> warnings;
  absl::StatusOr<loom::args::AccelerateConfig> config =
      loom::args::ParseAccelerateConfigYaml(yaml, "fuzz.yaml", &warnings);
  if (!config.ok()) {
    Check(!config.status().message().empty(), "errors say what is wrong");
    return 0;
  }
  Check(config->machine_rank < config->num_machines, "machine_rank < num_machines");
  absl::StatusOr<std::vector<std::string>> flags =
      loom::args::ImpliedTrainingArgumentsFlags(*config);
  if (flags.ok()) {
    CheckFlags(*flags, config->deepspeed_config.has_value() &&
                           config->deepspeed_config->deepspeed_config_file.has_value());
  }
  return 0;
}
