// The hidden working folders (names.h) this process is using right now, so that
// RemoveStaleStaging never removes a folder a live StagedFolder or a running deletion in the
// same process still owns. Keyed by the entry name, which is unique (pid + 64 random bits).
// Internal to checkpoint/folder. Thread-safe.
//
// Example:
//   internal::LiveFolder guard(hidden_name);   // registered until `guard` is destroyed
//   ... internal::IsLiveFolder(hidden_name) == true ...
#ifndef LOOM_CHECKPOINT_FOLDER_INTERNAL_LIVE_FOLDERS_H_
#define LOOM_CHECKPOINT_FOLDER_INTERNAL_LIVE_FOLDERS_H_

#include <string>

#include "absl/strings/string_view.h"

namespace loom::checkpoint::internal {

void RegisterLiveFolder(absl::string_view entry_name);
void UnregisterLiveFolder(absl::string_view entry_name);
bool IsLiveFolder(absl::string_view entry_name);

// Registers `entry_name` for its lifetime.
class LiveFolder {
 public:
  explicit LiveFolder(std::string entry_name) : name_(std::move(entry_name)) {
    RegisterLiveFolder(name_);
  }
  ~LiveFolder() { UnregisterLiveFolder(name_); }
  LiveFolder(const LiveFolder&) = delete;
  LiveFolder& operator=(const LiveFolder&) = delete;

 private:
  std::string name_;
};

}  // namespace loom::checkpoint::internal

#endif  // LOOM_CHECKPOINT_FOLDER_INTERNAL_LIVE_FOLDERS_H_
