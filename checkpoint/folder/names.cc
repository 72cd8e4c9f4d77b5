#include "checkpoint/folder/names.h"

#include <unistd.h>

#include <limits>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "checkpoint/folder/internal/fs.h"

namespace loom::checkpoint {
namespace {

// Longest name HiddenFolderName can extend without exceeding NAME_MAX (255):
// ".loom-replaced-" (15) + name + "." + pid (<= 20) + "." + 16 hex = name + 53.
constexpr size_t kMaxFolderNameLength = 255 - 53;

bool AllDigits(absl::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

std::optional<int64_t> ParseStep(absl::string_view digits) {
  int64_t step = 0;
  for (char c : digits) {
    const int d = c - '0';
    if (step > (std::numeric_limits<int64_t>::max() - d) / 10) return std::nullopt;
    step = step * 10 + d;
  }
  return step;
}

}  // namespace

std::string CheckpointFolderName(int64_t step) {
  return absl::StrCat(kCheckpointPrefix, "-", step);
}

std::optional<int64_t> ParseCheckpointFolderName(absl::string_view name) {
  const std::string prefix = absl::StrCat(kCheckpointPrefix, "-");
  if (!absl::ConsumePrefix(&name, prefix) || !AllDigits(name)) return std::nullopt;
  return ParseStep(name);
}

std::optional<int64_t> ParseSortedCheckpointStep(absl::string_view name) {
  const std::string prefix = absl::StrCat(kCheckpointPrefix, "-");
  if (!absl::StartsWith(name, prefix)) return std::nullopt;
  // re.match(".*checkpoint-([0-9]+)"): greedy ".*" backtracks from the end, so the match is
  // the last "checkpoint-" followed by a digit; "[0-9]+" then takes every following digit.
  // ".*" does not cross a newline, so the match must also lie on the name's first line.
  const absl::string_view first_line = name.substr(0, name.find('\n'));
  for (size_t pos = first_line.rfind(prefix); pos != absl::string_view::npos;
       pos = pos == 0 ? absl::string_view::npos : first_line.rfind(prefix, pos - 1)) {
    size_t begin = pos + prefix.size();
    size_t end = begin;
    while (end < first_line.size() &&
           absl::ascii_isdigit(static_cast<unsigned char>(first_line[end]))) {
      ++end;
    }
    if (end > begin) return ParseStep(first_line.substr(begin, end - begin));
  }
  return std::nullopt;
}

absl::string_view HiddenKindName(HiddenKind kind) {
  switch (kind) {
    case HiddenKind::kStaging:
      return "staging";
    case HiddenKind::kReplaced:
      return "replaced";
    case HiddenKind::kDeleting:
      return "deleting";
  }
  return "staging";
}

std::string HiddenFolderName(HiddenKind kind, absl::string_view name) {
  return absl::StrCat(".loom-", HiddenKindName(kind), "-", name, ".", ::getpid(), ".",
                      internal::RandomHex16());
}

std::optional<HiddenFolder> ParseHiddenFolderName(absl::string_view entry) {
  if (!absl::ConsumePrefix(&entry, ".loom-")) return std::nullopt;
  HiddenFolder out;
  if (absl::ConsumePrefix(&entry, "staging-")) {
    out.kind = HiddenKind::kStaging;
  } else if (absl::ConsumePrefix(&entry, "replaced-")) {
    out.kind = HiddenKind::kReplaced;
  } else if (absl::ConsumePrefix(&entry, "deleting-")) {
    out.kind = HiddenKind::kDeleting;
  } else {
    return std::nullopt;
  }
  // <name>.<pid>.<16 hex>
  if (entry.size() < 17 || entry[entry.size() - 17] != '.') return std::nullopt;
  const absl::string_view hex = entry.substr(entry.size() - 16);
  for (char c : hex) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c)) && !(c >= 'a' && c <= 'f')) {
      return std::nullopt;
    }
  }
  entry.remove_suffix(17);
  const size_t dot = entry.rfind('.');
  if (dot == absl::string_view::npos || dot == 0) return std::nullopt;
  const absl::string_view pid = entry.substr(dot + 1);
  if (!AllDigits(pid) || !absl::SimpleAtoi(pid, &out.pid)) return std::nullopt;
  out.name = std::string(entry.substr(0, dot));
  return out;
}

absl::Status ValidateFolderName(absl::string_view name) {
  auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("invalid checkpoint folder name '", name,
                                                   "': ", why,
                                                   "; pass a single name such as "
                                                   "'checkpoint-40'"));
  };
  if (name.empty()) return bad("it is empty");
  if (name == "." || name == "..") return bad("it is not a folder name");
  if (name.find('/') != absl::string_view::npos) return bad("it contains '/'");
  if (name.find('\0') != absl::string_view::npos) return bad("it contains a NUL byte");
  if (name[0] == '.') return bad("hidden names (starting with '.') are reserved for loom's work");
  if (name.size() > kMaxFolderNameLength) {
    return bad(absl::StrCat("it is longer than ", kMaxFolderNameLength, " bytes"));
  }
  return absl::OkStatus();
}

}  // namespace loom::checkpoint
