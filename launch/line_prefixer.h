// Turns a byte stream from one rank into whole prefixed lines, so that lines of different ranks
// written to one terminal never interleave mid-line.
//
// Contract: Append(bytes) returns the complete lines seen so far, each as `prefix + line + "\n"`;
// a partial line is kept until its newline arrives. A partial line longer than `max_line_bytes`
// is emitted (with a newline) rather than buffered forever. Finish() returns the remaining
// partial line, newline-terminated, or "" when there is none.
//
// Example:
//   LinePrefixer p("[rank 1]:");
//   p.Append("a\nb");  // "[rank 1]:a\n"
//   p.Finish();        // "[rank 1]:b\n"
#ifndef LOOM_LAUNCH_LINE_PREFIXER_H_
#define LOOM_LAUNCH_LINE_PREFIXER_H_

#include <cstddef>
#include <string>

#include "absl/strings/string_view.h"

namespace loom::launch {

class LinePrefixer {
 public:
  explicit LinePrefixer(std::string prefix, size_t max_line_bytes = 64 * 1024)
      : prefix_(std::move(prefix)), max_line_bytes_(max_line_bytes) {}

  std::string Append(absl::string_view bytes);
  std::string Finish();

 private:
  std::string prefix_;
  size_t max_line_bytes_;
  std::string partial_;
};

}  // namespace loom::launch

#endif  // LOOM_LAUNCH_LINE_PREFIXER_H_
