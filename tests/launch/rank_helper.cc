// The program //tools:launch runs in tests/launch/launch_test.cc: one rank doing one scripted
// thing, selected by argv[1].
//   env ARGS...          prints "rank R: NAME=value" for the launcher's variables, then ARGS;
//                        options before "env" (accelerate's implied TrainingArguments flags come
//                        before the script's own) are printed with ARGS, in order
//   sleep DIR            writes DIR/pid.R and waits; SIGTERM writes DIR/term.R and exits 0
//   sleep_ignoring_term DIR   same, but ignores SIGTERM (only SIGKILL ends it)
//   fail DIR R CODE      writes DIR/pid.R; once all WORLD_SIZE pid files exist, rank R prints
//                        "rank R failing" and exits CODE; the others behave like `sleep`
//   lines N              writes N lines to stdout and to stderr, each in three write() calls
//   partial              writes "tail without newline" to stdout, no newline
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <string>

#include "logging/process_logging.h"

namespace {

std::string Env(const char* name) {
  const char* v = getenv(name);
  return v != nullptr ? v : "<unset>";
}

int Rank() { return atoi(Env("RANK").c_str()); }

std::string g_dir;

void WriteFile(const std::string& path, const std::string& text) {
  std::string tmp = path + ".tmp";
  FILE* f = fopen(tmp.c_str(), "w");
  if (f == nullptr) _exit(90);
  fputs(text.c_str(), f);
  fclose(f);
  rename(tmp.c_str(), path.c_str());
}

void OnTerm(int) {
  // Only async-signal-safe calls.
  char path[4096];
  snprintf(path, sizeof(path), "%s/term.%d", g_dir.c_str(), Rank());
  FILE* f = fopen(path, "w");
  if (f != nullptr) fclose(f);
  _exit(0);
}

[[noreturn]] void Sleep(const std::string& dir, bool ignore_term) {
  g_dir = dir;
  signal(SIGTERM, ignore_term ? SIG_IGN : OnTerm);
  WriteFile(dir + "/pid." + std::to_string(Rank()), std::to_string(getpid()));
  for (;;) pause();
}

void WriteRaw(int fd, const std::string& s) {
  ssize_t n = write(fd, s.data(), s.size());
  (void)n;
}

}  // namespace

int main(int argc, char** argv) {
  loom::logging::InitProcessLogging(argv[0]);
  if (argc < 2) return 99;
  int mode_index = 1;
  while (mode_index + 1 < argc && strncmp(argv[mode_index], "--", 2) == 0) ++mode_index;
  if (strcmp(argv[mode_index], "env") == 0) {
    for (const char* name :
         {"RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "MASTER_ADDR",
          "MASTER_PORT", "OMP_NUM_THREADS", "CUDA_VISIBLE_DEVICES", "TORCHELASTIC_RUN_ID"}) {
      printf("rank %d: %s=%s\n", Rank(), name, Env(name).c_str());
    }
    std::string args;
    for (int i = 1; i < argc; ++i) {
      if (i != mode_index) args += std::string(" [") + argv[i] + "]";
    }
    printf("rank %d: args%s\n", Rank(), args.c_str());
    return 0;
  }
  std::string mode = argv[1];
  if (mode == "sleep" && argc == 3) Sleep(argv[2], false);
  if (mode == "sleep_ignoring_term" && argc == 3) Sleep(argv[2], true);
  if (mode == "fail" && argc == 5) {
    std::string dir = argv[2];
    if (Rank() != atoi(argv[3])) Sleep(dir, false);
    WriteFile(dir + "/pid." + std::to_string(Rank()), std::to_string(getpid()));
    int world = atoi(Env("WORLD_SIZE").c_str());
    for (int r = 0; r < world; ++r) {
      while (access((dir + "/pid." + std::to_string(r)).c_str(), F_OK) != 0) usleep(1000);
    }
    printf("rank %d failing\n", Rank());
    fflush(stdout);
    return atoi(argv[4]);
  }
  if (mode == "lines" && argc == 3) {
    int n = atoi(argv[2]);
    std::string r = std::to_string(Rank());
    for (int i = 0; i < n; ++i) {
      for (int fd : {1, 2}) {
        WriteRaw(fd, "r" + r + " ");
        usleep(50);
        WriteRaw(fd, "line " + std::to_string(i));
        usleep(50);
        WriteRaw(fd, " end\n");
      }
    }
    return 0;
  }
  if (mode == "partial") {
    WriteRaw(1, "tail without newline");
    return 0;
  }
  return 99;
}
