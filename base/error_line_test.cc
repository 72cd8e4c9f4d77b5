#include "base/error_line.h"

#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "gtest/gtest.h"

namespace loom::base {
namespace {

TEST(ErrorLineTest, FormatsProgramErrorAndMessage) {
  EXPECT_EQ(FormatErrorLine("run_glue", "--model_name_or_path x: no such model folder"),
            "run_glue: error: --model_name_or_path x: no such model folder\n");
}

// Eight processes print 200 error lines each into one pipe at the same time: every line read
// back is whole (a std::cerr << a << b << c would let the pieces of two processes interleave).
TEST(ErrorLineTest, LinesOfConcurrentProcessesDoNotInterleave) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  constexpr int kProcesses = 8;
  constexpr int kLines = 200;
  const std::string message(300, 'm');
  std::vector<pid_t> children;
  for (int p = 0; p < kProcesses; ++p) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::close(fds[0]);
      ::dup2(fds[1], STDERR_FILENO);
      for (int i = 0; i < kLines; ++i) PrintErrorLine("rank" + std::to_string(p), message);
      ::_exit(0);
    }
    children.push_back(pid);
  }
  ::close(fds[1]);
  std::string all;
  char buf[4096];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof(buf))) > 0;) all.append(buf, n);
  ::close(fds[0]);
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  std::vector<std::string> lines = absl::StrSplit(all, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), size_t{kProcesses * kLines});
  std::vector<int> per_process(kProcesses, 0);
  for (const std::string& line : lines) {
    ASSERT_EQ(line.size(), 5 + 9 + message.size()) << line.substr(0, 40);
    ASSERT_EQ(line.substr(5), ": error: " + message);
    ASSERT_EQ(line.substr(0, 4), "rank");
    ++per_process[line[4] - '0'];
  }
  for (int count : per_process) EXPECT_EQ(count, kLines);
}

}  // namespace
}  // namespace loom::base
