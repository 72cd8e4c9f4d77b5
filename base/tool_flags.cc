#include "base/tool_flags.h"

#include <gflags/gflags.h>

#include <iostream>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace loom::base {
namespace {

bool AsksForHelp(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-help" || a == "-h" || a == "--helpshort" || a == "-helpshort") {
      return true;
    }
    if (a == "--") break;
  }
  return false;
}

}  // namespace

std::string ToolHelp(const std::string& usage, const std::string& source_file) {
  std::vector<gflags::CommandLineFlagInfo> flags;
  gflags::GetAllFlags(&flags);  // sorted by file, then name
  std::string out = absl::StrCat(usage, "\n\nFlags:\n");
  for (const gflags::CommandLineFlagInfo& f : flags) {
    if (!absl::EndsWith(f.filename, source_file)) continue;
    absl::StrAppend(&out, "  --", f.name, " (", f.description, ") type: ", f.type,
                    " default: ", f.type == "string" ? "\"" + f.default_value + "\"" : f.default_value,
                    "\n");
  }
  return out;
}

std::optional<int> ParseToolFlags(int* argc, char*** argv, const std::string& usage,
                                  const std::string& source_file) {
  gflags::SetUsageMessage(usage);
  if (AsksForHelp(*argc, *argv)) {
    std::cout << ToolHelp(usage, source_file);
    return 0;
  }
  gflags::ParseCommandLineFlags(argc, argv, /*remove_flags=*/true);
  return std::nullopt;
}

}  // namespace loom::base
