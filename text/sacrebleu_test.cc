#include "text/sacrebleu.h"

#include <cmath>

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::text {
namespace {

using ::loom::base::testing::IsOkAndHolds;
using ::loom::base::testing::StatusIs;
using ::testing::HasSubstr;

TEST(Tokenize13aTest, SplitsPunctuationAsMteval13a) {
  EXPECT_THAT(Tokenize13a("Hello, world!"), IsOkAndHolds("Hello , world !"));
  EXPECT_THAT(Tokenize13a("3.14 and 1,000"), IsOkAndHolds("3.14 and 1,000"));  // digits keep
  EXPECT_THAT(Tokenize13a("end."), IsOkAndHolds("end ."));
  EXPECT_THAT(Tokenize13a("a-b"), IsOkAndHolds("a-b"));   // a dash after a letter stays
  EXPECT_THAT(Tokenize13a("1-2"), IsOkAndHolds("1 - 2"));  // after a digit it splits
  EXPECT_THAT(Tokenize13a("&quot;hi&quot; &amp; co"), IsOkAndHolds("\" hi \" & co"));
  EXPECT_THAT(Tokenize13a("don't x/y"), IsOkAndHolds("don't x / y"));
  EXPECT_THAT(Tokenize13a("tab\there  "), IsOkAndHolds("tab here"));
  EXPECT_THAT(Tokenize13a("ünï,cöde."), IsOkAndHolds("ünï , cöde ."));
}

double Bleu(std::vector<std::string> hyps, std::vector<std::vector<std::string>> refs) {
  absl::StatusOr<BleuScore> s = CorpusBleu(hyps, refs);
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? s->score : -1;
}

TEST(CorpusBleuTest, ClosedForms) {
  // Identical: every precision 100.
  EXPECT_NEAR(Bleu({"the cat sat on the mat"}, {{"the cat sat on the mat"}}), 100.0, 1e-9);
  // A 4-word prefix of a 6-word reference: precisions 100, brevity penalty exp(1 - 6/4).
  EXPECT_NEAR(Bleu({"the cat sat on"}, {{"the cat sat on the mat"}}), 100.0 * std::exp(-0.5),
              1e-9);
  // "a b c d" vs "a b x d": p1 = 3/4, p2 = 1/3, p3 and p4 have no match: exp smoothing gives
  // 100 / (2 * 2) and 100 / (4 * 1); the geometric mean is (75 * 100/3 * 25 * 25) ^ (1/4).
  EXPECT_NEAR(Bleu({"a b c d"}, {{"a b x d"}}), std::pow(75.0 * 100.0 / 3 * 25 * 25, 0.25), 1e-9);
  EXPECT_EQ(Bleu({"a b c d"}, {{"x y z w"}}), 0.0);
}

TEST(CorpusBleuTest, ClosestReferenceLengthPrefersTheShorterOnATie) {
  ASSERT_OK_AND_ASSIGN(BleuScore s, CorpusBleu({"a b c"}, {{"a b c d", "a b"}}));
  EXPECT_EQ(s.sys_len, 3);
  EXPECT_EQ(s.ref_len, 2);  // 2 and 4 are both 1 away
}

TEST(CorpusBleuTest, RejectsMismatchedInputs) {
  EXPECT_THAT(CorpusBleu({"a"}, {}), StatusIs(absl::StatusCode::kInvalidArgument,
                                              HasSubstr("1 predictions but 0 reference lists")));
  EXPECT_THAT(CorpusBleu({"a", "b"}, {{"a"}, {"b", "c"}}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("same number of references")));
}

}  // namespace
}  // namespace loom::text
