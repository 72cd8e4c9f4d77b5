#include "sharding/deepspeed_checkpoint/zero_files.h"

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/file_util.h"
#include "base/status_macros.h"

namespace loom::sharding {
namespace {

using c10::IValue;

absl::Status Invalid(const std::string& file, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(file, ": ", what));
}

// The digit run of `s` starting at `i`, without leading zeros; `i` moved past it.
std::string DigitRun(const std::string& s, size_t& i) {
  const size_t begin = i;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
  const std::string run = s.substr(begin, i - begin);
  return run.substr(std::min(run.find_first_not_of('0'), run.size()));
}

}  // namespace

std::string ZeroTagName(int64_t global_step) { return absl::StrCat("global_step", global_step); }

std::string ZeroOptimStatesFile(int dp_rank, bool bf16) {
  return absl::StrCat(bf16 ? "bf16_" : "", "zero_pp_rank_", dp_rank, "_mp_rank_00",
                      kZeroOptimStatesSuffix);
}

std::string ZeroModelStatesFile(int stage, int dp_rank) {
  if (stage < 3) return kZeroModelStatesFile;
  return absl::StrCat("zero_pp_rank_", dp_rank, "_mp_rank_00", kZeroModelStatesSuffix);
}

int64_t ZeroAlignedNumel(int64_t numel, int world_size) {
  constexpr int64_t kAlignmentFactor = 2;  // DeepSpeed's nccl_start_alignment_factor
  const int64_t align = kAlignmentFactor * std::max(1, world_size);
  return (numel + align - 1) / align * align;
}

int64_t Zero3PartitionNumel(int64_t numel, int world_size) {
  const int64_t world = std::max(1, world_size);
  return (numel + world - 1) / world;
}

int64_t ZeroValidInPartition(int64_t numel, int64_t partition_numel, int rank) {
  return std::clamp<int64_t>(numel - rank * partition_numel, 0, partition_numel);
}

at::Tensor Zero3Piece(const at::Tensor& flat, int rank, int world_size) {
  const int64_t part = Zero3PartitionNumel(flat.numel(), world_size);
  at::Tensor piece = at::zeros({part}, flat.options());
  const int64_t valid = ZeroValidInPartition(flat.numel(), part, rank);
  if (valid > 0) piece.slice(0, 0, valid).copy_(flat.slice(0, rank * part, rank * part + valid));
  return piece;
}

absl::StatusOr<std::string> ReadZeroLatestTag(const std::string& folder) {
  const std::string latest = absl::StrCat(folder, "/", kZeroLatestFile);
  absl::StatusOr<std::string> tag = base::ReadFile(latest);
  if (!tag.ok()) {
    return absl::NotFoundError(absl::StrCat("Unable to find 'latest' file at ", latest));
  }
  return std::string(absl::StripAsciiWhitespace(*tag));
}

absl::StatusOr<std::string> ZeroTagFolder(const std::string& folder, const std::string& tag) {
  const std::string dir = absl::StrCat(folder, "/", tag);
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    return absl::NotFoundError(absl::StrCat("Directory '", dir, "' doesn't exist"));
  }
  return dir;
}

bool NaturalLess(const std::string& a, const std::string& b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (std::isdigit(static_cast<unsigned char>(a[i])) &&
        std::isdigit(static_cast<unsigned char>(b[j]))) {
      const std::string na = DigitRun(a, i), nb = DigitRun(b, j);
      if (na.size() != nb.size()) return na.size() < nb.size();
      if (na != nb) return na < nb;
    } else {
      if (a[i] != b[j]) return a[i] < b[j];
      ++i;
      ++j;
    }
  }
  return a.size() - i < b.size() - j;
}

std::vector<std::string> ListZeroFiles(const std::string& dir, const std::string& suffix) {
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (entry.is_regular_file(ec) && absl::EndsWith(name, suffix)) files.push_back(name);
  }
  std::sort(files.begin(), files.end(), NaturalLess);
  return files;
}

absl::StatusOr<IValue> ZeroEntry(const IValue& dict, const std::string& key,
                                 const std::string& file) {
  if (!dict.isGenericDict()) return Invalid(file, absl::StrCat("expected a dict holding '", key, "'"));
  const c10::impl::GenericDict d = dict.toGenericDict();
  auto it = d.find(IValue(key));
  if (it == d.end()) {
    return Invalid(file, absl::StrCat("no '", key, "' entry (is it a DeepSpeed ZeRO checkpoint?)"));
  }
  return it->value();
}

absl::StatusOr<int64_t> ZeroIntOrMax(const IValue& v, const std::string& key,
                                     const std::string& file) {
  if (v.isInt()) return v.toInt();
  if (v.isList() && !v.toListRef().empty()) {
    int64_t best = 0;
    bool all_ints = true;
    for (const IValue& e : v.toListRef()) {
      all_ints &= e.isInt();
      if (e.isInt()) best = std::max(best, e.toInt());
    }
    if (all_ints) return best;
  }
  return Invalid(file, absl::StrCat("'", key, "' is not an int or a list of ints (", v.tagKind(),
                                    ")"));
}

absl::StatusOr<std::vector<int64_t>> ZeroShape(const IValue& v, const std::string& what) {
  if (!v.isTuple() && !v.isList()) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": a shape that is not a tuple"));
  }
  const std::vector<IValue> dims =
      v.isTuple() ? v.toTupleRef().elements().vec() : v.toListRef().vec();
  std::vector<int64_t> shape;
  for (const IValue& e : dims) {
    if (!e.isInt() || e.toInt() < 0) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": a shape entry that is not a size"));
    }
    shape.push_back(e.toInt());
  }
  return shape;
}

absl::StatusOr<int64_t> ZeroNumel(const std::vector<int64_t>& shape, const std::string& what) {
  int64_t numel = 1;
  for (int64_t d : shape) {
    if (__builtin_mul_overflow(numel, d, &numel)) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": a shape too large to address"));
    }
  }
  return numel;
}

}  // namespace loom::sharding
