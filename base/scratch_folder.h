// ScratchFolder: a folder of temporary files that is removed when its owner goes away — at
// normal destruction, and also when the process is stopped by SIGINT, SIGTERM or SIGHUP
// (ZeRO-Infinity's swap files: a killed run must not leave gigabytes on the disk).
//
// Contract:
//   - Create(parent, prefix): makes a new folder parent/prefix-XXXXXX (mkdtemp), private to
//     this process. Errors name `parent` (missing, not a folder, not writable).
//   - The destructor removes every file in it and the folder (files only: the folder is flat).
//   - While any ScratchFolder lives, a handler for SIGINT, SIGTERM and SIGHUP removes the files
//     and folders of every live one with raw system calls (getdents64, unlinkat, nanosleep:
//     safe in a signal handler), then restores the previous disposition and re-raises the
//     signal, so the process ends as it would have (a handler installed before runs after).
//     Other threads keep running meanwhile and may finish a file just after a pass: the handler
//     repeats until the folder itself is removed (then nothing more can land in it), for about
//     two seconds at most.
//   - A process killed by SIGKILL (or a machine that lost power) cannot clean up: each folder
//     holds a marker file (.loom-scratch-folder) and stays locked (flock) by its owner while
//     it lives, and Create removes the folders in `parent` that carry the marker but whose lock
//     nobody holds — a killed run's swap files go when the next run starts; live folders of
//     other processes (other ranks, other jobs on the same disk) are never touched.
//     stale_removed() names them, for the caller to log.
//   - At most kMaxLive folders are live at once (ResourceExhausted beyond).
// The signal handler needs process-wide state (a fixed table of open folder descriptors); this
// is the one place in loom that keeps it, because a signal handler can reach nothing else.
//
// Example:
//   ASSIGN_OR_RETURN(std::unique_ptr<ScratchFolder> swap,
//                    ScratchFolder::Create("/local_nvme", "loom-swap-rank0"));
//   WriteFile(swap->path() + "/part0.swp", ...);
#ifndef LOOM_BASE_SCRATCH_FOLDER_H_
#define LOOM_BASE_SCRATCH_FOLDER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace loom::base {

class ScratchFolder {
 public:
  static constexpr int kMaxLive = 32;

  static absl::StatusOr<std::unique_ptr<ScratchFolder>> Create(const std::string& parent,
                                                               const std::string& prefix);
  ~ScratchFolder();
  ScratchFolder(const ScratchFolder&) = delete;
  ScratchFolder& operator=(const ScratchFolder&) = delete;

  const std::string& path() const { return path_; }
  // Folders of dead processes Create removed from `parent` (see the contract).
  const std::vector<std::string>& stale_removed() const { return stale_removed_; }

 private:
  ScratchFolder(std::string path, int slot) : path_(std::move(path)), slot_(slot) {}
  std::string path_;
  int slot_;
  std::vector<std::string> stale_removed_;
};

}  // namespace loom::base

#endif  // LOOM_BASE_SCRATCH_FOLDER_H_
