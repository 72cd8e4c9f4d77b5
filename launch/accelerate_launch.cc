#include "launch/accelerate_launch.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "base/status_macros.h"

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

// Number of leading words that are launcher options shared by both styles.
size_t LeadingLauncherOptions(const std::vector<std::string>& args) {
  size_t i = 0;
  while (i < args.size() && args[i].size() > 2 && args[i].rfind("--", 0) == 0) {
    std::string name = OptionName(args[i]);
    bool inline_value = args[i].find('=') != std::string::npos;
    if (name == "prefix_output") {
      i += 1;
    } else if (name == "tee" || name == "grace_period_s") {
      i += inline_value ? 1 : 2;
    } else {
      break;
    }
  }
  return std::min(i, args.size());
}

}  // namespace

bool IsAccelerateStyle(const std::vector<std::string>& args) {
  size_t i = LeadingLauncherOptions(args);
  if (i >= args.size()) return false;
  const std::string& word = args[i];
  if (word.size() <= 2 || word.rfind("--", 0) != 0) return false;  // PROGRAM, "--", "-h"
  return !IsTorchrunOption(OptionName(word));
}

absl::StatusOr<LaunchOptions> LaunchOptionsFromAccelerate(const args::AccelerateLaunch& launch,
                                                          LaunchOptions base) {
  const args::AccelerateConfig& c = launch.config;
  if (launch.training_script.empty()) {
    return absl::InvalidArgumentError(
        "no training script given: usage is launch [accelerate options] SCRIPT [ARGS...]");
  }
  LaunchOptions o = std::move(base);
  o.nnodes = static_cast<int>(c.num_machines);
  o.node_rank = static_cast<int>(c.machine_rank);
  const int64_t total = c.num_processes.value_or(c.num_machines);
  if (total < c.num_machines || total % c.num_machines != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "num_processes ", total, " is not a multiple of num_machines ", c.num_machines,
        ": accelerate counts processes over all machines; set --num_processes (or the config "
        "file's num_processes) to num_machines times the processes per machine"));
  }
  o.nproc_per_node = static_cast<int>(total / c.num_machines);
  if (c.num_machines > 1 && !c.main_process_ip.has_value()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--main_process_ip is required with num_machines ", c.num_machines,
        ": give the address of the machine with machine_rank 0 (flag or config file key)"));
  }
  o.master_addr = c.main_process_ip.value_or("127.0.0.1");
  // args/accelerate_config.h has checked the port's range.
  if (c.main_process_port.has_value()) o.master_port = static_cast<int>(*c.main_process_port);
  if (c.gpu_ids != "all" && !c.use_cpu) o.extra_env.emplace_back("CUDA_VISIBLE_DEVICES", c.gpu_ids);
  ASSIGN_OR_RETURN(o.program_args, args::ImpliedTrainingArgumentsFlags(c));
  o.program = launch.training_script;
  o.program_args.insert(o.program_args.end(), launch.training_script_args.begin(),
                        launch.training_script_args.end());
  return o;
}

absl::StatusOr<LaunchOptions> ParseCommandLine(const std::vector<std::string>& args,
                                               std::vector<std::string>* warnings) {
  if (!IsAccelerateStyle(args)) return ParseLaunchCommandLine(args);
  const size_t n = LeadingLauncherOptions(args);
  std::vector<std::string> leading(args.begin(), args.begin() + n);
  leading.push_back("PROGRAM");
  ASSIGN_OR_RETURN(LaunchOptions base, ParseLaunchCommandLine(leading));
  ASSIGN_OR_RETURN(args::AccelerateLaunch launch,
                   args::ParseAccelerateLaunch(
                       std::vector<std::string>(args.begin() + n, args.end()), warnings));
  return LaunchOptionsFromAccelerate(launch, std::move(base));
}

}  // namespace loom::launch
