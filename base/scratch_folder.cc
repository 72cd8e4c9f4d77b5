#include "base/scratch_folder.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"

namespace loom::base {
namespace {

constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};

// One live folder: descriptors of the folder and of its parent, and its name in the parent.
struct Slot {
  std::atomic<int> dir_fd{-1};
  int parent_fd = -1;
  char name[256] = {};
};

// Process-wide, as a signal handler needs (see the header).
Slot g_slots[ScratchFolder::kMaxLive];
std::mutex g_mu;  // guards registration (never taken by the handler)
int g_live = 0;
struct sigaction g_previous[sizeof(kSignals) / sizeof(kSignals[0])];

// Removes the folder's files (raw getdents64 + unlinkat); signal-safe.
void RemoveContents(int dir_fd) {
  alignas(8) char buf[4096];
  for (int pass = 0; pass < 64; ++pass) {  // re-read until empty (entries shift as we unlink)
    ::lseek(dir_fd, 0, SEEK_SET);
    const long n = ::syscall(SYS_getdents64, dir_fd, buf, sizeof(buf));
    if (n <= 0) break;
    bool removed = false;
    for (long off = 0; off < n;) {
      struct Entry {
        uint64_t ino;
        int64_t off;
        unsigned short reclen;
        unsigned char type;
        char name[1];
      };
      const auto* e = reinterpret_cast<const Entry*>(buf + off);
      const char* entry = e->name;
      if (!(entry[0] == '.' && (entry[1] == 0 || (entry[1] == '.' && entry[2] == 0)))) {
        if (::unlinkat(dir_fd, entry, 0) == 0) removed = true;
      }
      off += e->reclen;
    }
    if (!removed) break;
  }
}

// Until the folder itself is gone: other threads of the process keep running while a handler
// runs, and one may finish writing a file just after the pass above. Once the folder is
// removed nothing can be created in it. Gives up after about two seconds.
void RemoveFolder(int dir_fd, int parent_fd, const char* name) {
  for (int attempt = 0; attempt < 200; ++attempt) {
    RemoveContents(dir_fd);
    if (::unlinkat(parent_fd, name, AT_REMOVEDIR) == 0 || errno == ENOENT) return;
    struct timespec pause = {0, 10 * 1000 * 1000};
    ::nanosleep(&pause, nullptr);
  }
}

void OnSignal(int sig) {
  const int saved_errno = errno;
  for (Slot& s : g_slots) {
    const int fd = s.dir_fd.exchange(-1);
    if (fd >= 0) RemoveFolder(fd, s.parent_fd, s.name);
  }
  // The previous disposition, then the signal again: the process ends as it would have.
  for (size_t i = 0; i < sizeof(kSignals) / sizeof(kSignals[0]); ++i) {
    if (kSignals[i] == sig) ::sigaction(sig, &g_previous[i], nullptr);
  }
  errno = saved_errno;
  ::raise(sig);
}

constexpr char kMarker[] = ".loom-scratch-folder";

// Removes the folders in `parent_fd` left by processes that died without cleaning up (SIGKILL,
// a power cut): those holding kMarker whose lock nobody holds (a live owner keeps its folder
// locked with flock until it ends). Returns their names.
std::vector<std::string> RemoveStaleFolders(int parent_fd) {
  std::vector<std::string> removed;
  const int list_fd = ::openat(parent_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR* dir = list_fd < 0 ? nullptr : ::fdopendir(list_fd);
  if (dir == nullptr) {
    if (list_fd >= 0) ::close(list_fd);
    return removed;
  }
  std::vector<std::string> names;
  while (const dirent* e = ::readdir(dir)) {
    const bool maybe_dir = e->d_type == DT_DIR || e->d_type == DT_UNKNOWN;
    if (maybe_dir && e->d_name[0] != '.') names.emplace_back(e->d_name);
  }
  ::closedir(dir);
  for (const std::string& name : names) {
    const int fd =
        ::openat(parent_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) continue;
    if (::faccessat(fd, kMarker, F_OK, 0) == 0 && ::flock(fd, LOCK_EX | LOCK_NB) == 0) {
      RemoveFolder(fd, parent_fd, name.c_str());
      removed.push_back(name);
    }
    ::close(fd);
  }
  return removed;
}

}  // namespace

absl::StatusOr<std::unique_ptr<ScratchFolder>> ScratchFolder::Create(const std::string& parent,
                                                                     const std::string& prefix) {
  struct stat st;
  if (::stat(parent.c_str(), &st) != 0) {
    return absl::NotFoundError(absl::StrCat(parent, ": ", std::strerror(errno)));
  }
  if (!S_ISDIR(st.st_mode)) return absl::InvalidArgumentError(parent + " is not a folder");
  std::string templ = absl::StrCat(parent, "/", prefix, "-XXXXXX");
  std::vector<char> buf(templ.begin(), templ.end());
  buf.push_back('\0');
  if (::mkdtemp(buf.data()) == nullptr) {
    const int err = errno;
    const std::string text =
        absl::StrCat("cannot create a folder in ", parent, ": ", std::strerror(err));
    if (err == EACCES || err == EPERM || err == EROFS) return absl::PermissionDeniedError(text);
    if (err == ENOSPC) return absl::ResourceExhaustedError(text);
    return absl::InternalError(text);
  }
  std::string path(buf.data());
  const std::string name = path.substr(path.rfind('/') + 1);
  std::lock_guard<std::mutex> lock(g_mu);
  int slot = -1;
  for (int i = 0; i < kMaxLive; ++i) {
    if (g_slots[i].dir_fd.load() < 0 && g_slots[i].parent_fd < 0) {
      slot = i;
      break;
    }
  }
  const int dir_fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  const int parent_fd = ::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (slot < 0 || dir_fd < 0 || parent_fd < 0 || name.size() >= sizeof(Slot::name)) {
    if (dir_fd >= 0) ::close(dir_fd);
    if (parent_fd >= 0) ::close(parent_fd);
    ::rmdir(path.c_str());
    return absl::ResourceExhaustedError(
        absl::StrCat("cannot register the scratch folder ", path,
                     slot < 0 ? absl::StrCat(": more than ", kMaxLive, " live at once") : ""));
  }
  // Locked before it is marked, so no other process's sweep ever takes a live folder as stale.
  if (::flock(dir_fd, LOCK_EX | LOCK_NB) == 0) {
    const int marker = ::openat(dir_fd, kMarker, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    if (marker >= 0) ::close(marker);
  }
  std::vector<std::string> stale = RemoveStaleFolders(parent_fd);
  Slot& s = g_slots[slot];
  std::memcpy(s.name, name.c_str(), name.size() + 1);
  s.parent_fd = parent_fd;
  s.dir_fd.store(dir_fd);
  if (g_live++ == 0) {
    struct sigaction sa = {};
    sa.sa_handler = OnSignal;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof(kSignals) / sizeof(kSignals[0]); ++i) {
      ::sigaction(kSignals[i], &sa, &g_previous[i]);
    }
  }
  auto folder = std::unique_ptr<ScratchFolder>(new ScratchFolder(std::move(path), slot));
  folder->stale_removed_ = std::move(stale);
  return folder;
}

ScratchFolder::~ScratchFolder() {
  std::lock_guard<std::mutex> lock(g_mu);
  Slot& s = g_slots[slot_];
  const int fd = s.dir_fd.exchange(-1);
  if (fd >= 0) {
    RemoveFolder(fd, s.parent_fd, s.name);
    ::close(fd);
  }
  ::close(s.parent_fd);
  s.parent_fd = -1;
  if (--g_live == 0) {
    for (size_t i = 0; i < sizeof(kSignals) / sizeof(kSignals[0]); ++i) {
      ::sigaction(kSignals[i], &g_previous[i], nullptr);
    }
  }
}

}  // namespace loom::base
