// PrintErrorLine: a program's one-line error on stderr, "<program>: error: <message>\n", written
// with a single write(2), so that the ranks of a launched job that fail together (each rank of
// `launch --nproc_per_node 2` reporting the same missing model folder) print whole lines rather
// than interleaving their pieces: unbuffered std::cerr issues one write per `<<`.
//
// Contract:
//   - The line is formatted first, then written in one write(2) to descriptor 2 (repeated only
//     for the part a short write or an EINTR left). Writes of up to PIPE_BUF bytes to a pipe are
//     atomic, and regular files shared by several processes serialise each write.
//   - Never fails: a closed or broken stderr loses the line, as std::cerr would.
//
// Example:
//   if (absl::Status s = Run(); !s.ok()) {
//     loom::base::PrintErrorLine("run_glue", s.message());
//     return 1;
//   }
#ifndef LOOM_BASE_ERROR_LINE_H_
#define LOOM_BASE_ERROR_LINE_H_

#include <string>

#include "absl/strings/string_view.h"

namespace loom::base {

// "<program>: error: <message>\n".
std::string FormatErrorLine(absl::string_view program, absl::string_view message);

// Writes FormatErrorLine(program, message) to stderr in one write(2).
void PrintErrorLine(absl::string_view program, absl::string_view message);

}  // namespace loom::base

#endif  // LOOM_BASE_ERROR_LINE_H_
