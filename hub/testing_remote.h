// Test remotes and files for //hub's tests: HttpRemote runs testdata/git_http_server.py (git's
// smart HTTP plus an LFS API, every request needing the token) on 127.0.0.1 for the life of the
// object; BareRemote makes a bare repository served over file://; Write / Read / Random handle
// the files the tests push.
#ifndef LOOM_HUB_TESTING_REMOTE_H_
#define LOOM_HUB_TESTING_REMOTE_H_

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>

#include "hub/git.h"

namespace loom::hub::testing {

inline void Write(const std::filesystem::path& p, const std::string& text) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}
inline std::string Read(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}
// n pseudo-random bytes (the same for the same seed).
inline std::string Random(size_t n, unsigned seed) {
  std::mt19937 g(seed);
  std::string out(n, '\0');
  for (char& c : out) c = static_cast<char>(g());
  return out;
}

class HttpRemote {
 public:
  // `delay_s`: every push request is held that long (a slow remote).
  HttpRemote(const std::string& root, const std::string& token, double delay_s = 0) {
    std::filesystem::create_directories(root);
    const std::string port_file = root + ".port";
    std::filesystem::remove(port_file);
    const std::string delay = std::to_string(delay_s);
    pid_ = ::fork();
    if (pid_ == 0) {
      ::setenv("GIT_SERVER_TOKEN", token.c_str(), 1);  // not in argv: tests grep cmdlines
      ::execl("/usr/bin/python3", "python3", "hub/testdata/git_http_server.py", root.c_str(),
              port_file.c_str(), delay.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    for (int i = 0; i < 200 && !std::filesystem::exists(port_file); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    std::ifstream in(port_file);
    std::getline(in, port_);
  }
  ~HttpRemote() {
    ::kill(pid_, SIGTERM);
    ::waitpid(pid_, nullptr, 0);
  }
  HttpRemote(const HttpRemote&) = delete;
  HttpRemote& operator=(const HttpRemote&) = delete;

  std::string Url(const std::string& repo) const {
    return "http://127.0.0.1:" + port_ + "/" + repo;
  }
  bool up() const { return !port_.empty(); }

 private:
  std::string port_;
  pid_t pid_ = -1;
};

// A bare repository at `path` whose HEAD is main, as a file:// URL ("" on failure).
inline std::string BareRemote(const std::string& path) {
  Git git("/", std::nullopt);
  return git.Check({"init", "-q", "--bare", "-b", "main", path}, "bare").ok() ? "file://" + path
                                                                               : "";
}

}  // namespace loom::hub::testing

#endif  // LOOM_HUB_TESTING_REMOTE_H_
