#include "threads/host_heap.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <cstdlib>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace loom::threads {
namespace {

constexpr bool kHaveGlibc =
#if defined(__GLIBC__)
    true;
#else
    false;
#endif

std::string Bytes(size_t n) {
  if (n + 1 >= (size_t{1} << 30)) return absl::StrCat((n + 1) >> 30, " GiB");
  return absl::StrCat(n >> 20, " MiB");
}

}  // namespace

const std::vector<std::string>& HeapEnvironmentVariables() {
  static const auto* const kNames =
      new std::vector<std::string>{"GLIBC_TUNABLES", "MALLOC_MMAP_THRESHOLD_",
                                   "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_", "LD_PRELOAD"};
  return *kNames;
}

std::map<std::string, std::string> HeapEnvironment() {
  std::map<std::string, std::string> env;
  for (const std::string& name : HeapEnvironmentVariables()) {
    if (const char* v = std::getenv(name.c_str())) env[name] = v;
  }
  return env;
}

HeapPlan DecideHeap(const std::map<std::string, std::string>& env) {
  HeapPlan plan;
  if (!kHaveGlibc) {
    plan.reason = "not glibc's malloc";
    return plan;
  }
  for (const std::string& name : HeapEnvironmentVariables()) {
    auto it = env.find(name);
    if (it == env.end()) continue;
    const bool user_choice =
        (name == "GLIBC_TUNABLES" && absl::StrContains(it->second, "glibc.malloc.")) ||
        (name == "LD_PRELOAD" && absl::StrContains(it->second, "malloc")) ||
        absl::StartsWith(name, "MALLOC_");
    if (user_choice) {
      plan.reason = absl::StrCat(name, "=", it->second, ", yours");
      return plan;
    }
  }
  plan.keep_freed = true;
  return plan;
}

std::string HeapPlan::Describe() const {
  if (!keep_freed) return absl::StrCat("heap: left as set (", reason, ")");
  return absl::StrCat("heap: freed blocks kept for reuse (mmap threshold ", Bytes(mmap_threshold),
                      ", trim threshold ", Bytes(trim_threshold), ")");
}

absl::Status ApplyHeapPlan(const HeapPlan& plan) {
  if (!plan.keep_freed) return absl::OkStatus();
#if defined(__GLIBC__)
  // mallopt returns 1 on success; glibc refuses an mmap threshold above HEAP_MAX_SIZE / 2.
  if (mallopt(M_MMAP_THRESHOLD, static_cast<int>(plan.mmap_threshold)) != 1 ||
      mallopt(M_TRIM_THRESHOLD, static_cast<int>(plan.trim_threshold)) != 1) {
    return absl::InternalError(absl::StrCat("glibc's mallopt refused ", plan.Describe()));
  }
#endif
  return absl::OkStatus();
}

}  // namespace loom::threads
