// Helpers shared by the harnesses of //tests/fuzz (header-only; each harness is its own binary).
//   Check(ok, what): aborts with `what` when an invariant of the parser does not hold, which
//     libFuzzer reports as a crash and saves the input.
//   ScratchFile(name): a path in a folder private to this fuzzing process
//     ($TEST_TMPDIR, else /dev/shm or /tmp, plus the pid), for parsers that take paths.
//   WriteFileOrDie(path, bytes): writes bytes (aborts on failure: that is the harness's fault).
//   SplitParts(bytes, separator): the input cut at every `separator`, for harnesses that read
//     several files from one input.
//
// Example:
//   const std::string path = fuzz::ScratchFile("train.csv");
//   fuzz::WriteFileOrDie(path, std::string(reinterpret_cast<const char*>(data), size));
//   fuzz::Check(reparsed == parsed, "a serialized manifest parses back to itself");
#ifndef LOOM_TESTS_FUZZ_FUZZ_CHECK_H_
#define LOOM_TESTS_FUZZ_FUZZ_CHECK_H_

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace fuzz {

inline void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "invariant violated: %s\n", what);
    std::abort();
  }
}

inline const std::string& ScratchDir() {
  static const std::string* dir = [] {
    // /dev/shm keeps the per-input file writes of long runs off the disk.
    const char* base = std::getenv("TEST_TMPDIR");
    struct stat shm;
    if (base == nullptr) base = stat("/dev/shm", &shm) == 0 ? "/dev/shm" : "/tmp";
    auto* d = new std::string(std::string(base) + "/loom_fuzz_" + std::to_string(getpid()));
    mkdir(d->c_str(), 0700);
    return d;
  }();
  return *dir;
}

inline std::string ScratchFile(const std::string& name) { return ScratchDir() + "/" + name; }

inline void WriteFileOrDie(const std::string& path, const std::string& bytes) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  Check(f != nullptr, "the harness can create its scratch file");
  Check(std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size(),
        "the harness can write its scratch file");
  Check(std::fclose(f) == 0, "the harness can close its scratch file");
}

inline std::vector<std::string> SplitParts(const std::string& bytes, const std::string& separator) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    const size_t at = bytes.find(separator, start);
    if (at == std::string::npos) break;
    parts.push_back(bytes.substr(start, at - start));
    start = at + separator.size();
  }
  parts.push_back(bytes.substr(start));
  return parts;
}

}  // namespace fuzz

#endif  // LOOM_TESTS_FUZZ_FUZZ_CHECK_H_
