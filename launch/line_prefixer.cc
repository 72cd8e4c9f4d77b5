#include "launch/line_prefixer.h"

namespace loom::launch {

std::string LinePrefixer::Append(absl::string_view bytes) {
  std::string out;
  while (!bytes.empty()) {
    size_t newline = bytes.find('\n');
    if (newline == absl::string_view::npos) {
      partial_.append(bytes.data(), bytes.size());
      bytes = {};
    } else {
      partial_.append(bytes.data(), newline);
      bytes.remove_prefix(newline + 1);
      out += prefix_;
      out += partial_;
      out += '\n';
      partial_.clear();
      continue;
    }
  }
  while (partial_.size() > max_line_bytes_) {
    out += prefix_;
    out.append(partial_, 0, max_line_bytes_);
    out += '\n';
    partial_.erase(0, max_line_bytes_);
  }
  return out;
}

std::string LinePrefixer::Finish() {
  if (partial_.empty()) return "";
  std::string out = prefix_ + partial_ + "\n";
  partial_.clear();
  return out;
}

}  // namespace loom::launch
