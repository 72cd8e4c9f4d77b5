#include "launch/command_line.h"

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "base/status_macros.h"
#include "launch/accelerate_launch.h"
#include "launch/deepspeed_launch.h"

namespace loom::launch {
namespace {

std::string OptionName(const std::string& word) {
  std::string name = word.substr(2);
  if (size_t eq = name.find('='); eq != std::string::npos) name.resize(eq);
  return absl::StrReplaceAll(name, {{"-", "_"}});
}

bool IsTorchrunOption(const std::string& name) {
  for (const char* k : {"nproc_per_node", "nnodes", "node_rank", "master_addr", "master_port",
                        "standalone", "help"}) {
    if (name == k) return true;
  }
  return false;
}

// Number of leading words that are the launcher's own options (shared by all styles).
size_t LeadingLauncherOptions(const std::vector<std::string>& args) {
  size_t i = 0;
  while (i < args.size() && args[i].size() > 2 && args[i].rfind("--", 0) == 0) {
    std::string name = OptionName(args[i]);
    bool inline_value = args[i].find('=') != std::string::npos;
    if (name == "prefix_output") {
      i += 1;
    } else if (name == "tee" || name == "redirects" || name == "log_dir" ||
               name == "local_ranks_filter" || name == "grace_period_s") {
      i += inline_value ? 1 : 2;
    } else {
      break;
    }
  }
  return std::min(i, args.size());
}

}  // namespace

CommandLineStyle DetectStyle(const std::vector<std::string>& args) {
  size_t i = LeadingLauncherOptions(args);
  if (i >= args.size()) return CommandLineStyle::kTorchrun;
  const std::string& word = args[i];
  if (word == "-i" || word == "-e") return CommandLineStyle::kDeepSpeed;
  if (word.size() <= 2 || word.rfind("--", 0) != 0) return CommandLineStyle::kTorchrun;
  std::string name = OptionName(word);
  if (IsTorchrunOption(name)) return CommandLineStyle::kTorchrun;
  if (IsDeepSpeedOption(name)) return CommandLineStyle::kDeepSpeed;
  return CommandLineStyle::kAccelerate;
}

absl::StatusOr<LaunchOptions> ParseCommandLine(const std::vector<std::string>& args, int local_gpus,
                                               std::vector<std::string>* warnings) {
  CommandLineStyle style = DetectStyle(args);
  if (style == CommandLineStyle::kTorchrun) return ParseLaunchCommandLine(args);
  const size_t n = LeadingLauncherOptions(args);
  std::vector<std::string> leading(args.begin(), args.begin() + n);
  leading.push_back("PROGRAM");
  ASSIGN_OR_RETURN(LaunchOptions base, ParseLauncherOptions(leading));
  std::vector<std::string> rest(args.begin() + n, args.end());
  absl::StatusOr<LaunchOptions> options =
      style == CommandLineStyle::kDeepSpeed
          ? ParseDeepSpeedCommandLine(rest, std::move(base), local_gpus)
          : ParseAccelerateCommandLine(rest, std::move(base), local_gpus, warnings);
  if (!options.ok()) {
    // A launcher option after the style's options is the likely cause.
    const bool misplaced = std::any_of(rest.begin(), rest.end(), [](const std::string& word) {
      return LeadingLauncherOptions({word, "PROGRAM"}) > 0;
    });
    if (misplaced) {
      return absl::Status(
          options.status().code(),
          absl::StrCat(
              options.status().message(),
              " (the launcher's own options --prefix_output, --tee, --redirects, --log_dir, "
              "--local_ranks_filter and --grace_period_s go before the ",
              style == CommandLineStyle::kDeepSpeed ? "deepspeed" : "accelerate",
              "-style options)"));
    }
    return options.status();
  }
  RETURN_IF_ERROR(CheckLocalRanksFilter(*options));
  return options;
}

}  // namespace loom::launch
