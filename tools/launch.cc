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
#include "absl/status/statusor.h"
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

// PROGRAM, or the path of the labelled program in the launcher's runfiles (`runfiles` set to
// them): $RUNFILES_DIR, else <argv[0]>.runfiles when argv[0] is a path, else the executable's
// own <exe>.runfiles (a launcher found through PATH or a symlink); the first that holds it.
absl::StatusOr<std::string> ResolveCarriedProgram(const std::string& program, const char* argv0,
                                                  std::string* runfiles) {
  std::vector<std::string> folders;
  if (const char* env = getenv("RUNFILES_DIR"); env != nullptr && *env != '\0') {
    folders.push_back(std::filesystem::absolute(env).string());
  }
  if (std::string(argv0).find('/') != std::string::npos) {
    folders.push_back(std::filesystem::absolute(std::string(argv0) + ".runfiles").string());
  }
  std::error_code error;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", error);
  if (!error) folders.push_back(exe.string() + ".runfiles");
  if (folders.empty()) folders.push_back("launch.runfiles");
  absl::StatusOr<std::string> first;
  for (size_t i = 0; i < folders.size(); ++i) {
    absl::StatusOr<std::string> path = loom::launch::ResolveProgramLabel(program, folders[i]);
    if (path.ok() || !absl::IsNotFound(path.status())) {
      *runfiles = folders[i];
      return path;
    }
    if (i == 0) first = path;
  }
  return first;  // the message names the first place looked at
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
  std::string runfiles;
  absl::StatusOr<std::string> program = ResolveCarriedProgram(options.program, argv[0], &runfiles);
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
