// ParseToolFlags: gflags for one of loom's command-line tools, with a help that shows the tool's
// own flags only. gflags' --help lists every flag linked into the binary (glog's, LibTorch's,
// gflags' own, with their build paths) and exits 1; a tool's user wants its usage and its flags.
//
// Contract:
//   - Any of --help, -help, -h, --helpshort, -helpshort in argv: prints `usage`, then each flag
//     defined in a source file whose path ends with `source_file` (name, description, type,
//     default), to stdout, and returns 0 (the tool exits with it) without parsing the flags.
//   - Otherwise gflags::ParseCommandLineFlags with the flags removed from argv; returns
//     std::nullopt (the tool goes on). An unknown flag is gflags' own error (exit 1).
//
// Example:
//   int main(int argc, char** argv) {
//     if (auto exit_code = loom::base::ParseToolFlags(&argc, &argv, kUsage, "tools/my_tool.cc")) {
//       return *exit_code;
//     }
#ifndef LOOM_BASE_TOOL_FLAGS_H_
#define LOOM_BASE_TOOL_FLAGS_H_

#include <optional>
#include <string>

namespace loom::base {

std::optional<int> ParseToolFlags(int* argc, char*** argv, const std::string& usage,
                                  const std::string& source_file);

// The help ParseToolFlags prints (for tests).
std::string ToolHelp(const std::string& usage, const std::string& source_file);

}  // namespace loom::base

#endif  // LOOM_BASE_TOOL_FLAGS_H_
