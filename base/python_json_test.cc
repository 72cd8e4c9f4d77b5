// Expected strings were produced by Python 3's json.dumps, not by loom.
#include "base/python_json.h"

#include <cmath>
#include <limits>

#include "gtest/gtest.h"

namespace loom::base {
namespace {

using Json = nlohmann::ordered_json;

Json Sample() {
  Json m = Json::object();
  m["train_runtime"] = 3725.4567;
  m["train_samples_per_second"] = 12.345;
  m["total_flos"] = 3.5 * (1 << 30);
  m["train_loss"] = 0.693147;
  m["epoch"] = 3.0;
  m["train_mem_cpu_alloc_delta"] = 5 * (1 << 20) + 7;
  m["step"] = 10;
  m["x"] = 1e-05;
  m["y"] = 1e16;
  m["z"] = 123456789.125;
  m["w"] = std::numeric_limits<double>::quiet_NaN();
  return m;
}

TEST(PyJsonDumpsTest, MatchesPythonJsonDumpsWithSortedKeys) {
  EXPECT_EQ(PyJsonDumps(Sample(), 4, true),
            "{\n    \"epoch\": 3.0,\n    \"step\": 10,\n    \"total_flos\": 3758096384.0,\n    "
            "\"train_loss\": 0.693147,\n    \"train_mem_cpu_alloc_delta\": 5242887,\n    "
            "\"train_runtime\": 3725.4567,\n    \"train_samples_per_second\": 12.345,\n    "
            "\"w\": NaN,\n    \"x\": 1e-05,\n    \"y\": 1e+16,\n    \"z\": 123456789.125\n}");
}

TEST(PyJsonDumpsTest, NestedContainersNullBoolAndNonAscii) {
  Json m = Json::object();
  m["e"] = true;
  m["d"] = nullptr;
  m["c"] = Json::array({1, 2.5, "s\u00e9"});
  m["b"] = Json::object();
  m["a"] = Json::array();
  EXPECT_EQ(PyJsonDumps(m, 2, true),
            "{\n  \"a\": [],\n  \"b\": {},\n  \"c\": [\n    1,\n    2.5,\n    \"s\\u00e9\"\n  "
            "],\n  \"d\": null,\n  \"e\": true\n}");
}

TEST(PyJsonDumpsTest, NoIndentUsesPythonSeparators) {
  Json m = Json::object();
  m["b"] = 1.5;
  m["a"] = Json::array({1, -std::numeric_limits<double>::infinity()});
  EXPECT_EQ(PyJsonDumps(m, -1, false), "{\"b\": 1.5, \"a\": [1, -Infinity]}");
  EXPECT_EQ(PyJsonFloatRepr(1e-05), "1e-05");
}

TEST(ParsePythonJsonTest, ReadsWhatJsonDumpsWrites) {
  Json m = Json::object();
  m["nan"] = std::numeric_limits<double>::quiet_NaN();
  m["inf"] = std::numeric_limits<double>::infinity();
  m["list"] = Json::array({-std::numeric_limits<double>::infinity(), 1.5, "NaN in a string"});
  m["s"] = "Infinity \"quoted\" NaN";
  const std::string text = PyJsonDumps(m, 2, false);
  absl::StatusOr<Json> back = ParsePythonJson(text);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(std::isnan((*back)["nan"].get<double>()));
  EXPECT_EQ((*back)["inf"].get<double>(), std::numeric_limits<double>::infinity());
  EXPECT_EQ((*back)["list"][0].get<double>(), -std::numeric_limits<double>::infinity());
  EXPECT_EQ((*back)["list"][2], "NaN in a string");
  EXPECT_EQ((*back)["s"], "Infinity \"quoted\" NaN");
  EXPECT_EQ(PyJsonDumps(*back, 2, false), text);
  EXPECT_FALSE(ParsePythonJson("{\"a\": Nan}").ok());
  EXPECT_FALSE(ParsePythonJson("{\"a\": 1,}").ok());
  EXPECT_FALSE(ParsePythonJson("").ok());
}

// Found with //tests/fuzz:python_json_fuzzer's harness: the tokens used to be replaced by marker
// strings, so a document's own string "\u0001loom:NaN" read as NaN, and NaN as an object key
// was accepted (Python's json.loads refuses it).
TEST(ParsePythonJsonTest, TokensNeverChangeStandardJson) {
  absl::StatusOr<Json> marker = ParsePythonJson(R"({"s": "\u0001loom:NaN", "n": [0E-0, 0E+0]})");
  ASSERT_TRUE(marker.ok()) << marker.status();
  EXPECT_EQ((*marker)["s"], "\x01loom:NaN");
  EXPECT_EQ((*marker)["n"][0].get<double>(), 0.0);  // the literals that stand for the tokens
  EXPECT_EQ((*marker)["n"][1].get<double>(), 0.0);  // elsewhere keep their own values
  absl::StatusOr<Json> both = ParsePythonJson("[0E-0, NaN, Infinity, -Infinity, 0E+00]");
  ASSERT_TRUE(both.ok()) << both.status();
  EXPECT_EQ((*both)[0].get<double>(), 0.0);
  EXPECT_TRUE(std::isnan((*both)[1].get<double>()));
  EXPECT_EQ((*both)[2].get<double>(), std::numeric_limits<double>::infinity());
  EXPECT_EQ((*both)[3].get<double>(), -std::numeric_limits<double>::infinity());
  EXPECT_EQ((*both)[4].get<double>(), 0.0);
  EXPECT_FALSE(ParsePythonJson("{NaN: 1}").ok());
  EXPECT_FALSE(ParsePythonJson("[1NaN]").ok());
  EXPECT_FALSE(ParsePythonJson("[NaN1]").ok());
  EXPECT_FALSE(ParsePythonJson("[-NaN]").ok());
}

}  // namespace
}  // namespace loom::base

namespace loom::base {
namespace {

// Deep nesting is refused before anything recurses over it; 512 levels still read.
TEST(ParsePythonJsonTest, RefusesNestingDeeperThanTheLimit) {
  const std::string ok =
      std::string(kMaxPythonJsonDepth, '[') + std::string(kMaxPythonJsonDepth, ']');
  EXPECT_TRUE(ParsePythonJson(ok).ok());
  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  absl::StatusOr<nlohmann::ordered_json> parsed = ParsePythonJson(deep);
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.status().message().find("nested deeper than 512"), std::string::npos);
  // Brackets inside strings do not count.
  EXPECT_TRUE(ParsePythonJson("\"" + std::string(1000, '[') + "\"").ok());
}

}  // namespace
}  // namespace loom::base
