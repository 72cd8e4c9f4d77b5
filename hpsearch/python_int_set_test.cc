#include "hpsearch/python_int_set.h"

#include <cstdint>
#include <numeric>
#include <set>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

// Goldens: CPython 3.11 (Debian's /usr/bin/python3),
//   list(set(range(n)) - set(visited) - set(running))
// with visited = every id but the listed ones.
namespace loom::hpsearch {
namespace {

using ::testing::ElementsAre;

std::vector<int64_t> Unvisited(int64_t n, const std::set<int64_t>& left,
                               const std::vector<int64_t>& running) {
  std::vector<int64_t> visited;
  for (int64_t i = 0; i < n; ++i) {
    if (left.count(i) == 0) visited.push_back(i);
  }
  PythonIntSet u = PythonIntSet::Range(n).Minus(PythonIntSet::Of(visited));
  u = u.Minus(PythonIntSet::Of(running));
  return u.Items();
}

TEST(PythonIntSetTest, DifferenceIteratesInCPythonsSlotOrder) {
  EXPECT_THAT(Unvisited(39, {13, 19}, {25, 28, 36}), ElementsAre(19, 13));
  EXPECT_THAT(Unvisited(86, {2, 3, 28, 45, 73, 74, 78, 84}, {22, 46}),
              ElementsAre(2, 3, 73, 74, 45, 78, 84, 28));
  EXPECT_THAT(Unvisited(108, {19, 32, 79, 93}, {38, 74}), ElementsAre(32, 19, 93, 79));
  EXPECT_THAT(Unvisited(67, {35, 39, 65}, {13, 47, 56}), ElementsAre(65, 35, 39));
}

TEST(PythonIntSetTest, CopyAndDiscardKeepsSlots) {
  // set(range(20)) - set([2, 5, 7, 9, 11, 13, 15, 17]) takes CPython's copy-and-discard path.
  PythonIntSet u = PythonIntSet::Range(20).Minus(PythonIntSet::Of({2, 5, 7, 9, 11, 13, 15, 17}));
  EXPECT_THAT(u.Items(), ElementsAre(0, 1, 3, 4, 6, 8, 10, 12, 14, 16, 18, 19));
  EXPECT_EQ(u.size(), 12u);
  EXPECT_TRUE(u.Contains(19));
  EXPECT_FALSE(u.Contains(2));
}

TEST(PythonIntSetTest, RangeAndDuplicates) {
  std::vector<int64_t> expected(30);
  std::iota(expected.begin(), expected.end(), 0);
  EXPECT_EQ(PythonIntSet::Range(30).Items(), expected);
  PythonIntSet s = PythonIntSet::Of({3, 3, 1, 3});
  EXPECT_EQ(s.size(), 2u);
  EXPECT_THAT(PythonIntSet::Range(9).Minus(PythonIntSet::Range(9)).Items(), ElementsAre());
}

}  // namespace
}  // namespace loom::hpsearch
