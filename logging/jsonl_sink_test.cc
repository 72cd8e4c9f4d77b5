#include "logging/jsonl_sink.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <limits>
#include <memory>
#include <string>

#include "base/file_util.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::logging {
namespace {

using ::loom::base::testing::IsOkAndHolds;
using ::loom::base::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr char kPython[] = "/usr/bin/python3";

std::string TempDir() {
  const char* t = std::getenv("TEST_TMPDIR");
  std::string d = std::string(t ? t : "/tmp") + "/jsonl_sink_test_XXXXXX";
  return ::mkdtemp(d.data());
}

TEST(FormatJsonlRecordTest, ExactText) {
  EXPECT_THAT(FormatJsonlRecord(10, {{"loss", 0.25}, {"learning_rate", 5e-05}, {"epoch", 1.0}},
                                1700000000.5),
              IsOkAndHolds("{\"step\": 10, \"wall_time\": 1700000000.5, \"loss\": 0.25, "
                           "\"learning_rate\": 5e-05, \"epoch\": 1.0}"));
  EXPECT_THAT(FormatJsonlRecord(0, {}, 0.1), IsOkAndHolds("{\"step\": 0, \"wall_time\": 0.1}"));
}

TEST(FormatJsonlRecordTest, NonFiniteUsesPythonTokens) {
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_THAT(FormatJsonlRecord(1, {{"a", std::nan("")}, {"b", inf}, {"c", -inf}}, 2.0),
              IsOkAndHolds("{\"step\": 1, \"wall_time\": 2.0, \"a\": NaN, \"b\": Infinity, "
                           "\"c\": -Infinity}"));
}

TEST(FormatJsonlRecordTest, TagsAreEscaped) {
  EXPECT_THAT(FormatJsonlRecord(1, {{"a\"b\n", 1.0}, {"bad\xff", 2.0}}, 0.5),
              IsOkAndHolds("{\"step\": 1, \"wall_time\": 0.5, \"a\\\"b\\n\": 1.0, "
                           "\"bad\xEF\xBF\xBD\": 2.0}"));
}

TEST(FormatJsonlRecordTest, ReservedAndRepeatedTags) {
  EXPECT_THAT(
      FormatJsonlRecord(1, {{"step", 1.0}}, 0),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("metric tag 'step' is reserved")));
  EXPECT_THAT(FormatJsonlRecord(1, {{"wall_time", 1.0}}, 0),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'wall_time' is reserved")));
  EXPECT_THAT(
      FormatJsonlRecord(1, {{"loss", 1.0}, {"loss", 2.0}}, 0),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("metric tag 'loss' is repeated")));
}

TEST(JsonlSinkTest, AppendsOneLinePerCallAndResumes) {
  const std::string path = TempDir() + "/new/dir/metrics.jsonl";
  {
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<JsonlSink> sink, JsonlSink::Create(path));
    EXPECT_EQ(sink->path(), path);
    MetricsSink* as_sink = sink.get();
    ASSERT_OK(as_sink->WriteScalars(1, {{"loss", 2.5}}, 100.0));
    ASSERT_OK(as_sink->WriteScalars(2, {{"loss", 1.5}, {"grad_norm", 3.0}}, 101.25));
    ASSERT_OK(as_sink->Flush());
  }
  EXPECT_THAT(base::ReadFile(path),
              IsOkAndHolds("{\"step\": 1, \"wall_time\": 100.0, \"loss\": 2.5}\n"
                           "{\"step\": 2, \"wall_time\": 101.25, \"loss\": 1.5, "
                           "\"grad_norm\": 3.0}\n"));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<JsonlSink> resumed, JsonlSink::Create(path));
  ASSERT_OK(resumed->WriteScalars(3, {{"eval_loss", 0.75}}, 102.0));
  ASSERT_OK(resumed->Flush());
  ASSERT_OK_AND_ASSIGN(std::string text, base::ReadFile(path));
  EXPECT_THAT(text, HasSubstr("grad_norm\": 3.0}\n{\"step\": 3, \"wall_time\": 102.0, "
                              "\"eval_loss\": 0.75}\n"));
}

TEST(JsonlSinkTest, BadTagNamesTheFileAndWritesNothing) {
  const std::string path = TempDir() + "/metrics.jsonl";
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<JsonlSink> sink, JsonlSink::Create(path));
  EXPECT_THAT(sink->WriteScalars(1, {{"loss", 1.0}, {"step", 3.0}}, 0),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr(path), HasSubstr("'step' is reserved"))));
  EXPECT_THAT(base::ReadFile(path), IsOkAndHolds(""));
}

TEST(JsonlSinkTest, CreateFailureNamesThePath) {
  const std::string dir = TempDir();
  EXPECT_THAT(JsonlSink::Create(dir),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("'" + dir + "'")));
}

// Python's json module, the reader HF tooling uses, accepts every line, non-finite included.
TEST(JsonlSinkTest, PythonJsonLoadsReadsEveryLine) {
  ASSERT_EQ(::access(kPython, X_OK), 0)
      << kPython << " is missing: this test needs Debian's python3 (apt-get install python3)";
  const std::string path = TempDir() + "/metrics.jsonl";
  const double inf = std::numeric_limits<double>::infinity();
  {
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<JsonlSink> sink, JsonlSink::Create(path));
    ASSERT_OK(sink->WriteScalars(7, {{"loss", std::nan("")}, {"up", inf}, {"down", -inf}}, 2.5));
    ASSERT_OK(sink->WriteScalars(8, {{"lr", 0.1}, {"q\"uote", 3.0}}, 3.0));
  }
  const std::string command = std::string(kPython) +
                              " -I -c 'import json, sys\n"
                              "for line in open(sys.argv[1]): print(repr(json.loads(line)))' " +
                              path + " 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string out;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof(buf), pipe)) > 0;) out.append(buf, n);
  const int status = ::pclose(pipe);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << out;
  EXPECT_EQ(out,
            "{'step': 7, 'wall_time': 2.5, 'loss': nan, 'up': inf, 'down': -inf}\n"
            "{'step': 8, 'wall_time': 3.0, 'lr': 0.1, 'q\"uote': 3.0}\n");
}

}  // namespace
}  // namespace loom::logging
