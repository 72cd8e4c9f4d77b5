// Expected strings below were produced by Python 3's json / str / round and by HF's
// metrics_format + log_metrics algorithm run in Python (transformers 4.41), not by loom.
#include "trainer/metrics.h"

#include <cmath>
#include <cstdlib>
#include <limits>

#include "base/file_util.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::trainer {
namespace {

using ::loom::base::testing::IsOkAndHolds;
using ::loom::base::testing::StatusIs;
using ::testing::HasSubstr;

TEST(PyRoundTest, MatchesPythonRound) {
  EXPECT_EQ(PyRound(0.12345, 4), 0.1235);
  EXPECT_EQ(PyRound(2.675, 2), 2.67);  // 2.675 is 2.67499999... in binary
  EXPECT_EQ(PyRound(1.00005, 4), 1.0001);
  EXPECT_EQ(PyRound(0.5, 0), 0.0);  // exact ties round to even
  EXPECT_EQ(PyRound(1.5, 0), 2.0);
  EXPECT_EQ(PyRound(2.5, 0), 2.0);
  EXPECT_TRUE(std::isnan(PyRound(std::nan(""), 3)));
}

TEST(SpeedMetricsTest, RatesRoundedAndOnlyForGivenCounts) {
  Metrics m = SpeedMetrics("train", 100.0, 102.5, 640, 80, std::nullopt);
  EXPECT_EQ(m.dump(), R"({"train_runtime":2.5,"train_samples_per_second":256.0,)"
                      R"("train_steps_per_second":32.0})");
  Metrics t = SpeedMetrics("eval", 0, 3, std::nullopt, std::nullopt, 10);
  EXPECT_EQ(t.dump(), R"({"eval_runtime":3.0,"eval_tokens_per_second":3.333})");
  EXPECT_EQ(SpeedMetrics("test", 5, 5, 1, 1).dump(), R"({"test_runtime":0.0})");
}

TEST(FormatLogMetricsTest, MatchesHfLogMetrics) {
  Metrics m = Metrics::object();
  m["train_runtime"] = 3725.4567;
  m["train_samples_per_second"] = 12.345;
  m["total_flos"] = 3.5 * (1 << 30);
  m["train_loss"] = 0.693147;
  m["epoch"] = 3.0;
  m["train_mem_cpu_alloc_delta"] = 5 * (1 << 20) + 7;
  m["big_runtime"] = 90061.5;
  EXPECT_EQ(FormatLogMetrics("train", m),
            "***** train metrics *****\n"
            "  big_runtime               = 1 day, 1:01:01.50\n"
            "  epoch                     =               3.0\n"
            "  total_flos                =               3GF\n"
            "  train_loss                =            0.6931\n"
            "  train_mem_cpu_alloc_delta =               5MB\n"
            "  train_runtime             =        1:02:05.45\n"
            "  train_samples_per_second  =            12.345\n");
}

TEST(PyDictReprTest, MatchesPythonStrOfDict) {
  Metrics m = Metrics::object();
  m["loss"] = 0.6931;
  m["grad_norm"] = 1.2345678901234567;
  m["learning_rate"] = 5e-05;
  m["epoch"] = 0.5;
  m["n"] = 3;
  m["nan"] = std::nan("");
  EXPECT_EQ(PyDictRepr(m),
            "{'loss': 0.6931, 'grad_norm': 1.2345678901234567, 'learning_rate': 5e-05, "
            "'epoch': 0.5, 'n': 3, 'nan': nan}");
}

TEST(SaveMetricsTest, WritesSplitFileAndMergesAllResults) {
  const std::string dir = std::string(std::getenv("TEST_TMPDIR")) + "/save_metrics";
  ASSERT_OK(base::MakeDirs(dir));
  Metrics train = Metrics::object();
  train["train_loss"] = 0.5;
  train["epoch"] = 1.0;
  ASSERT_OK(SaveMetrics(dir, "train", train));
  Metrics eval = Metrics::object();
  eval["eval_loss"] = 0.25;
  eval["epoch"] = 2.0;
  ASSERT_OK(SaveMetrics(dir, "eval", eval));
  ASSERT_OK_AND_ASSIGN(std::string train_text, base::ReadFile(dir + "/train_results.json"));
  EXPECT_EQ(train_text, "{\n    \"epoch\": 1.0,\n    \"train_loss\": 0.5\n}");
  ASSERT_OK_AND_ASSIGN(std::string all_text, base::ReadFile(dir + "/all_results.json"));
  EXPECT_EQ(all_text,
            "{\n    \"epoch\": 2.0,\n    \"eval_loss\": 0.25,\n    \"train_loss\": 0.5\n}");
  Metrics other = Metrics::object();
  other["x"] = 1;
  ASSERT_OK(SaveMetrics(dir, "test", other, /*combined=*/false));
  ASSERT_OK_AND_ASSIGN(std::string all_again, base::ReadFile(dir + "/all_results.json"));
  EXPECT_EQ(all_again, all_text);
}

TEST(SaveMetricsTest, CorruptAllResultsIsAnErrorNamingTheFile) {
  const std::string dir = std::string(std::getenv("TEST_TMPDIR")) + "/corrupt";
  ASSERT_OK(base::MakeDirs(dir));
  ASSERT_OK(base::WriteFileAtomically(dir + "/all_results.json", "[1, 2"));
  Metrics m = Metrics::object();
  m["a"] = 1.0;
  EXPECT_THAT(SaveMetrics(dir, "eval", m),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("all_results.json")));
  ASSERT_OK_AND_ASSIGN(std::string kept, base::ReadFile(dir + "/all_results.json"));
  EXPECT_EQ(kept, "[1, 2");
}

TEST(MetricValueTest, MissingMetricListsTheOthers) {
  Metrics m = Metrics::object();
  m["eval_loss"] = 0.5;
  m["eval_accuracy"] = 1;
  EXPECT_THAT(MetricValue(m, "eval_accuracy"), IsOkAndHolds(1.0));
  EXPECT_THAT(MetricValue(m, "eval_f1"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("eval_f1' was not computed; the metrics are: eval_loss, "
                                 "eval_accuracy")));
}

}  // namespace
}  // namespace loom::trainer
