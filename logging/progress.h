// A tqdm-like progress display for long loops (training steps, evaluation batches).
//
// Contract:
//   The line reads (total known)   "desc: 45%|#########           | 45/100 [00:12<00:14, 3.67it/s]"
//                  (total unknown) "desc: 45it [00:12, 3.67it/s]"
//   with "desc: " left out when the description is empty. The percentage and the 20-character
//   bar are rounded down; elapsed and ETA are MM:SS (H:MM:SS from an hour on); the rate is the
//   average since construction, shown as "N.NNit/s", or "N.NNs/it" below 1 it/s, and "?it/s"
//   (ETA "?") before any time has passed or any work was done.
//
//   On a TTY (`is_tty`) the line is drawn at construction and redrawn in place with '\r' (padded
//   with spaces over a longer previous line) at most every `tty_min_interval_s` seconds, and
//   always when the count reaches the total. Close() redraws it and ends it with '\n'.
//   Elsewhere (logs, CI) nothing is drawn at construction; Update() prints a newline-terminated
//   line when the count enters a new tenth of the total or `plain_min_interval_s` seconds have
//   passed since the last line (or since construction); Close() prints the final line unless
//   the last line printed already showed the final count.
//   `disable` (TrainingArguments.disable_tqdm) turns all of that off. Write() prints a message
//   as tqdm.write does — even when disabled — and on a TTY keeps the bar below it.
//   Close() is idempotent and runs from the destructor; Update() after Close() is ignored.
//   Not thread-safe: one loop owns one ProgressBar.
//
// Example:
//   ProgressOptions options;
//   options.total = max_steps;
//   options.description = "train";
//   options.disable = args.disable_tqdm;
//   ProgressBar bar(options);
//   for (int64_t step = 0; step < max_steps; ++step) { TrainStep(); bar.Update(); }
//   bar.Close();
#ifndef LOOM_LOGGING_PROGRESS_H_
#define LOOM_LOGGING_PROGRESS_H_

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>

#include "absl/strings/string_view.h"

namespace loom::logging {

// isatty(STDERR_FILENO): whether stderr is a terminal.
bool StderrIsTty();

struct ProgressOptions {
  int64_t total = 0;  // <= 0: unknown
  std::string description;
  std::ostream* out = nullptr;  // nullptr: std::cerr
  bool is_tty = StderrIsTty();
  bool disable = false;
  std::function<double()> clock;       // seconds from any origin; empty: a steady clock
  double tty_min_interval_s = 0.1;     // at most ~10 redraws a second
  double plain_min_interval_s = 30.0;  // non-TTY lines between tenths
};

class ProgressBar {
 public:
  explicit ProgressBar(ProgressOptions options);
  ~ProgressBar();
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  // Advances the count by `n` and prints if the contract above says so.
  void Update(int64_t n = 1);

  // Prints the final line (see the contract). Idempotent.
  void Close();

  // Prints `message` on its own line; on a TTY the bar is cleared first and redrawn after.
  void Write(absl::string_view message);

  int64_t count() const { return count_; }

  // The progress line (without '\r' or '\n') for the current count at time `now`.
  std::string Line(double now) const;

 private:
  double Now() const;
  void Draw(double now);       // TTY: redraw in place
  void PrintLine(double now);  // plain: one newline-terminated line

  ProgressOptions options_;
  std::ostream* out_;
  double start_;
  int64_t count_ = 0;
  bool closed_ = false;
  double last_print_ = 0;
  int64_t last_printed_count_ = -1;  // -1: nothing printed yet
  size_t last_width_ = 0;            // TTY: length of the line on screen
};

}  // namespace loom::logging

#endif  // LOOM_LOGGING_PROGRESS_H_
