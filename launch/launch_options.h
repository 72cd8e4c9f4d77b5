// torchrun-style launcher options: the command line of `//tools:launch` and the environment each
// rank is started with.
//
// Command line (ParseLaunchCommandLine): `[options] PROGRAM [ARGS...]`. Options come first, as
// `--opt value` or `--opt=value`, with underscores or dashes (`--nproc_per_node` and
// `--nproc-per-node`). The first word that does not start with "-" is PROGRAM and everything after
// it belongs to PROGRAM; `--` also ends the options. Options:
//   --nproc_per_node N    processes on this node (default 1)
//   --nnodes N            nodes (default 1; torchrun's elastic "MIN:MAX" only as "N:N")
//   --node_rank R         this node's rank, 0 <= R < nnodes (default 0)
//   --master_addr HOST    rank 0's address (default 127.0.0.1)
//   --master_port PORT    rank 0's port, 1-65535 (default 29500)
//   --standalone          single node (nnodes 1, node_rank 0) on a free local port
//   --prefix_output       prefix every line of stdout and stderr with "[rank N]:"
//   --tee {0,1,2,3}       streams (1 stdout, 2 stderr, 3 both) shown prefixed with "[rank N]:"
//                         and, with --log_dir, also written to the rank's log file
//   --redirects {0,1,2,3} streams written only to the rank's log file (needs --log_dir)
//   --local_ranks_filter 0,2  show only these local ranks' output on the console (log files
//                         still get everything)
//   --log_dir DIR         log files DIR/<rank>/stdout.log and stderr.log (raw bytes) for the
//                         streams --tee or --redirects select
//   --grace_period_s S    after a failure or a signal, seconds between SIGTERM and SIGKILL
//                         (default 5; 0 kills at once)
// Errors are InvalidArgument naming the flag and saying how to fix it (e.g. "--node_rank 2 must
// be smaller than --nnodes 2"). Unknown flags are errors. Elastic features (rendezvous backends,
// restarts) are not provided.
//
// Environment (RankEnvironment): for local rank L on node G with N processes per node and M
// nodes: RANK = G*N + L, LOCAL_RANK = L, WORLD_SIZE = M*N, LOCAL_WORLD_SIZE = N, GROUP_RANK = G,
// MASTER_ADDR, MASTER_PORT; when N > 1 and the launcher's environment has no OMP_NUM_THREADS,
// OMP_NUM_THREADS = max(1, physical cores / N) and LOOM_THREADS_FROM_LAUNCHER=1 (torchrun sets
// 1 there; loom gives each rank its share of the cores, which is 1 whenever there are no more
// cores than ranks, and tells loom programs the value is the launcher's, not the user's:
// threads/thread_plan.h); then LaunchOptions::extra_env. TORCHELASTIC_* variables are not set.
//
// PROGRAM may also be the Bazel label of a program the launcher carries in its runfiles
// (ResolveProgramLabel): `./bazelw run //tools:launch -- --nproc_per_node 2
// //examples/glue:run_glue ...` builds that program with the launcher, in the same
// configuration, so the command works whatever `bazel-bin` points at (e.g. after an opt build).
//
// Example:
//   ASSIGN_OR_RETURN(LaunchOptions options, ParseLaunchCommandLine(args));
//   for (int local = 0; local < options.nproc_per_node; ++local)
//     Spawn(options.program, options.program_args, RankEnvironment(options, local, has_omp));
#ifndef LOOM_LAUNCH_LAUNCH_OPTIONS_H_
#define LOOM_LAUNCH_LAUNCH_OPTIONS_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace loom::launch {

struct LaunchOptions {
  int nproc_per_node = 1;
  int nnodes = 1;
  int node_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  bool standalone = false;
  bool prefix_stdout = false;
  bool prefix_stderr = false;
  std::string log_dir;      // empty: no log files
  bool tee_stdout = false;  // console (prefixed) and log file
  bool tee_stderr = false;
  bool redirect_stdout = false;  // log file only
  bool redirect_stderr = false;
  std::vector<int> local_ranks_filter;  // empty: every local rank's output is shown
  double grace_period_s = 5.0;
  std::string program;
  std::vector<std::string> program_args;
  // Pass `--local_rank=L` to each rank before program_args (DeepSpeed's launcher does).
  bool local_rank_arg = false;
  // More variables for every rank, after the torchrun ones (accelerate's CUDA_VISIBLE_DEVICES).
  std::vector<std::pair<std::string, std::string>> extra_env;
  bool help = false;  // -h / --help: print LaunchUsage() and exit 0

  int world_size() const { return nnodes * nproc_per_node; }
  int global_rank(int local_rank) const { return node_rank * nproc_per_node + local_rank; }
};

// Parses the words after the binary's name. Does not pick the --standalone port (see main).
absl::StatusOr<LaunchOptions> ParseLaunchCommandLine(const std::vector<std::string>& args);

// ParseLaunchCommandLine without CheckLocalRanksFilter: for the launcher's own options in front of
// an accelerate- or deepspeed-style command line, whose process count comes later.
absl::StatusOr<LaunchOptions> ParseLauncherOptions(const std::vector<std::string>& args);

// InvalidArgument when --local_ranks_filter names a local rank >= nproc_per_node.
absl::Status CheckLocalRanksFilter(const LaunchOptions& options);

// The variables the launcher sets for `local_rank` (name, value), in a fixed order.
// `omp_num_threads_set`: the launcher's own environment already has OMP_NUM_THREADS;
// `physical_cores`: of this node (threads/cpu_topology.h).
std::vector<std::pair<std::string, std::string>> RankEnvironment(const LaunchOptions& options,
                                                                 int local_rank,
                                                                 bool omp_num_threads_set,
                                                                 int physical_cores = 1);

// The OMP_NUM_THREADS RankEnvironment gives each rank (0 when it sets none), and the note the
// launcher prints about it once, as torchrun does (empty when none).
int LauncherOmpThreads(const LaunchOptions& options, bool omp_num_threads_set, int physical_cores);
std::string LauncherOmpNote(const LaunchOptions& options, bool omp_num_threads_set,
                            int physical_cores);

// The arguments after PROGRAM for `local_rank`: program_args, after `--local_rank=L` when
// local_rank_arg.
std::vector<std::string> RankArgs(const LaunchOptions& options, int local_rank);

// Whether `local_rank`'s output is shown on the console (--local_ranks_filter).
bool ShowsOutput(const LaunchOptions& options, int local_rank);

// The --help text.
std::string LaunchUsage();

// `program` when it is not a label ("//...", or "@loom//..." from a workspace depending on
// loom); otherwise the path of the labelled program in `runfiles_dir` (the launcher's
// runfiles: `//pkg:name` is runfiles_dir/loom/pkg/name, `//pkg` is //pkg:<last folder of
// pkg>). InvalidArgument for a malformed label; NotFound naming the
// label and the programs to choose from when the runfiles do not hold it.
absl::StatusOr<std::string> ResolveProgramLabel(const std::string& program,
                                                const std::string& runfiles_dir);

}  // namespace loom::launch

#endif  // LOOM_LAUNCH_LAUNCH_OPTIONS_H_
