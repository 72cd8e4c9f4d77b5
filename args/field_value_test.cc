#include "args/field_value.h"

#include "gtest/gtest.h"

namespace loom::args {
namespace {

using json = nlohmann::ordered_json;

// Expected values follow HF's _convert_str_dict (transformers 4.38-4.41 training_args.py):
// value.lower() in ("true", "false"), value.isdigit() -> int, value.replace(".", "", 1).isdigit()
// -> float; dicts recurse, lists do not.
TEST(ConvertStrDictTest, ConvertsStringsLikeHf) {
  json d = json::parse(R"({
      "a": "True", "b": "false", "c": "007", "d": "1.5", "e": ".5", "f": "5.",
      "g": "auto", "h": "1e-5", "i": "-3", "j": "1.2.3", "k": "", "l": ["true", "1"],
      "m": {"n": "FALSE", "o": {"p": "42"}}, "q": 3, "r": null,
      "s": "123456789012345678901234567890"})");
  ConvertStrDict(&d);
  EXPECT_EQ(d, json::parse(R"({
      "a": true, "b": false, "c": 7, "d": 1.5, "e": 0.5, "f": 5.0,
      "g": "auto", "h": "1e-5", "i": "-3", "j": "1.2.3", "k": "", "l": ["true", "1"],
      "m": {"n": false, "o": {"p": 42}}, "q": 3, "r": null,
      "s": "123456789012345678901234567890"})"));
  EXPECT_TRUE(d["f"].is_number_float());
  EXPECT_TRUE(d["c"].is_number_integer());

  json not_a_dict = "true";
  ConvertStrDict(&not_a_dict);
  EXPECT_EQ(not_a_dict, "true");
}

}  // namespace
}  // namespace loom::args
