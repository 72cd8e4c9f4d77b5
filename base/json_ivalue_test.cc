#include "base/json_ivalue.h"

#include "gtest/gtest.h"

namespace loom::base {
namespace {

TEST(JsonToIValueTest, EveryJsonTypeInDocumentOrder) {
  const auto j =
      nlohmann::ordered_json::parse(R"({"z": 1, "a": [2.5, "s", true, null], "m": {"k": -3}})");
  const c10::IValue v = JsonToIValue(j);
  ASSERT_TRUE(v.isGenericDict());
  const auto d = v.toGenericDict();
  std::vector<std::string> keys;
  for (const auto& e : d) keys.push_back(e.key().toStringRef());
  EXPECT_EQ(keys, (std::vector<std::string>{"z", "a", "m"}));
  EXPECT_EQ(d.at("z").toInt(), 1);
  const auto& a = d.at("a").toListRef();
  ASSERT_EQ(a.size(), 4u);
  EXPECT_DOUBLE_EQ(a[0].toDouble(), 2.5);
  EXPECT_EQ(a[1].toStringRef(), "s");
  EXPECT_TRUE(a[2].toBool());
  EXPECT_TRUE(a[3].isNone());
  EXPECT_EQ(d.at("m").toGenericDict().at("k").toInt(), -3);
}

}  // namespace
}  // namespace loom::base
