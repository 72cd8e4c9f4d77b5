// LoadSentencePieceApi: opens libloom_sentencepiece.so in its own symbol scope (see
// sentencepiece_backend.h).
#include <dlfcn.h>
#include <limits.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "text/sentencepiece_backend.h"
#include "tools/cpp/runfiles/runfiles.h"

namespace loom::text {
namespace {

constexpr char kShim[] = "libloom_sentencepiece.so";
// Its runfiles path: loom's repository is named "loom", as the main workspace and as the
// external repository of a workspace depending on it (deps.bzl).
constexpr char kShimRunfile[] = "loom/text/libloom_sentencepiece.so";

std::string SelfExe() {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

std::vector<std::string> Candidates() {
  std::vector<std::string> out;
  if (const char* p = std::getenv("LOOM_SENTENCEPIECE_SHIM"); p != nullptr && *p != '\0') {
    out.push_back(p);
  }
  // Bazel's runfiles library: $RUNFILES_MANIFEST_FILE / $RUNFILES_DIR, else the running
  // program's own .runfiles folder or manifest (also when loom is an external repository).
  const std::string exe = SelfExe();
  using bazel::tools::cpp::runfiles::Runfiles;
  std::string runfiles_error;
  if (std::unique_ptr<Runfiles> runfiles(Runfiles::Create(exe, &runfiles_error)); runfiles) {
    if (std::string path = runfiles->Rlocation(kShimRunfile); !path.empty()) {
      out.push_back(path);
    }
  }
  if (const char* p = std::getenv("TEST_SRCDIR"); p != nullptr && *p != '\0') {
    out.push_back(std::string(p) + "/" + kShimRunfile);
  }
  if (!exe.empty()) {
    // The program's own runfiles even when the variables above point at another program's.
    out.push_back(exe + ".runfiles/" + kShimRunfile);
    out.push_back(exe.substr(0, exe.rfind('/') + 1) + kShim);
  }
  // Each place once, in this order (under bazel test, $RUNFILES_DIR is $TEST_SRCDIR).
  std::vector<std::string> unique;
  for (std::string& path : out) {
    if (std::find(unique.begin(), unique.end(), path) == unique.end()) {
      unique.push_back(std::move(path));
    }
  }
  return unique;
}

const SentencePieceApi* Open(std::string* error) {
  std::string tried;
  for (const std::string& path : Candidates()) {
    if (::access(path.c_str(), R_OK) != 0) {
      tried += " " + path;
      continue;
    }
    void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
    if (handle == nullptr) {
      *error = std::string("cannot load ") + path + ": " + ::dlerror();
      return nullptr;
    }
    using ApiFn = const SentencePieceApi* (*)();
    auto fn = reinterpret_cast<ApiFn>(::dlsym(handle, "loom_sentencepiece_api"));
    if (fn == nullptr) {
      *error = path + " has no loom_sentencepiece_api";
      return nullptr;
    }
    return fn();
  }
  *error = std::string("SentencePiece support (") + kShim + ") not found; looked at:" + tried +
           ". Set LOOM_SENTENCEPIECE_SHIM to its path, or run the program through bazel.";
  return nullptr;
}

}  // namespace

const SentencePieceApi* LoadSentencePieceApi(std::string* error) {
  static std::once_flag once;
  static const SentencePieceApi* api = nullptr;
  static std::string load_error;
  std::call_once(once, [] { api = Open(&load_error); });
  if (api == nullptr) *error = load_error;
  return api;
}

}  // namespace loom::text
