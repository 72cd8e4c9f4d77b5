// An LD_PRELOAD library that makes writes to chosen files fail with EIO, the way a dying disk
// does, for the fault-injection tests: loom's writers must report the error naming the file and
// leave no half-written file under a final name. Hand-written (no Debian package injects I/O
// errors per file without root: device-mapper's error target and FUSE need privileges).
//
// Contract (from the environment of the process it is preloaded into):
//   LOOM_EIO_PATH   a substring: files opened for writing whose path contains it are tracked
//                   (unset or empty: the library does nothing);
//   LOOM_EIO_AFTER  bytes (default 0) that writes to tracked files may complete, summed over all
//                   of them, before every further write(), pwrite(), pwritev(), writev(),
//                   sendfile(), copy_file_range() (std::filesystem::copy_file), fsync() and
//                   fdatasync() on them fails with EIO, and io_submit() (libaio) of a write
//                   to one returns -EIO.
//   LOOM_EIO_COUNT_FILE  when set, the bytes written to tracked files are written at exit to
//                   <file>.<pid> (to size LOOM_EIO_AFTER from a shorter run).
// Each failure is reported once on stderr ("eio_shim: EIO on <path>") so tests can tell an
// injected failure from another.
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <libaio.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/uio.h>
#include <unistd.h>

#include <atomic>

namespace {

constexpr int kMaxFds = 65536;
std::atomic<bool> g_tracked[kMaxFds];
std::atomic<long long> g_written{0};
std::atomic<bool> g_reported{false};

const char* Pattern() {
  const char* p = getenv("LOOM_EIO_PATH");
  return p != nullptr && *p != '\0' ? p : nullptr;
}

long long Budget() {
  const char* a = getenv("LOOM_EIO_AFTER");
  return a == nullptr ? 0 : atoll(a);
}

template <typename F>
F Real(const char* name) {
  return reinterpret_cast<F>(dlsym(RTLD_NEXT, name));
}

void Track(int fd, const char* path, int flags) {
  const char* pattern = Pattern();
  if (fd < 0 || fd >= kMaxFds || pattern == nullptr) return;
  const bool writing = (flags & (O_WRONLY | O_RDWR)) != 0;
  g_tracked[fd] = writing && path != nullptr && strstr(path, pattern) != nullptr;
}

bool Tracked(int fd) { return fd >= 0 && fd < kMaxFds && g_tracked[fd]; }

void Report(int fd) {
  if (g_reported.exchange(true)) return;
  char link[64], path[4096];
  snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
  const ssize_t n = readlink(link, path, sizeof(path) - 1);
  path[n > 0 ? n : 0] = '\0';
  fprintf(stderr, "eio_shim: EIO on %s\n", path);
}

// Whether a write of `n` bytes to `fd` must fail; counts it when it may go ahead.
bool Fails(int fd, size_t n) {
  if (!Tracked(fd)) return false;
  if (g_written.fetch_add(static_cast<long long>(n)) + static_cast<long long>(n) <= Budget()) {
    return false;
  }
  Report(fd);
  return true;
}

// Whether open() was given a mode (glibc's __OPEN_NEEDS_MODE: O_TMPFILE shares O_DIRECTORY's bit).
int ModeOf(int flags, va_list ap) {
  const bool needs_mode = (flags & O_CREAT) != 0 || (flags & O_TMPFILE) == O_TMPFILE;
  return needs_mode ? va_arg(ap, int) : 0;
}

__attribute__((destructor)) void WriteCount() {
  const char* file = getenv("LOOM_EIO_COUNT_FILE");
  if (file == nullptr) return;
  char path[4096];
  snprintf(path, sizeof(path), "%s.%d", file, static_cast<int>(getpid()));
  if (FILE* f = fopen(path, "w")) {
    fprintf(f, "%lld\n", g_written.load());
    fclose(f);
  }
}

}  // namespace

extern "C" {

int open(const char* path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  const int mode = ModeOf(flags, ap);
  va_end(ap);
  const int fd = Real<int (*)(const char*, int, ...)>("open")(path, flags, mode);
  Track(fd, path, flags);
  return fd;
}

int open64(const char* path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  const int mode = ModeOf(flags, ap);
  va_end(ap);
  const int fd = Real<int (*)(const char*, int, ...)>("open64")(path, flags, mode);
  Track(fd, path, flags);
  return fd;
}

int openat(int dir, const char* path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  const int mode = ModeOf(flags, ap);
  va_end(ap);
  const int fd = Real<int (*)(int, const char*, int, ...)>("openat")(dir, path, flags, mode);
  Track(fd, path, flags);
  return fd;
}

int openat64(int dir, const char* path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  const int mode = ModeOf(flags, ap);
  va_end(ap);
  const int fd = Real<int (*)(int, const char*, int, ...)>("openat64")(dir, path, flags, mode);
  Track(fd, path, flags);
  return fd;
}

int close(int fd) {
  if (fd >= 0 && fd < kMaxFds) g_tracked[fd] = false;
  return Real<int (*)(int)>("close")(fd);
}

ssize_t write(int fd, const void* buf, size_t n) {
  if (Fails(fd, n)) return errno = EIO, -1;
  return Real<ssize_t (*)(int, const void*, size_t)>("write")(fd, buf, n);
}

ssize_t pwrite(int fd, const void* buf, size_t n, off_t offset) {
  if (Fails(fd, n)) return errno = EIO, -1;
  return Real<ssize_t (*)(int, const void*, size_t, off_t)>("pwrite")(fd, buf, n, offset);
}

ssize_t pwrite64(int fd, const void* buf, size_t n, off64_t offset) {
  if (Fails(fd, n)) return errno = EIO, -1;
  return Real<ssize_t (*)(int, const void*, size_t, off64_t)>("pwrite64")(fd, buf, n, offset);
}

ssize_t writev(int fd, const struct iovec* iov, int count) {
  size_t n = 0;
  for (int i = 0; i < count; ++i) n += iov[i].iov_len;
  if (Fails(fd, n)) return errno = EIO, -1;
  return Real<ssize_t (*)(int, const struct iovec*, int)>("writev")(fd, iov, count);
}

ssize_t pwritev(int fd, const struct iovec* iov, int count, off_t offset) {
  size_t n = 0;
  for (int i = 0; i < count; ++i) n += iov[i].iov_len;
  if (Fails(fd, n)) return errno = EIO, -1;
  return Real<ssize_t (*)(int, const struct iovec*, int, off_t)>("pwritev")(fd, iov, count, offset);
}

ssize_t sendfile(int out_fd, int in_fd, off_t* offset, size_t n) {
  if (Fails(out_fd, n)) return errno = EIO, -1;
  return Real<ssize_t (*)(int, int, off_t*, size_t)>("sendfile")(out_fd, in_fd, offset, n);
}

ssize_t sendfile64(int out_fd, int in_fd, off64_t* offset, size_t n) {
  if (Fails(out_fd, n)) return errno = EIO, -1;
  return Real<ssize_t (*)(int, int, off64_t*, size_t)>("sendfile64")(out_fd, in_fd, offset, n);
}

ssize_t copy_file_range(int in_fd, off64_t* in_off, int out_fd, off64_t* out_off, size_t n,
                        unsigned int flags) {
  if (Fails(out_fd, n)) return errno = EIO, -1;
  return Real<ssize_t (*)(int, off64_t*, int, off64_t*, size_t, unsigned int)>("copy_file_range")(
      in_fd, in_off, out_fd, out_off, n, flags);
}

int fsync(int fd) {
  if (Tracked(fd) && g_written.load() > Budget()) return Report(fd), errno = EIO, -1;
  return Real<int (*)(int)>("fsync")(fd);
}

int fdatasync(int fd) {
  if (Tracked(fd) && g_written.load() > Budget()) return Report(fd), errno = EIO, -1;
  return Real<int (*)(int)>("fdatasync")(fd);
}

int io_submit(io_context_t ctx, long nr, struct iocb** iocbs) {
  for (long i = 0; i < nr; ++i) {
    const iocb* cb = iocbs[i];
    const bool writes = cb->aio_lio_opcode == IO_CMD_PWRITE || cb->aio_lio_opcode == IO_CMD_PWRITEV;
    if (writes && Fails(cb->aio_fildes, cb->u.c.nbytes)) return -EIO;
  }
  return Real<int (*)(io_context_t, long, struct iocb**)>("io_submit")(ctx, nr, iocbs);
}

}  // extern "C"
