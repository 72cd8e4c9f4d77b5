#include "launch/launch_options.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <optional>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "base/status_macros.h"

namespace loom::launch {
namespace {

absl::StatusOr<int> ParseInt(const std::string& flag, const std::string& value, int min,
                             const char* what) {
  int parsed = 0;
  if (!absl::SimpleAtoi(value, &parsed) || parsed < min) {
    return absl::InvalidArgumentError(absl::StrCat("--", flag, " '", value, "': expected ", what,
                                                   " (e.g. --", flag, " ", std::max(min, 1), ")"));
  }
  return parsed;
}

// torchrun accepts --nnodes MIN:MAX for elastic jobs; only a fixed size is supported here.
absl::StatusOr<int> ParseNnodes(const std::string& value) {
  std::vector<std::string> parts = absl::StrSplit(value, ':');
  if (parts.size() == 2) {
    ASSIGN_OR_RETURN(int lo, ParseInt("nnodes", parts[0], 1, "a positive integer"));
    ASSIGN_OR_RETURN(int hi, ParseInt("nnodes", parts[1], 1, "a positive integer"));
    if (lo != hi) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--nnodes ", value,
          ": elastic node ranges are not supported; give a fixed count (e.g. --nnodes ", hi, ")"));
    }
    return lo;
  }
  return ParseInt("nnodes", value, 1, "a positive integer");
}

// Which flags were given explicitly (their defaults are valid values too).
struct GivenFlags {
  bool nnodes = false;
  bool node_rank = false;
  bool master_port = false;
};

// "--name=value" or "--name" (dashes in the name read as underscores).
struct Flag {
  std::string name;
  std::optional<std::string> value;
};

absl::StatusOr<Flag> SplitFlag(const std::string& word) {
  if (word.size() < 3 || word[1] != '-') {
    return absl::InvalidArgumentError(absl::StrCat(
        "unknown option '", word, "': options are --name or --name=value; see --help"));
  }
  Flag flag;
  flag.name = absl::StrReplaceAll(word.substr(2), {{"-", "_"}});
  if (size_t eq = flag.name.find('='); eq != std::string::npos) {
    flag.value = word.substr(2 + eq + 1);
    flag.name.resize(eq);
  }
  return flag;
}

bool IsSwitch(const std::string& name) { return name == "standalone" || name == "prefix_output"; }

// The value-less flags.
absl::Status SetSwitch(const Flag& flag, LaunchOptions* options) {
  if (flag.value.has_value()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", flag.name, " takes no value; write --", flag.name, " alone"));
  }
  if (flag.name == "standalone") {
    options->standalone = true;
  } else {
    options->prefix_stdout = options->prefix_stderr = true;
  }
  return absl::OkStatus();
}

absl::Status CheckKnownValued(const std::string& name, const std::string& word) {
  static const char* const kValued[] = {
      "nproc_per_node", "nnodes",  "node_rank",          "master_addr",   "master_port", "tee",
      "redirects",      "log_dir", "local_ranks_filter", "grace_period_s"};
  for (const char* k : kValued) {
    if (name == k) return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown option '", word,
                   "'; known: --nproc_per_node, --nnodes, --node_rank, --master_addr, "
                   "--master_port, --standalone, --prefix_output, --tee, --redirects, --log_dir, "
                   "--local_ranks_filter, "
                   "--grace_period_s "
                   "(PROGRAM must follow the options; accelerate-style (--num_processes, ...) "
                   "and deepspeed-style (--num_gpus, ...) options cannot be mixed with "
                   "torchrun-style ones)"));
}

absl::StatusOr<int> ParseMasterPort(const std::string& value) {
  ASSIGN_OR_RETURN(int port, ParseInt("master_port", value, 1, "a port number 1-65535"));
  if (port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--master_port ", value, ": expected a port number 1-65535 (e.g. --master_port 29500)"));
  }
  return port;
}

// --tee / --redirects: a bit mask of the streams (1 stdout, 2 stderr).
absl::Status SetStreams(const std::string& name, const std::string& value, LaunchOptions* options) {
  int streams = -1;
  if (!absl::SimpleAtoi(value, &streams) || streams < 0 || streams > 3) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--", name, " '", value, "': expected 0 (none), 1 (stdout), 2 (stderr) or 3 (both)"));
  }
  if (name == "tee") {
    options->prefix_stdout = options->tee_stdout = (streams & 1) != 0;
    options->prefix_stderr = options->tee_stderr = (streams & 2) != 0;
  } else {
    options->redirect_stdout = (streams & 1) != 0;
    options->redirect_stderr = (streams & 2) != 0;
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<int>> ParseLocalRanksFilter(const std::string& value) {
  std::vector<int> ranks;
  for (absl::string_view r : absl::StrSplit(value, ',')) {
    int rank = -1;
    if (!absl::SimpleAtoi(r, &rank) || rank < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("--local_ranks_filter '", value,
                       "': expected comma-separated local ranks (e.g. --local_ranks_filter 0,1)"));
    }
    ranks.push_back(rank);
  }
  return ranks;
}

absl::StatusOr<double> ParseGracePeriod(const std::string& value) {
  double s = 0;
  if (!absl::SimpleAtod(value, &s) || !std::isfinite(s) || s < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--grace_period_s '", value, "': expected seconds >= 0 (e.g. --grace_period_s 5)"));
  }
  return s;
}

// One flag of kValued in CheckKnownValued with its value.
absl::Status SetValued(const std::string& name, const std::string& value, LaunchOptions* options,
                       GivenFlags* given) {
  if (name == "nproc_per_node") {
    ASSIGN_OR_RETURN(options->nproc_per_node,
                     ParseInt(name, value, 1, "a positive number of processes"));
  } else if (name == "nnodes") {
    ASSIGN_OR_RETURN(options->nnodes, ParseNnodes(value));
    given->nnodes = true;
  } else if (name == "node_rank") {
    ASSIGN_OR_RETURN(options->node_rank, ParseInt(name, value, 0, "a non-negative integer"));
    given->node_rank = true;
  } else if (name == "master_addr") {
    if (value.empty()) {
      return absl::InvalidArgumentError(
          "--master_addr is empty: give rank 0's host name or IP (e.g. --master_addr 127.0.0.1)");
    }
    options->master_addr = value;
  } else if (name == "master_port") {
    ASSIGN_OR_RETURN(options->master_port, ParseMasterPort(value));
    given->master_port = true;
  } else if (name == "tee" || name == "redirects") {
    RETURN_IF_ERROR(SetStreams(name, value, options));
  } else if (name == "local_ranks_filter") {
    ASSIGN_OR_RETURN(options->local_ranks_filter, ParseLocalRanksFilter(value));
  } else if (name == "log_dir") {
    if (value.empty()) {
      return absl::InvalidArgumentError("--log_dir is empty: give a directory for the log files");
    }
    options->log_dir = value;
  } else if (name == "grace_period_s") {
    ASSIGN_OR_RETURN(options->grace_period_s, ParseGracePeriod(value));
  }
  return absl::OkStatus();
}

// The checks across flags, once all are read.
absl::Status CheckCombinations(const LaunchOptions& options, const GivenFlags& given) {
  if (options.standalone) {
    if ((given.nnodes && options.nnodes != 1) || (given.node_rank && options.node_rank != 0)) {
      return absl::InvalidArgumentError(
          "--standalone runs a single node: drop --nnodes/--node_rank or --standalone");
    }
    if (given.master_port) {
      return absl::InvalidArgumentError(
          "--standalone picks a free port itself: drop --master_port or --standalone");
    }
  }
  if ((options.redirect_stdout || options.redirect_stderr) && options.log_dir.empty()) {
    return absl::InvalidArgumentError(
        "--redirects sends output to log files: give --log_dir DIR as well");
  }
  if (options.node_rank >= options.nnodes) {
    return absl::InvalidArgumentError(
        absl::StrCat("--node_rank ", options.node_rank, " must be smaller than --nnodes ",
                     options.nnodes, " (node ranks are 0..", options.nnodes - 1, ")"));
  }
  return absl::OkStatus();
}

}  // namespace

std::vector<std::string> RankArgs(const LaunchOptions& options, int local_rank) {
  std::vector<std::string> args;
  if (options.local_rank_arg) args.push_back(absl::StrCat("--local_rank=", local_rank));
  args.insert(args.end(), options.program_args.begin(), options.program_args.end());
  return args;
}

bool ShowsOutput(const LaunchOptions& options, int local_rank) {
  return options.local_ranks_filter.empty() ||
         std::find(options.local_ranks_filter.begin(), options.local_ranks_filter.end(),
                   local_rank) != options.local_ranks_filter.end();
}

std::string LaunchUsage() {
  return R"(usage: launch [options] PROGRAM [ARGS...]

Starts --nproc_per_node copies of PROGRAM ARGS... (torchrun style). Each gets RANK, LOCAL_RANK,
WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR and MASTER_PORT. When a rank fails, the
others are stopped and launch exits with the failed rank's code (128+signal for a signal).

options (--opt value or --opt=value; dashes or underscores):
  --nproc_per_node N   processes on this node (default 1)
  --nnodes N           number of nodes (default 1)
  --node_rank R        rank of this node, 0 <= R < nnodes (default 0)
  --master_addr HOST   address of rank 0 (default 127.0.0.1)
  --master_port PORT   port of rank 0 (default 29500)
  --standalone         single node on a free local port
  --prefix_output      prefix each output line with "[rank N]:"
  --tee {0,1,2,3}      prefix (and with --log_dir also log) 1 stdout, 2 stderr, 3 both
  --redirects {0,1,2,3}  send these streams only to the log files (needs --log_dir)
  --log_dir DIR        log files DIR/<rank>/stdout.log, stderr.log for --tee/--redirects
  --local_ranks_filter 0,2  show only these local ranks' output (log files get all of it)
  --grace_period_s S   seconds between SIGTERM and SIGKILL when stopping ranks (default 5)
  -h, --help           this text

accelerate style (instead of the torchrun options above; --prefix_output, --tee, --redirects,
--log_dir, --local_ranks_filter and --grace_period_s go first, in this style and the next): launch [--config_file accelerate.yaml] [--num_processes N]
[--num_machines M] [--machine_rank R] [--main_process_ip HOST] [--main_process_port PORT]
[--mixed_precision no|fp16|bf16] [--use_cpu] [--use_fsdp --fsdp_...] [--use_deepspeed ...]
SCRIPT [ARGS...]; num_processes counts all machines, and the config's TrainingArguments flags
(--bf16, --fsdp, --deepspeed, ...) are passed to SCRIPT before ARGS.

deepspeed style (single node): launch [--num_gpus N | --include localhost:0,1 |
--exclude localhost:1] [--master_addr HOST] [--master_port PORT] [--no_local_rank] SCRIPT
[ARGS...]; one rank per GPU slot with CUDA_VISIBLE_DEVICES, and --local_rank=L before ARGS.
)";
}

absl::Status CheckLocalRanksFilter(const LaunchOptions& options) {
  for (int r : options.local_ranks_filter) {
    if (r >= options.nproc_per_node) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--local_ranks_filter: local rank ", r, " does not exist with ", options.nproc_per_node,
          " process(es) per node (local ranks are 0..", options.nproc_per_node - 1, ")"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<LaunchOptions> ParseLaunchCommandLine(const std::vector<std::string>& args) {
  ASSIGN_OR_RETURN(LaunchOptions options, ParseLauncherOptions(args));
  RETURN_IF_ERROR(CheckLocalRanksFilter(options));
  return options;
}

absl::StatusOr<LaunchOptions> ParseLauncherOptions(const std::vector<std::string>& args) {
  LaunchOptions options;
  GivenFlags given;
  size_t i = 0;
  for (; i < args.size(); ++i) {
    const std::string& word = args[i];
    if (word == "--") {
      ++i;
      break;
    }
    if (word.empty() || word[0] != '-') break;
    if (word == "-h" || word == "--help") {
      options.help = true;
      return options;
    }
    ASSIGN_OR_RETURN(Flag flag, SplitFlag(word));
    if (IsSwitch(flag.name)) {
      RETURN_IF_ERROR(SetSwitch(flag, &options));
      continue;
    }
    RETURN_IF_ERROR(CheckKnownValued(flag.name, word));
    if (!flag.value.has_value()) {
      if (i + 1 >= args.size()) {
        return absl::InvalidArgumentError(
            absl::StrCat("--", flag.name, " needs a value (e.g. --", flag.name, "=VALUE)"));
      }
      flag.value = args[++i];
    }
    RETURN_IF_ERROR(SetValued(flag.name, *flag.value, &options, &given));
  }
  if (i >= args.size()) {
    return absl::InvalidArgumentError(
        "no PROGRAM given: usage is launch [options] PROGRAM [ARGS...] (see --help)");
  }
  options.program = args[i];
  options.program_args.assign(args.begin() + i + 1, args.end());
  RETURN_IF_ERROR(CheckCombinations(options, given));
  return options;
}

int LauncherOmpThreads(const LaunchOptions& options, bool omp_num_threads_set, int physical_cores) {
  if (options.nproc_per_node <= 1 || omp_num_threads_set) return 0;
  return std::max(1, physical_cores / options.nproc_per_node);
}

std::string LauncherOmpNote(const LaunchOptions& options, bool omp_num_threads_set,
                            int physical_cores) {
  const int threads = LauncherOmpThreads(options, omp_num_threads_set, physical_cores);
  if (threads == 0) return "";
  return absl::StrCat(
      "*****************************************\n"
      "Setting OMP_NUM_THREADS environment variable for each process to be ",
      threads, " (", physical_cores, " physical cores / ", options.nproc_per_node,
      " processes), to avoid your system being overloaded; set OMP_NUM_THREADS yourself to "
      "tune it for your application.\n"
      "*****************************************");
}

std::vector<std::pair<std::string, std::string>> RankEnvironment(const LaunchOptions& options,
                                                                 int local_rank,
                                                                 bool omp_num_threads_set,
                                                                 int physical_cores) {
  std::vector<std::pair<std::string, std::string>> env = {
      {"RANK", absl::StrCat(options.global_rank(local_rank))},
      {"LOCAL_RANK", absl::StrCat(local_rank)},
      {"WORLD_SIZE", absl::StrCat(options.world_size())},
      {"LOCAL_WORLD_SIZE", absl::StrCat(options.nproc_per_node)},
      {"GROUP_RANK", absl::StrCat(options.node_rank)},
      {"MASTER_ADDR", options.master_addr},
      {"MASTER_PORT", absl::StrCat(options.master_port)},
  };
  if (const int threads = LauncherOmpThreads(options, omp_num_threads_set, physical_cores)) {
    env.emplace_back("OMP_NUM_THREADS", absl::StrCat(threads));
    env.emplace_back("LOOM_THREADS_FROM_LAUNCHER", "1");
  }
  env.insert(env.end(), options.extra_env.begin(), options.extra_env.end());
  return env;
}

absl::StatusOr<std::string> ResolveProgramLabel(const std::string& program,
                                                const std::string& runfiles_dir) {
  // "@loom//pkg:name" (a workspace depending on loom) is loom's //pkg:name.
  constexpr absl::string_view kLoomRepository = "@loom";
  const absl::string_view without_repository =
      absl::StartsWith(program, absl::StrCat(kLoomRepository, "//"))
          ? absl::string_view(program).substr(kLoomRepository.size())
          : absl::string_view(program);
  if (!absl::StartsWith(without_repository, "//")) return program;
  std::string label(without_repository.substr(2));
  const size_t colon = label.find(':');
  const std::string package = label.substr(0, colon);
  const std::string name =
      colon == std::string::npos ? package.substr(package.rfind('/') + 1) : label.substr(colon + 1);
  const bool valid =
      !package.empty() && !name.empty() && absl::StrContains(label, "..") == false &&
      std::all_of(label.begin(), label.end(), [](char c) {
        return absl::ascii_isalnum(c) || c == '_' || c == '-' || c == '/' || c == ':' || c == '.';
      });
  if (!valid) {
    return absl::InvalidArgumentError(
        absl::StrCat("PROGRAM ", program, ": not a Bazel label of a program (//package:name)"));
  }
  const std::string path = absl::StrCat(runfiles_dir, "/loom/", package, "/", name);
  if (::access(path.c_str(), X_OK) != 0) {
    return absl::NotFoundError(absl::StrCat(
        "PROGRAM ", program, ": the launcher does not carry it (", path,
        " is missing; the programs it carries are the `data` of //tools:launch, present when it "
        "is started with `./bazelw run //tools:launch -- ...`, or `bazel run "
        "@loom//tools:launch -- ...` from a workspace depending on loom); build the program "
        "and pass its path instead"));
  }
  return path;
}

}  // namespace loom::launch
