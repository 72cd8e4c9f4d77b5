#include "args/argv_secrets.h"

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace loom::args {
namespace {

TEST(HideSecretArgsTest, BlanksTokenValuesInPlace) {
  std::vector<std::string> storage = {"prog",          "--hub_token",    "hf_abc",
                                      "--output_dir",  "out",            "--push_to_hub_token=hf_x",
                                      "--token",       "hf_model",       "--hub_model_id",
                                      "me/model",      "--my_api_token", "t",
                                      "--hub-token",   "hf_dash"};
  std::vector<char*> argv;
  for (auto& s : storage) argv.push_back(s.data());
  EXPECT_EQ(HideSecretArgs(static_cast<int>(argv.size()), argv.data()), 5);
  EXPECT_STREQ(argv[2], "******");
  EXPECT_STREQ(argv[4], "out");
  EXPECT_STREQ(argv[5], "--push_to_hub_token=****");
  EXPECT_STREQ(argv[7], "********");
  EXPECT_STREQ(argv[9], "me/model");
  EXPECT_STREQ(argv[11], "*");
  EXPECT_STREQ(argv[13], "*******");  // the parser's dashed spelling too
  // A trailing flag without a value is left alone.
  std::string flag = "--hub_token";
  char* tail[] = {storage[0].data(), flag.data()};
  EXPECT_EQ(HideSecretArgs(2, tail), 0);
}

}  // namespace
}  // namespace loom::args
