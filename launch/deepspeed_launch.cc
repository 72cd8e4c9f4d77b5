#include "launch/deepspeed_launch.h"

#include <dirent.h>

#include <algorithm>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "base/status_macros.h"

namespace loom::launch {
namespace {

// "localhost:0,1@localhost:3" -> slots for localhost; nullopt slots = the whole host.
absl::StatusOr<std::optional<std::set<int>>> ParseHostFilter(const std::string& flag,
                                                             const std::string& spec) {
  std::optional<std::set<int>> slots;
  bool whole_host = false;
  for (absl::string_view node : absl::StrSplit(spec, '@')) {
    std::vector<std::string> parts = absl::StrSplit(node, absl::MaxSplits(':', 1));
    if (parts[0] != "localhost") {
      return absl::InvalidArgumentError(absl::StrCat(
          "--", flag, " ", spec, ": host '", parts[0],
          "' is not this machine; only localhost is supported (e.g. --", flag,
          " localhost:0,1); for several nodes run launch on each with --nnodes/--node_rank"));
    }
    if (parts.size() == 1) {
      whole_host = true;
      continue;
    }
    if (!slots.has_value()) slots.emplace();
    for (absl::string_view s : absl::StrSplit(parts[1], ',')) {
      int slot = -1;
      if (!absl::SimpleAtoi(s, &slot) || slot < 0) {
        return absl::InvalidArgumentError(absl::StrCat("--", flag, " ", spec, ": slot '", s,
                                                       "' is not a GPU index (e.g. --", flag,
                                                       " localhost:0,1)"));
      }
      slots->insert(slot);
    }
  }
  if (whole_host) return std::optional<std::set<int>>();
  return slots;
}

// What the deepspeed-style flags asked for.
struct DeepSpeedFlags {
  std::optional<int> num_gpus;
  std::optional<std::string> include, exclude;
  bool local_rank_arg = true;
  bool num_nodes_given = false;
};

struct DeepSpeedFlag {
  std::string name;
  std::optional<std::string> value;
};

// "-i" / "-e" (include / exclude), "--name" or "--name=value" (dashes read as underscores).
absl::StatusOr<DeepSpeedFlag> SplitDeepSpeedFlag(const std::string& word) {
  DeepSpeedFlag flag;
  flag.name = word == "-i" ? "include" : word == "-e" ? "exclude" : "";
  if (!flag.name.empty()) return flag;
  if (word.size() < 3 || word[1] != '-') {
    return absl::InvalidArgumentError(absl::StrCat("unknown option '", word, "'"));
  }
  flag.name = absl::StrReplaceAll(word.substr(2), {{"-", "_"}});
  if (size_t eq = flag.name.find('='); eq != std::string::npos) {
    flag.value = word.substr(2 + eq + 1);
    flag.name.resize(eq);
  }
  return flag;
}

// The flags that take a value; --hostfile (multi-node) is refused.
absl::Status CheckKnownDeepSpeedFlag(const std::string& name, const std::string& word) {
  if (name == "hostfile") {
    return absl::InvalidArgumentError(
        "--hostfile: multi-node deepspeed launches (pdsh/ssh) are not supported; run launch on "
        "each node with --nnodes N --node_rank R --master_addr HOST instead");
  }
  const bool known = name == "num_gpus" || name == "num_accelerators" || name == "include" ||
                     name == "exclude" || name == "num_nodes" || name == "master_port" ||
                     name == "master_addr";
  if (known) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("unknown option '", word,
                   "' in a deepspeed-style command line; known: --num_gpus, --include, --exclude, "
                   "--num_nodes, --master_addr, --master_port, --no_local_rank (torchrun- and "
                   "accelerate-style options cannot be mixed in)"));
}

absl::Status SetDeepSpeedFlag(const std::string& name, const std::string& value,
                              DeepSpeedFlags* flags, LaunchOptions* o) {
  if (name == "include" || name == "exclude") {
    (name == "include" ? flags->include : flags->exclude) = value;
    return absl::OkStatus();
  }
  if (name == "master_addr" || name == "master_port") {
    // Same syntax and checks as torchrun's.
    ASSIGN_OR_RETURN(LaunchOptions t,
                     ParseLaunchCommandLine({absl::StrCat("--", name, "=", value), "P"}));
    if (name == "master_addr") {
      o->master_addr = t.master_addr;
    } else {
      o->master_port = t.master_port;
    }
    return absl::OkStatus();
  }
  int n = 0;
  if (!absl::SimpleAtoi(value, &n) || n < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", name, " '", value, "': expected a positive integer"));
  }
  if (name == "num_nodes" && n != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--num_nodes ", n,
        ": multi-node deepspeed launches are not supported; run launch on each node with "
        "--nnodes N --node_rank R --master_addr HOST instead"));
  }
  if (name == "num_nodes") {
    flags->num_nodes_given = true;
  } else {
    flags->num_gpus = n;
  }
  return absl::OkStatus();
}

// The slots --include / --exclude leave of this machine's GPUs (each listed slot must exist).
absl::StatusOr<std::vector<int>> FilterSlots(const DeepSpeedFlags& flags, std::vector<int> pool,
                                             int local_gpus) {
  const bool including = flags.include.has_value();
  const std::string flag = including ? "include" : "exclude";
  ASSIGN_OR_RETURN(std::optional<std::set<int>> filter,
                   ParseHostFilter(flag, including ? *flags.include : *flags.exclude));
  if (filter.has_value()) {
    for (int slot : *filter) {
      if (std::find(pool.begin(), pool.end(), slot) == pool.end()) {
        return absl::InvalidArgumentError(absl::StrCat("--", flag, ": no slot ", slot,
                                                       " on localhost, which has ", local_gpus,
                                                       " GPU(s) (slots 0..", local_gpus - 1, ")"));
      }
    }
  }
  std::vector<int> kept;
  for (int slot : pool) {
    bool listed = !filter.has_value() || filter->count(slot) > 0;
    if (listed == including) kept.push_back(slot);
  }
  return kept;
}

// The GPU slots to run on, one rank each, as DeepSpeed's launcher picks them.
absl::StatusOr<std::vector<int>> SelectGpuSlots(const DeepSpeedFlags& flags, int local_gpus) {
  const bool filtered = flags.include.has_value() || flags.exclude.has_value();
  if (filtered && (flags.num_gpus.has_value() || flags.num_nodes_given)) {
    return absl::InvalidArgumentError(
        "--num_gpus/--num_nodes cannot be combined with --include/--exclude (DeepSpeed's rule): "
        "give the slots with --include localhost:0,1 or the count with --num_gpus");
  }
  if (flags.include.has_value() && flags.exclude.has_value()) {
    return absl::InvalidArgumentError(
        "--include and --exclude are mutually exclusive: give one of them");
  }
  std::vector<int> pool;
  for (int g = 0; g < local_gpus; ++g) pool.push_back(g);
  if (filtered) {
    ASSIGN_OR_RETURN(pool, FilterSlots(flags, std::move(pool), local_gpus));
  }
  if (flags.num_gpus.has_value()) {  // DeepSpeed: range(num_gpus), whatever the machine has
    pool.clear();
    for (int g = 0; g < *flags.num_gpus; ++g) pool.push_back(g);
  }
  if (pool.empty()) {
    return absl::InvalidArgumentError(
        local_gpus == 0 ? "no GPUs found on this machine: give --num_gpus N to start N ranks"
                        : "--include/--exclude left no GPU to run on: keep at least one slot");
  }
  return pool;
}

}  // namespace

bool IsDeepSpeedOption(const std::string& name) {
  for (const char* k : {"num_gpus", "num_accelerators", "include", "exclude", "num_nodes",
                        "no_local_rank", "hostfile"}) {
    if (name == k) return true;
  }
  return false;
}

int CountLocalGpus() {
  DIR* dir = opendir("/proc/driver/nvidia/gpus");
  if (dir == nullptr) return 0;
  int n = 0;
  while (dirent* e = readdir(dir)) {
    if (e->d_name[0] != '.') ++n;
  }
  closedir(dir);
  return n;
}

absl::StatusOr<LaunchOptions> ParseDeepSpeedCommandLine(const std::vector<std::string>& args,
                                                        LaunchOptions base, int local_gpus) {
  LaunchOptions o = std::move(base);
  DeepSpeedFlags flags;
  size_t i = 0;
  for (; i < args.size(); ++i) {
    const std::string& word = args[i];
    if (word == "--") {
      ++i;
      break;
    }
    if (word.empty() || word[0] != '-') break;
    ASSIGN_OR_RETURN(DeepSpeedFlag flag, SplitDeepSpeedFlag(word));
    if (flag.name == "no_local_rank") {
      flags.local_rank_arg = false;
      continue;
    }
    RETURN_IF_ERROR(CheckKnownDeepSpeedFlag(flag.name, word));
    if (!flag.value.has_value()) {
      if (i + 1 >= args.size()) {
        return absl::InvalidArgumentError(absl::StrCat("--", flag.name, " needs a value"));
      }
      flag.value = args[++i];
    }
    RETURN_IF_ERROR(SetDeepSpeedFlag(flag.name, *flag.value, &flags, &o));
  }
  if (i >= args.size()) {
    return absl::InvalidArgumentError(
        "no training script given: usage is launch [deepspeed options] SCRIPT [ARGS...]");
  }
  ASSIGN_OR_RETURN(std::vector<int> slots, SelectGpuSlots(flags, local_gpus));
  o.nnodes = 1;
  o.node_rank = 0;
  o.nproc_per_node = static_cast<int>(slots.size());
  o.extra_env.emplace_back("CUDA_VISIBLE_DEVICES", absl::StrJoin(slots, ","));
  o.local_rank_arg = flags.local_rank_arg;
  o.program = args[i];
  o.program_args.assign(args.begin() + i + 1, args.end());
  return o;
}

}  // namespace loom::launch
