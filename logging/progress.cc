#include "logging/progress.h"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <iostream>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace loom::logging {
namespace {

constexpr int kBarWidth = 20;
// Fake clocks step in decimal fractions; 0.3 - 0.2 must count as 0.1.
constexpr double kEpsilon = 1e-9;

// tqdm's format_interval: MM:SS, or H:MM:SS from an hour on.
std::string FormatInterval(double seconds) {
  const int64_t total = seconds > 0 ? static_cast<int64_t>(seconds) : 0;
  const int64_t h = total / 3600, m = (total / 60) % 60, s = total % 60;
  if (h > 0) return absl::StrFormat("%d:%02d:%02d", h, m, s);
  return absl::StrFormat("%02d:%02d", m, s);
}

// The tenth of `total` that `count` lies in (10 once done).
int64_t Tenth(int64_t count, int64_t total) {
  if (count >= total) return 10;
  return count * 10 / total;
}

}  // namespace

bool StderrIsTty() { return ::isatty(STDERR_FILENO) != 0; }

ProgressBar::ProgressBar(ProgressOptions options)
    : options_(std::move(options)), out_(options_.out ? options_.out : &std::cerr) {
  start_ = Now();
  last_print_ = start_;
  if (!options_.disable && options_.is_tty) Draw(start_);
}

ProgressBar::~ProgressBar() { Close(); }

double ProgressBar::Now() const {
  if (options_.clock) return options_.clock();
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string ProgressBar::Line(double now) const {
  const double elapsed = now - start_;
  const bool rate_known = elapsed > 0 && count_ > 0;
  const double rate = rate_known ? count_ / elapsed : 0;
  std::string rate_text = "?it/s";
  if (rate_known) {
    rate_text =
        rate >= 1 ? absl::StrFormat("%.2fit/s", rate) : absl::StrFormat("%.2fs/it", 1 / rate);
  }
  std::string line = options_.description.empty() ? "" : absl::StrCat(options_.description, ": ");
  const int64_t total = options_.total;
  if (total <= 0) {
    absl::StrAppend(&line, count_, "it [", FormatInterval(elapsed), ", ", rate_text, "]");
    return line;
  }
  const int64_t done = count_ < total ? count_ : total;
  const int64_t percent = done * 100 / total;
  const int64_t filled = done * kBarWidth / total;
  const std::string eta =
      rate_known ? FormatInterval(static_cast<double>(total - done) / rate) : "?";
  absl::StrAppend(&line, absl::StrFormat("%3d%%", percent), "|", std::string(filled, '#'),
                  std::string(kBarWidth - filled, ' '), "| ", count_, "/", total, " [",
                  FormatInterval(elapsed), "<", eta, ", ", rate_text, "]");
  return line;
}

void ProgressBar::Draw(double now) {
  std::string line = Line(now);
  const size_t width = line.size();
  if (width < last_width_) line.append(last_width_ - width, ' ');
  *out_ << '\r' << line << std::flush;
  last_width_ = width;
  last_print_ = now;
  last_printed_count_ = count_;
}

void ProgressBar::PrintLine(double now) {
  *out_ << Line(now) << '\n' << std::flush;
  last_print_ = now;
  last_printed_count_ = count_;
}

void ProgressBar::Update(int64_t n) {
  if (closed_) return;
  const int64_t before = count_;
  count_ += n;
  if (options_.disable) return;
  const double now = Now();
  const double since = now - last_print_ + kEpsilon;
  const int64_t total = options_.total;
  const bool reached_total = total > 0 && count_ >= total && before < total;
  if (options_.is_tty) {
    if (since >= options_.tty_min_interval_s || reached_total) Draw(now);
    return;
  }
  const int64_t reference = last_printed_count_ < 0 ? 0 : last_printed_count_;
  const bool new_tenth = total > 0 && Tenth(count_, total) > Tenth(reference, total);
  if (new_tenth || since >= options_.plain_min_interval_s) PrintLine(now);
}

void ProgressBar::Write(absl::string_view message) {
  if (!options_.disable && options_.is_tty && !closed_) {
    *out_ << '\r' << std::string(last_width_, ' ') << '\r' << message << '\n';
    last_width_ = 0;
    Draw(last_print_);
    return;
  }
  *out_ << message << '\n' << std::flush;
}

void ProgressBar::Close() {
  if (closed_) return;
  closed_ = true;
  if (options_.disable) return;
  const double now = Now();
  if (options_.is_tty) {
    Draw(now);
    *out_ << '\n' << std::flush;
    return;
  }
  if (last_printed_count_ != count_) PrintLine(now);
}

}  // namespace loom::logging
