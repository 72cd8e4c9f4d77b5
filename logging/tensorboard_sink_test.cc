#include "logging/tensorboard_sink.h"

#include <dirent.h>
#include <stdlib.h>

#include <cmath>
#include <limits>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "base/file_util.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "logging/event.pb.h"
#include "logging/tfrecord.h"

namespace loom::logging {
namespace {

using ::loom::base::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string TempDir() {
  const char* t = std::getenv("TEST_TMPDIR");
  std::string d = std::string(t ? t : "/tmp") + "/tensorboard_sink_test_XXXXXX";
  return ::mkdtemp(d.data());
}

std::set<std::string> ListDir(const std::string& dir) {
  std::set<std::string> names;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return names;
  while (dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") names.insert(n);
  }
  ::closedir(d);
  return names;
}

TensorBoardSinkOptions FixedOptions(double now = 1700000000.75) {
  TensorBoardSinkOptions options;
  options.hostname = "testhost";
  options.clock = [now] { return now; };
  return options;
}

// Every event in the file at `path`, checking the framing.
std::vector<tensorboard::Event> ReadEvents(const std::string& path) {
  std::vector<tensorboard::Event> events;
  absl::StatusOr<std::string> bytes = base::ReadFile(path);
  EXPECT_TRUE(bytes.ok()) << bytes.status();
  absl::StatusOr<std::vector<std::string>> records = DecodeTFRecords(bytes.value_or(""), path);
  EXPECT_TRUE(records.ok()) << records.status();
  for (const std::string& record : records.value_or(std::vector<std::string>{})) {
    tensorboard::Event event;
    EXPECT_TRUE(event.ParseFromString(record));
    events.push_back(event);
  }
  return events;
}

TEST(TensorBoardSinkTest, NamesTheFileLikeTensorFlowAndCreatesTheDirectory) {
  const std::string dir = TempDir() + "/runs/exp1";
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<TensorBoardSink> sink,
                       TensorBoardSink::Create(dir, FixedOptions()));
  EXPECT_EQ(sink->path(), dir + "/events.out.tfevents.1700000000.testhost");
  EXPECT_THAT(ListDir(dir), ElementsAre("events.out.tfevents.1700000000.testhost"));
}

TEST(TensorBoardSinkTest, FirstRecordIsTheFileVersionAlreadyOnDisk) {
  const std::string dir = TempDir();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<TensorBoardSink> sink,
                       TensorBoardSink::Create(dir, FixedOptions()));
  std::vector<tensorboard::Event> events = ReadEvents(sink->path());
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].file_version(), "brain.Event:2");
  EXPECT_EQ(events[0].wall_time(), 1700000000.75);
  EXPECT_EQ(events[0].step(), 0);
}

TEST(TensorBoardSinkTest, OneEventPerScalarRoundedToFloat) {
  const std::string dir = TempDir();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<TensorBoardSink> sink,
                       TensorBoardSink::Create(dir, FixedOptions()));
  MetricsSink* as_sink = sink.get();
  ASSERT_OK(as_sink->WriteScalars(5, {{"train/loss", 0.1}, {"train/learning_rate", 0.0}}, 12.5));
  ASSERT_OK(as_sink->WriteScalars(int64_t{1} << 40, {{"eval/nan", std::nan("")}}, 13.0));
  ASSERT_OK(as_sink->Flush());

  std::vector<tensorboard::Event> events = ReadEvents(sink->path());
  ASSERT_EQ(events.size(), 4u);
  const struct {
    int64_t step;
    const char* tag;
    float value;
    double wall_time;
  } expected[] = {{5, "train/loss", 0.1f, 12.5},
                  {5, "train/learning_rate", 0.0f, 12.5},
                  {int64_t{1} << 40, "eval/nan", std::numeric_limits<float>::quiet_NaN(), 13.0}};
  for (int i = 0; i < 3; ++i) {
    const tensorboard::Event& e = events[i + 1];
    SCOPED_TRACE(expected[i].tag);
    EXPECT_EQ(e.step(), expected[i].step);
    EXPECT_EQ(e.wall_time(), expected[i].wall_time);
    ASSERT_TRUE(e.has_summary());
    ASSERT_EQ(e.summary().value_size(), 1);
    const tensorboard::Summary::Value& v = e.summary().value(0);
    EXPECT_EQ(v.tag(), expected[i].tag);
    // Set even when 0.0: TensorBoard only reads values whose oneof case is set.
    EXPECT_EQ(v.value_case(), tensorboard::Summary::Value::kSimpleValue);
    if (std::isnan(expected[i].value)) {
      EXPECT_TRUE(std::isnan(v.simple_value()));
    } else {
      EXPECT_EQ(v.simple_value(), expected[i].value);
    }
  }
}

TEST(TensorBoardSinkTest, SecondSinkInTheSameSecondGetsItsOwnFile) {
  const std::string dir = TempDir();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<TensorBoardSink> a,
                       TensorBoardSink::Create(dir, FixedOptions()));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<TensorBoardSink> b,
                       TensorBoardSink::Create(dir, FixedOptions()));
  TensorBoardSinkOptions with_suffix = FixedOptions();
  with_suffix.filename_suffix = ".eval";
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<TensorBoardSink> c,
                       TensorBoardSink::Create(dir, with_suffix));
  EXPECT_EQ(b->path(), dir + "/events.out.tfevents.1700000000.testhost.1");
  EXPECT_EQ(c->path(), dir + "/events.out.tfevents.1700000000.testhost.eval");
  ASSERT_OK(b->WriteScalars(1, {{"x", 1.0}}, 1.0));
  EXPECT_EQ(ReadEvents(a->path()).size(), 1u);
  EXPECT_EQ(ReadEvents(b->path()).size(), 2u);
}

TEST(TensorBoardSinkTest, DefaultsUseTheRealHostnameAndClock) {
  const std::string dir = TempDir();
  const double before = WallTimeSeconds();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<TensorBoardSink> sink, TensorBoardSink::Create(dir));
  char host[256] = {};
  ASSERT_EQ(::gethostname(host, sizeof(host) - 1), 0);
  EXPECT_THAT(sink->path(), HasSubstr(std::string(".") + host));
  std::vector<tensorboard::Event> events = ReadEvents(sink->path());
  ASSERT_EQ(events.size(), 1u);
  EXPECT_GE(events[0].wall_time(), before);
  EXPECT_LE(events[0].wall_time(), WallTimeSeconds());
}

TEST(TensorBoardSinkTest, LogDirThatIsAFileFailsNamingIt) {
  const std::string dir = TempDir();
  ASSERT_OK(base::WriteFileAtomically(dir + "/file", "x"));
  EXPECT_THAT(TensorBoardSink::Create(dir + "/file", FixedOptions()),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr(dir + "/file")));
}

}  // namespace
}  // namespace loom::logging
