// The sweep on a small file: every point measured (positive rates), the best point is the one
// with the best harmonic mean, its section parses as JSON with the keys DeepSpeed reads, the raw
// loop measures too, nothing is left in the folder, and a missing folder is an error.
#include "aio/aio_bench.h"

#include <dirent.h>

#include <cstdlib>
#include <string>

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace loom::aio {
namespace {

using ::loom::base::testing::StatusIs;
using ::testing::HasSubstr;

std::string Tmp() { return std::getenv("TEST_TMPDIR"); }

int Entries(const std::string& folder) {
  int n = 0;
  DIR* d = ::opendir(folder.c_str());
  while (dirent* e = ::readdir(d)) n += std::string(e->d_name) != "." && std::string(e->d_name) != "..";
  ::closedir(d);
  return n;
}

TEST(AioBenchTest, SweepProposesTheBestSection) {
  const std::string folder = Tmp() + "/sweep";
  ASSERT_EQ(::system(("mkdir -p " + folder).c_str()), 0);
  SweepOptions o = SweepOptions().set_folder(folder).set_bytes(2 << 20);
  o.block_sizes = {65536, 1 << 20};
  o.queue_depths = {1, 8};
  o.thread_counts = {1, 2};
  o.repeats = 1;
  ASSERT_OK_AND_ASSIGN(SweepResult r, Sweep(o));
  ASSERT_EQ(r.points.size(), 8u);
  double best = 0;
  for (const SweepPoint& p : r.points) {
    EXPECT_GT(p.rates.read, 0);
    EXPECT_GT(p.rates.write, 0);
    best = std::max(best, 2 / (1 / p.rates.read + 1 / p.rates.write));
  }
  const Rates& chosen = r.Best().rates;
  EXPECT_DOUBLE_EQ(2 / (1 / chosen.read + 1 / chosen.write), best);
  const auto section = nlohmann::json::parse(r.BestAioSection());
  EXPECT_EQ(section["aio"]["block_size"], r.Best().options.block_size);
  EXPECT_EQ(section["aio"]["queue_depth"], r.Best().options.queue_depth);
  EXPECT_EQ(section["aio"]["thread_count"], r.Best().options.thread_count);
  EXPECT_EQ(section["aio"]["single_submit"], false);
  EXPECT_EQ(section["aio"]["overlap_events"], true);
  EXPECT_THAT(r.Table(), HasSubstr("block_size"));
  ASSERT_OK_AND_ASSIGN(Rates raw, RawDirectRates(folder, 2 << 20, 1 << 20, 1));
  EXPECT_GT(raw.read, 0);
  EXPECT_GT(raw.write, 0);
  EXPECT_EQ(Entries(folder), 0);
}

TEST(AioBenchTest, MissingFolder) {
  EXPECT_THAT(Sweep(SweepOptions().set_folder(Tmp() + "/absent")),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("absent")));
}

}  // namespace
}  // namespace loom::aio
