#include "base/wait_for_listener.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

#include "base/free_port.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::base {
namespace {

using ::loom::base::testing::StatusIs;
using ::testing::HasSubstr;

// A socket listening on 127.0.0.1:port (the kernel completes connections in its backlog).
int Listen(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 || listen(fd, 8) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

TEST(WaitForListenerTest, ReturnsOnceSomethingListens) {
  ASSERT_OK_AND_ASSIGN(const int port, PickFreePort());
  const int fd = Listen(port);
  ASSERT_GE(fd, 0);
  EXPECT_OK(WaitForListener("127.0.0.1", port, absl::Now() + absl::Seconds(5)));
  EXPECT_OK(WaitForListener("localhost", port, absl::Now() + absl::Seconds(5)));
  close(fd);
}

TEST(WaitForListenerTest, WaitsForALateListener) {
  ASSERT_OK_AND_ASSIGN(const int port, PickFreePort());
  int fd = -1;
  std::thread late([&] {
    absl::SleepFor(absl::Milliseconds(700));
    fd = Listen(port);
  });
  const absl::Time start = absl::Now();
  const absl::Status status = WaitForListener("127.0.0.1", port, start + absl::Seconds(10));
  const absl::Duration took = absl::Now() - start;
  late.join();
  EXPECT_OK(status);
  EXPECT_GE(took, absl::Milliseconds(650));
  EXPECT_LT(took, absl::Seconds(5));
  if (fd >= 0) close(fd);
}

TEST(WaitForListenerTest, KeepsItsDeadline) {
  ASSERT_OK_AND_ASSIGN(const int port, PickFreePort());  // nothing listens there
  const absl::Time start = absl::Now();
  const absl::Status status = WaitForListener("127.0.0.1", port, start + absl::Seconds(1));
  const absl::Duration took = absl::Now() - start;
  EXPECT_THAT(status, StatusIs(absl::StatusCode::kDeadlineExceeded,
                               HasSubstr(absl::StrCat("127.0.0.1:", port))));
  EXPECT_GE(took, absl::Milliseconds(900));
  EXPECT_LT(took, absl::Milliseconds(1500));
}

TEST(WaitForListenerTest, UnknownHostIsNotFound) {
  EXPECT_THAT(WaitForListener("no-such-host.invalid", 1, absl::Now() + absl::Seconds(1)),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("no-such-host.invalid:1")));
}

}  // namespace
}  // namespace loom::base
