#include "checkpoint/folder/internal/live_folders.h"

#include <mutex>
#include <set>
#include <string>

namespace loom::checkpoint::internal {
namespace {

struct Registry {
  std::mutex mu;
  std::multiset<std::string, std::less<>> names;
};

Registry& GetRegistry() {
  static Registry* registry = new Registry;
  return *registry;
}

}  // namespace

void RegisterLiveFolder(absl::string_view entry_name) {
  Registry& r = GetRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.names.insert(std::string(entry_name));
}

void UnregisterLiveFolder(absl::string_view entry_name) {
  Registry& r = GetRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.names.find(entry_name);
  if (it != r.names.end()) r.names.erase(it);
}

bool IsLiveFolder(absl::string_view entry_name) {
  Registry& r = GetRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  return r.names.find(entry_name) != r.names.end();
}

}  // namespace loom::checkpoint::internal
