#include "checkpoint/shard_size.h"

#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace loom::checkpoint {
namespace {

absl::Status FormatError(absl::string_view text) {
  return absl::InvalidArgumentError(
      absl::StrCat("max_shard_size \"", text,
                   "\": `size` is not in a valid format. Use an integer followed by the unit, "
                   "e.g., '5GB'."));
}

// Python's int(text) for base 10, limited to what fits in 64 bits (sign kept separately).
bool ParsePythonInt(absl::string_view text, bool* negative, uint64_t* value) {
  text = absl::StripAsciiWhitespace(text);
  *negative = false;
  if (!text.empty() && (text[0] == '+' || text[0] == '-')) {
    *negative = text[0] == '-';
    text.remove_prefix(1);
  }
  if (text.empty() || !absl::ascii_isdigit(text.front()) || !absl::ascii_isdigit(text.back())) {
    return false;
  }
  uint64_t n = 0;
  char previous = '0';
  for (char c : text) {
    if (c == '_') {
      if (previous == '_') return false;
    } else if (absl::ascii_isdigit(c)) {
      if (__builtin_mul_overflow(n, uint64_t{10}, &n) ||
          __builtin_add_overflow(n, static_cast<uint64_t>(c - '0'), &n)) {
        return false;
      }
    } else {
      return false;
    }
    previous = c;
  }
  *value = n;
  return true;
}

}  // namespace

absl::StatusOr<uint64_t> ParseShardSize(absl::string_view text) {
  const std::string upper = absl::AsciiStrToUpper(text);
  struct Unit {
    absl::string_view suffix;
    uint64_t factor;
    bool decimal;  // GB/MB/KB: a lowercase trailing "b" means bits
  };
  static constexpr Unit kUnits[] = {
      {"GIB", uint64_t{1} << 30, false}, {"MIB", uint64_t{1} << 20, false},
      {"KIB", uint64_t{1} << 10, false}, {"GB", 1'000'000'000, true},
      {"MB", 1'000'000, true},           {"KB", 1'000, true},
  };
  absl::string_view number = text;
  uint64_t factor = 1;
  bool bits = false;
  for (const Unit& unit : kUnits) {
    if (absl::EndsWith(upper, unit.suffix)) {
      number = text.substr(0, text.size() - unit.suffix.size());
      factor = unit.factor;
      bits = unit.decimal && absl::EndsWith(text, "b");
      break;
    }
  }
  bool negative = false;
  uint64_t n = 0;
  if (!ParsePythonInt(number, &negative, &n)) return FormatError(text);
  uint64_t bytes = 0;
  if (__builtin_mul_overflow(n, factor, &bytes)) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_shard_size \"", text, "\" is more than 2^64 - 1 bytes"));
  }
  if (bits) bytes /= 8;
  if (negative || bytes == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "max_shard_size \"", text, "\" is not a positive size; use e.g. '5GB' or '500MB'"));
  }
  return bytes;
}

}  // namespace loom::checkpoint
