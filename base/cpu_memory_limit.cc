#include "base/cpu_memory_limit.h"

#include <c10/core/CPUAllocator.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <mutex>
#include <string>
#include <unordered_map>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "base/torch_compat.h"

namespace loom::base {
namespace {

// Wraps the CPU allocator; every block it hands out is remembered with its size and the
// wrapped allocator's deleter, so freeing it gives the bytes back.
class LimitedAllocator : public AllocatorBase {
 public:
  LimitedAllocator(c10::Allocator* base, int64_t limit) : base_(base), limit_(limit) {
    instance_ = this;
  }

  // Counts n more bytes as held; throws the allocator's OutOfMemoryError past the limit.
  void Charge(size_t n) const {
    std::lock_guard<std::mutex> lock(mu_);
    if (live_ + static_cast<int64_t>(n) > limit_) {
      TORCH_CHECK_WITH(OutOfMemoryError, false,
                       "DefaultCPUAllocator: can't allocate memory: you tried to allocate ", n,
                       " bytes while this process holds ", live_, " bytes of its ",
                       kCpuMemoryLimitEnv, " of ", limit_, " bytes");
    }
    live_ += static_cast<int64_t>(n);
    peak_ = std::max(peak_, live_);
  }
  void Refund(int64_t n) const {
    std::lock_guard<std::mutex> lock(mu_);
    live_ -= n;
  }

  c10::DataPtr AllocateBytes(size_t n) const override {
    Charge(n);
    c10::DataPtr inner;
    try {
      inner = base_->allocate(n);
    } catch (...) {
      Refund(static_cast<int64_t>(n));
      throw;
    }
    void* data = inner.get();
    {
      std::lock_guard<std::mutex> lock(mu_);
      blocks_[data] = {static_cast<int64_t>(n), inner.get_deleter()};
    }
    inner.release_context();
    return {data, data, &Release, c10::Device(c10::DeviceType::CPU)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &Release; }

  CpuMemoryStats Stats() const {
    std::lock_guard<std::mutex> lock(mu_);
    return {limit_, live_, peak_};
  }
  void ResetPeak() {
    std::lock_guard<std::mutex> lock(mu_);
    peak_ = live_;
  }
  static LimitedAllocator* instance() { return instance_; }

 private:
  struct Block {
    int64_t bytes;
    c10::DeleterFnPtr deleter;
  };
  static void Release(void* data) {
    Block block{0, nullptr};
    {
      std::lock_guard<std::mutex> lock(instance_->mu_);
      auto it = instance_->blocks_.find(data);
      if (it == instance_->blocks_.end()) return;
      block = it->second;
      instance_->blocks_.erase(it);
      instance_->live_ -= block.bytes;
    }
    if (block.deleter != nullptr) block.deleter(data);
  }

  c10::Allocator* base_;
  const int64_t limit_;
  mutable std::mutex mu_;
  mutable int64_t live_ = 0;
  mutable int64_t peak_ = 0;
  mutable std::unordered_map<void*, Block> blocks_;
  static LimitedAllocator* instance_;
};

LimitedAllocator* LimitedAllocator::instance_ = nullptr;

}  // namespace

absl::StatusOr<int64_t> ParseMemorySize(absl::string_view text) {
  const std::string s = absl::AsciiStrToLower(absl::StripAsciiWhitespace(text));
  size_t digits = 0;
  while (digits < s.size() && (absl::ascii_isdigit(s[digits]) || s[digits] == '.')) ++digits;
  double value = 0;
  const std::string unit(absl::StripAsciiWhitespace(s.substr(digits)));
  static const std::pair<const char*, double> kUnits[] = {{"", 1},
                                                          {"b", 1},
                                                          {"kb", 1e3},
                                                          {"mb", 1e6},
                                                          {"gb", 1e9},
                                                          {"tb", 1e12},
                                                          {"kib", 1024.0},
                                                          {"mib", 1024.0 * 1024},
                                                          {"gib", std::pow(1024.0, 3)},
                                                          {"tib", std::pow(1024.0, 4)}};
  double scale = 0;
  for (const auto& [name, factor] : kUnits) {
    if (unit == name) scale = factor;
  }
  if (digits == 0 || scale == 0 || !absl::SimpleAtod(s.substr(0, digits), &value) || !(value > 0) ||
      value * scale > 9.0e18) {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", text, "' is not a memory size (e.g. 350MB, 1.5GiB or a number of bytes)"));
  }
  return static_cast<int64_t>(value * scale);
}

std::optional<CpuMemoryStats> CurrentCpuMemoryStats() {
  if (LimitedAllocator::instance() == nullptr) return std::nullopt;
  return LimitedAllocator::instance()->Stats();
}

void ChargeCpuMemory(int64_t bytes) {
  if (LimitedAllocator::instance() != nullptr) {
    LimitedAllocator::instance()->Charge(static_cast<size_t>(bytes));
  }
}

void RefundCpuMemory(int64_t bytes) {
  if (LimitedAllocator::instance() != nullptr) LimitedAllocator::instance()->Refund(bytes);
}

void ResetCpuMemoryPeak() {
  if (LimitedAllocator::instance() != nullptr) LimitedAllocator::instance()->ResetPeak();
}

absl::StatusOr<int64_t> InstallCpuMemoryLimitFromEnv() {
  const char* env = std::getenv(kCpuMemoryLimitEnv);
  if (env == nullptr || *env == '\0') return int64_t{0};
  absl::StatusOr<int64_t> limit = ParseMemorySize(env);
  if (!limit.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(kCpuMemoryLimitEnv, ": ", limit.status().message()));
  }
  static LimitedAllocator* allocator = new LimitedAllocator(c10::GetCPUAllocator(), *limit);
  c10::SetCPUAllocator(allocator, /*priority=*/50);
  return *limit;
}

}  // namespace loom::base
