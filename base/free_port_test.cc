#include "base/free_port.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/status_matchers.h"
#include "gtest/gtest.h"

namespace loom::base {
namespace {

TEST(FreePortTest, ReturnsAPortThatCanBeBound) {
  ASSERT_OK_AND_ASSIGN(int port, PickFreePort());
  EXPECT_GT(port, 0);
  EXPECT_LE(port, 65535);
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  close(fd);
}

}  // namespace
}  // namespace loom::base
