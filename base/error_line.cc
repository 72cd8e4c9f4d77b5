#include "base/error_line.h"

#include <unistd.h>

#include <cerrno>
#include <string>
#include "absl/strings/string_view.h"

#include "absl/strings/str_cat.h"

namespace loom::base {

std::string FormatErrorLine(absl::string_view program, absl::string_view message) {
  return absl::StrCat(program, ": error: ", message, "\n");
}

void PrintErrorLine(absl::string_view program, absl::string_view message) {
  const std::string line = FormatErrorLine(program, message);
  absl::string_view left = line;
  while (!left.empty()) {
    const ssize_t n = ::write(STDERR_FILENO, left.data(), left.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    left.remove_prefix(static_cast<size_t>(n));
  }
}

}  // namespace loom::base
