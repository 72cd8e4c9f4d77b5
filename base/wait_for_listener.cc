#include "base/wait_for_listener.h"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

#include "absl/strings/str_cat.h"

namespace loom::base {
namespace {

using AddrInfo = std::unique_ptr<addrinfo, decltype(&freeaddrinfo)>;

// One non-blocking connect to `a`, bounded by `deadline`: true when accepted; else `error`
// says why.
bool TryConnect(const addrinfo& a, absl::Time deadline, std::string& error) {
  const int fd = socket(a.ai_family, a.ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a.ai_protocol);
  if (fd < 0) {
    error = std::strerror(errno);
    return false;
  }
  int rc = connect(fd, a.ai_addr, a.ai_addrlen);
  if (rc != 0 && errno == EINPROGRESS) {
    pollfd p{fd, POLLOUT, 0};
    const int wait_ms = static_cast<int>(
        std::clamp<int64_t>(absl::ToInt64Milliseconds(deadline - absl::Now()), 0, 1000));
    const int ready = poll(&p, 1, wait_ms);
    if (ready == 1) {
      int so_error = 0;
      socklen_t len = sizeof(so_error);
      getsockopt(fd, SOL_SOCKET, SO_ERROR, &so_error, &len);
      rc = so_error == 0 ? 0 : -1;
      errno = so_error;
    } else {
      if (ready == 0) errno = ETIMEDOUT;
      rc = -1;
    }
  }
  if (rc != 0) error = std::strerror(errno);
  close(fd);
  return rc == 0;
}

}  // namespace

absl::Status WaitForListener(const std::string& host, int port, absl::Time deadline) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (const int rc = getaddrinfo(host.c_str(), service.c_str(), &hints, &found); rc != 0) {
    return absl::NotFoundError(absl::StrCat(host, ":", port, ": ", gai_strerror(rc)));
  }
  const AddrInfo addresses(found, &freeaddrinfo);
  std::string error = "no address";
  while (true) {
    for (const addrinfo* a = addresses.get(); a != nullptr; a = a->ai_next) {
      if (TryConnect(*a, deadline, error)) return absl::OkStatus();
    }
    if (absl::Now() + absl::Milliseconds(50) >= deadline) break;
    absl::SleepFor(absl::Milliseconds(50));
  }
  return absl::DeadlineExceededError(
      absl::StrCat("nothing accepted a connection at ", host, ":", port, " (", error, ")"));
}

}  // namespace loom::base
