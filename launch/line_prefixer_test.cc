#include "launch/line_prefixer.h"

#include "gtest/gtest.h"

namespace loom::launch {
namespace {

TEST(LinePrefixerTest, PrefixesWholeLinesAndKeepsPartialLines) {
  LinePrefixer p("[rank 3]:");
  EXPECT_EQ(p.Append("hel"), "");
  EXPECT_EQ(p.Append("lo\nwor"), "[rank 3]:hello\n");
  EXPECT_EQ(p.Append("ld\n\nx"), "[rank 3]:world\n[rank 3]:\n");
  EXPECT_EQ(p.Finish(), "[rank 3]:x\n");
  EXPECT_EQ(p.Finish(), "");
}

TEST(LinePrefixerTest, FinishWithoutPartialLineIsEmpty) {
  LinePrefixer p("[rank 0]:");
  EXPECT_EQ(p.Append("a\n"), "[rank 0]:a\n");
  EXPECT_EQ(p.Finish(), "");
}

TEST(LinePrefixerTest, OverlongPartialLineIsSplit) {
  LinePrefixer p("p:", /*max_line_bytes=*/4);
  EXPECT_EQ(p.Append("abcdefghij"), "p:abcd\np:efgh\n");
  EXPECT_EQ(p.Append("\n"), "p:ij\n");
}

}  // namespace
}  // namespace loom::launch
