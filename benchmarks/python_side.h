// What the benchmarks that race a Python loop share: their runfiles folder, and running the
// Python side (through @libtorch//:python.sh, the Python torch of this LibTorch) for the JSON
// object it prints last.
//
// Usage:
//   const std::string runfiles = loom::benchmarks::Runfiles(argv[0]);
//   nlohmann::json out = loom::benchmarks::RunPythonForJson(
//       runfiles, "", absl::StrCat(runfiles, "/benchmarks/my_loop.py ARGS"));
#ifndef LOOM_BENCHMARKS_PYTHON_SIDE_H_
#define LOOM_BENCHMARKS_PYTHON_SIDE_H_

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace loom::benchmarks {

// The workspace folder of the benchmark's runfiles.
inline std::string Runfiles(const char* argv0) {
  if (const char* dir = std::getenv("RUNFILES_DIR")) return std::string(dir) + "/loom";
  return std::string(argv0) + ".runfiles/loom";
}

// Runs `script_and_args` with the Python torch of this LibTorch, after `env_prefix` (extra
// `env ...` words, may be empty), and returns the last JSON object it printed. A failure
// prints the command and its output and exits: a benchmark has nothing to report then.
inline nlohmann::json RunPythonForJson(const std::string& runfiles, const std::string& env_prefix,
                                       const std::string& script_and_args) {
  const std::string cmd = absl::StrCat(
      ". ", runfiles, "/../libtorch/python.sh && LD_LIBRARY_PATH=",
      "$LOOM_TORCH_PYTHON_LD_LIBRARY_PATH${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} ", env_prefix,
      " \"$LOOM_TORCH_PYTHON\" ", script_and_args);
  FILE* pipe = popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  while (pipe != nullptr && fgets(buf, sizeof(buf), pipe) != nullptr) out += buf;
  if (pipe == nullptr || pclose(pipe) != 0 || out.rfind('{') == std::string::npos) {
    std::cerr << "the Python loop failed: " << cmd << "\n" << out;
    std::exit(1);
  }
  return nlohmann::json::parse(out.substr(out.rfind('{')));
}

}  // namespace loom::benchmarks

#endif  // LOOM_BENCHMARKS_PYTHON_SIDE_H_
