// `bazel run //tools:launch -- [options] PROGRAM [ARGS...]`: torchrun-style launcher.
// Starts --nproc_per_node ranks of PROGRAM on this node with torchrun's environment variables and
// supervises them (launch/rank_supervisor.h). The command line is torchrun-, accelerate- or
// deepspeed-style (launch/command_line.h), or --help.
//
// Exit code: 0 when every rank succeeded; the first failed rank's exit code (128+signal when it was
// killed); 128+signal when launch itself was interrupted; 2 for a bad command line; 1 when the
// ranks could not be started.
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "args/argv_secrets.h"
#include "base/free_port.h"
#include "launch/command_line.h"
#include "launch/deepspeed_launch.h"
#include "launch/launch_options.h"
#include "launch/rank_supervisor.h"
#include "logging/process_logging.h"
#include "threads/cpu_topology.h"

namespace {

int Fail(const absl::Status& status, int code) {
  fprintf(stderr, "launch: %s\n", std::string(status.message()).c_str());
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  loom::logging::InitProcessLogging(argv[0]);
  using loom::launch::LaunchOptions;
  std::vector<std::string> warnings;
  absl::StatusOr<LaunchOptions> parsed = loom::launch::ParseCommandLine(
      std::vector<std::string>(argv + 1, argv + argc), loom::launch::CountLocalGpus(), &warnings);
  for (const std::string& warning : warnings)
    fprintf(stderr, "launch: warning: %s\n", warning.c_str());
  if (!parsed.ok()) return Fail(parsed.status(), 2);
  LaunchOptions options = *std::move(parsed);
  // The program's token flags (--hub_token ...) are copied into `options`: off `ps` for the
  // launcher itself from here on (each rank hides them in its own argv).
  loom::args::HideSecretArgs(argc, argv);
  if (options.help) {
    fputs(loom::launch::LaunchUsage().c_str(), stdout);
    return 0;
  }
  if (options.standalone) {
    absl::StatusOr<int> port = loom::base::PickFreePort();
    if (!port.ok()) {
      return Fail(absl::UnavailableError(absl::StrCat(
                      port.status().message(), " for --standalone; give --master_port instead")),
                  1);
    }
    options.master_port = *port;
  }
  // A Bazel label names a program the launcher carries (`./bazelw run //tools:launch -- ...
  // //examples/glue:run_glue`): its runfiles path, found before leaving the run folder.
  const char* runfiles_env = getenv("RUNFILES_DIR");
  const std::string runfiles =
      std::filesystem::absolute(runfiles_env != nullptr ? std::string(runfiles_env)
                                                        : std::string(argv[0]) + ".runfiles")
          .string();
  absl::StatusOr<std::string> program =
      loom::launch::ResolveProgramLabel(options.program, runfiles);
  if (!program.ok()) return Fail(program.status(), 2);
  if (*program != options.program) {
    // A program the launcher carries has no runfiles tree of its own (it is the launcher's
    // data): its data files (SentencePiece's library, ...) are found in the launcher's.
    options.extra_env.emplace_back("RUNFILES_DIR", runfiles);
  }
  options.program = *program;
  // Under `bazel run`, PROGRAM and its relative paths are meant from the user's directory.
  if (const char* dir = getenv("BUILD_WORKING_DIRECTORY"); dir != nullptr && chdir(dir) != 0) {
    perror("launch: chdir to BUILD_WORKING_DIRECTORY");
    return 1;
  }
  const bool omp_set = getenv("OMP_NUM_THREADS") != nullptr;
  const int cores = loom::threads::DetectCpuTopology().physical_cores;
  if (const std::string note = loom::launch::LauncherOmpNote(options, omp_set, cores);
      !note.empty()) {
    fprintf(stderr, "%s\n", note.c_str());
  }
  std::vector<loom::launch::RankSpec> ranks;
  for (int local = 0; local < options.nproc_per_node; ++local) {
    ranks.push_back({options.global_rank(local), local, options.program,
                     loom::launch::RankArgs(options, local),
                     loom::launch::RankEnvironment(options, local, omp_set, cores)});
    ranks.back().show_output = loom::launch::ShowsOutput(options, local);
    if (options.log_dir.empty()) continue;
    const std::string dir = options.log_dir + "/" + std::to_string(options.global_rank(local));
    std::error_code error;
    std::filesystem::create_directories(dir, error);
    if (error) {
      fprintf(stderr, "launch: cannot create %s: %s (check --log_dir)\n", dir.c_str(),
              error.message().c_str());
      return 1;
    }
    if (options.tee_stdout || options.redirect_stdout)
      ranks.back().stdout_log = dir + "/stdout.log";
    if (options.tee_stderr || options.redirect_stderr)
      ranks.back().stderr_log = dir + "/stderr.log";
  }
  loom::launch::SupervisorOptions supervisor;
  supervisor.prefix_stdout = options.prefix_stdout;
  supervisor.prefix_stderr = options.prefix_stderr;
  supervisor.console_stdout = !options.redirect_stdout;
  supervisor.console_stderr = !options.redirect_stderr;
  supervisor.grace_period = absl::Seconds(options.grace_period_s);
  fflush(stdout);
  absl::StatusOr<loom::launch::RankRunResult> result = loom::launch::RunRanks(ranks, supervisor);
  if (!result.ok()) return Fail(result.status(), 1);
  return result->exit_code;
}
