// SetSeed(42) must make LibTorch's CPU samplers produce what Python's torch.manual_seed(42)
// gives. testdata/manual_seed_42.txt was produced by make_manual_seed_golden.py with Debian's
// /usr/bin/python3 (torch 1.13); python_interop_test also checks this live.
#include <cstdlib>
#include <set>
#include <string>

#include "base/file_util.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rng/host_generator.h"
#include "rng/seed.h"
#include "tests/rng/reference_draws.h"

namespace loom::rng::testing {
namespace {

std::string RunfilePath(const std::string& rel) {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* workspace = std::getenv("TEST_WORKSPACE");
  if (srcdir == nullptr || workspace == nullptr) return rel;
  return std::string(srcdir) + "/" + workspace + "/" + rel;
}

TEST(ManualSeedGoldenTest, SetSeed42MatchesPythonTorchManualSeed42) {
  ASSERT_OK_AND_ASSIGN(const std::string text,
                       base::ReadFile(RunfilePath("tests/rng/testdata/manual_seed_42.txt")));
  ASSERT_OK_AND_ASSIGN(const DrawList golden, ParseDraws(text));
  std::set<std::string> seen;
  GeneratorSet host;
  for (const auto& [name, expected] : golden) {
    ASSERT_OK(SetSeed(42, &host));
    ASSERT_OK_AND_ASSIGN(const std::vector<double> actual, DrawReference(name));
    EXPECT_EQ(actual, expected) << name << ": got " << FormatDraws({{name, actual}});
    seen.insert(name);
  }
  const std::vector<std::string> names = ReferenceDrawNames();
  EXPECT_EQ(seen, std::set<std::string>(names.begin(), names.end()))
      << "the golden file and the recipe disagree; rerun make_manual_seed_golden.py";
}

TEST(ManualSeedGoldenTest, OtherSeedsDoNotMatch) {
  ASSERT_OK_AND_ASSIGN(const std::string text,
                       base::ReadFile(RunfilePath("tests/rng/testdata/manual_seed_42.txt")));
  ASSERT_OK_AND_ASSIGN(const DrawList golden, ParseDraws(text));
  ASSERT_FALSE(golden.empty());
  ASSERT_OK(SetSeed(43, nullptr));
  ASSERT_OK_AND_ASSIGN(const std::vector<double> actual, DrawReference(golden[0].first));
  EXPECT_NE(actual, golden[0].second);
}

}  // namespace
}  // namespace loom::rng::testing
