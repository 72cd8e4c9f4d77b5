// LoadSentencePieceApi: opens libloom_sentencepiece.so in its own symbol scope (see
// sentencepiece_backend.h).
#include <dlfcn.h>
#include <limits.h>
#include <unistd.h>

#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include "text/sentencepiece_backend.h"

namespace loom::text {
namespace {

constexpr char kShim[] = "libloom_sentencepiece.so";

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
  for (const char* var : {"RUNFILES_DIR", "TEST_SRCDIR"}) {
    if (const char* p = std::getenv(var); p != nullptr && *p != '\0') {
      out.push_back(std::string(p) + "/loom/text/" + kShim);
    }
  }
  const std::string exe = SelfExe();
  if (!exe.empty()) {
    out.push_back(exe + ".runfiles/loom/text/" + kShim);
    out.push_back(exe.substr(0, exe.rfind('/') + 1) + kShim);
  }
  return out;
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
  *error = std::string("SentencePiece support (") + kShim +
           ") not found; looked at:" + tried +
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
