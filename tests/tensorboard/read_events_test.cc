// Cross-checks //logging:tensorboard_sink with an independent reader: read_events.py, run with
// Debian's /usr/bin/python3 and only its standard library, parses the TFRecord framing, checks
// both masked CRC-32Cs of every record and decodes the Event protos from the wire format by hand.
// A missing /usr/bin/python3 fails the test (it is never skipped).
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/file_util.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "logging/tensorboard_sink.h"

namespace loom::logging {
namespace {

using ::testing::HasSubstr;

constexpr char kPython[] = "/usr/bin/python3";
constexpr double kWallTime = 1700000000.75;

struct ReaderRun {
  int exit_code = -1;
  std::string output;  // stdout and stderr
};

std::string TempDir() {
  const char* t = std::getenv("TEST_TMPDIR");
  std::string d = std::string(t ? t : "/tmp") + "/read_events_test_XXXXXX";
  return ::mkdtemp(d.data());
}

std::string ScriptPath() {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* workspace = std::getenv("TEST_WORKSPACE");
  const std::string relative = "tests/tensorboard/read_events.py";
  if (srcdir == nullptr || workspace == nullptr) return relative;
  return std::string(srcdir) + "/" + workspace + "/" + relative;
}

// Runs read_events.py with `args` (already shell-quoted where needed).
ReaderRun RunReader(const std::string& args) {
  ReaderRun run;
  const std::string command = std::string(kPython) + " -I " + ScriptPath() + " " + args + " 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return run;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof(buf), pipe)) > 0;) run.output.append(buf, n);
  const int status = ::pclose(pipe);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return run;
}

class ReadEventsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(::access(kPython, X_OK), 0)
        << kPython << " is missing: this test needs Debian's python3 (apt-get install python3); "
        << "it must not be skipped";
    ASSERT_EQ(::access(ScriptPath().c_str(), R_OK), 0) << ScriptPath() << " not in runfiles";
  }

  // Writes the scalars of `Expected()` and returns the event file's path.
  std::string WriteEventFile() {
    TensorBoardSinkOptions options;
    options.hostname = "testhost";
    options.clock = [] { return kWallTime; };
    absl::StatusOr<std::unique_ptr<TensorBoardSink>> sink =
        TensorBoardSink::Create(TempDir() + "/runs", options);
    EXPECT_TRUE(sink.ok()) << sink.status();
    if (!sink.ok()) return "";
    EXPECT_OK((*sink)->WriteScalars(0, {{"train/loss", 0.1}, {"zero", 0.0}}, 10.5));
    EXPECT_OK((*sink)->WriteScalars(7, {{"lr", 5e-5}, {"neg", -1.5}, {"big", 1e30}}, 11.25));
    EXPECT_OK((*sink)->WriteScalars(int64_t{1} << 40, {{"métrique/λ", 2.0}}, 12.0));
    EXPECT_OK((*sink)->WriteScalars(-3, {{"negative_step", 3.0}}, 0.0));
    EXPECT_OK((*sink)->Flush());
    return (*sink)->path();
  }

  struct Scalar {
    int64_t step;
    std::string tag;
    double value;
    double wall_time;
  };

  static std::vector<Scalar> Expected() {
    auto f32 = [](double v) { return static_cast<double>(static_cast<float>(v)); };
    return {{0, "train/loss", f32(0.1), 10.5}, {0, "zero", 0.0, 10.5},
            {7, "lr", f32(5e-5), 11.25},       {7, "neg", -1.5, 11.25},
            {7, "big", f32(1e30), 11.25},      {int64_t{1} << 40, "métrique/λ", 2.0, 12.0},
            {-3, "negative_step", 3.0, 0.0}};
  }
};

TEST_F(ReadEventsTest, ReaderCrc32cSelfTest) {
  ReaderRun run = RunReader("--self-test");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(run.output, "self-test ok\n");
}

TEST_F(ReadEventsTest, ReaderSeesTheFileVersionHeader) {
  const std::string path = WriteEventFile();
  ReaderRun run = RunReader("--header " + path);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  nlohmann::json header = nlohmann::json::parse(run.output);
  EXPECT_EQ(header[0].get<std::string>(), "brain.Event:2");
  EXPECT_EQ(header[1].get<double>(), kWallTime);
}

TEST_F(ReadEventsTest, ReaderDecodesEveryScalarExactly) {
  const std::string path = WriteEventFile();
  ReaderRun run = RunReader(path);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  nlohmann::json got = nlohmann::json::parse(run.output);
  const std::vector<Scalar> want = Expected();
  ASSERT_EQ(got.size(), want.size()) << run.output;
  for (size_t i = 0; i < want.size(); ++i) {
    SCOPED_TRACE(want[i].tag);
    EXPECT_EQ(got[i][0].get<int64_t>(), want[i].step);
    EXPECT_EQ(got[i][1].get<std::string>(), want[i].tag);
    // null would mean the simple_value oneof was not set (e.g. 0.0 dropped by proto3).
    ASSERT_TRUE(got[i][2].is_number()) << got[i];
    EXPECT_EQ(got[i][2].get<double>(), want[i].value);
    EXPECT_EQ(got[i][3].get<double>(), want[i].wall_time);
  }
}

TEST_F(ReadEventsTest, NonFiniteValuesSurvive) {
  TensorBoardSinkOptions options;
  options.hostname = "testhost";
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<TensorBoardSink> sink,
                       TensorBoardSink::Create(TempDir(), options));
  const double inf = std::numeric_limits<double>::infinity();
  ASSERT_OK(sink->WriteScalars(1, {{"nan", std::nan("")}, {"inf", inf}, {"ninf", -inf}}, 1.0));
  ASSERT_OK(sink->Flush());
  ReaderRun run = RunReader(sink->path());
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(run.output,
            "[[1, \"nan\", \"NaN\", 1.0], [1, \"inf\", \"Infinity\", 1.0], "
            "[1, \"ninf\", \"-Infinity\", 1.0]]\n");
}

TEST_F(ReadEventsTest, AnyCorruptedByteFailsTheReader) {
  const std::string path = WriteEventFile();
  ASSERT_OK_AND_ASSIGN(const std::string good, base::ReadFile(path));
  ASSERT_GT(good.size(), 100u);
  // First length byte, the length CRC, the first payload byte, a byte in the middle, the
  // last byte (a data CRC).
  for (size_t at : {size_t{0}, size_t{9}, size_t{12}, good.size() / 2, good.size() - 1}) {
    SCOPED_TRACE(at);
    std::string bad = good;
    bad[at] ^= 0x20;
    const std::string bad_path = path + ".corrupt";
    ASSERT_OK(base::WriteFileAtomically(bad_path, bad));
    ReaderRun run = RunReader(bad_path);
    EXPECT_EQ(run.exit_code, 1) << run.output;
    EXPECT_THAT(run.output, HasSubstr("CRC mismatch"));
  }
}

TEST_F(ReadEventsTest, TruncatedFileFailsTheReader) {
  const std::string path = WriteEventFile();
  ASSERT_OK_AND_ASSIGN(const std::string good, base::ReadFile(path));
  ASSERT_OK(base::WriteFileAtomically(path + ".cut", good.substr(0, good.size() - 3)));
  ReaderRun run = RunReader(path + ".cut");
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_THAT(run.output, HasSubstr("truncated"));
}

TEST_F(ReadEventsTest, FileWithoutAVersionHeaderFailsTheReader) {
  const std::string path = TempDir() + "/empty";
  ASSERT_OK(base::WriteFileAtomically(path, ""));
  ReaderRun run = RunReader(path);
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_THAT(run.output, HasSubstr("no records"));
}

}  // namespace
}  // namespace loom::logging
