#include "logging/tfrecord.h"

#include <string>
#include <vector>

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::logging {
namespace {

using ::loom::base::testing::IsOkAndHolds;
using ::loom::base::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// Bytes computed independently with Debian's python3-crcmod and struct.pack.
TEST(TFRecordTest, EncodesExactBytes) {
  const std::string expected(
      "\x03\x00\x00\x00\x00\x00\x00\x00\xb0\x99\x49\x0e"
      "abc"
      "\x6e\x57\xf1\x21",
      19);
  EXPECT_EQ(EncodeTFRecord("abc"), expected);
}

TEST(TFRecordTest, RoundTripsSeveralRecords) {
  const std::string bytes =
      EncodeTFRecord("first") + EncodeTFRecord("") + EncodeTFRecord(std::string("\0\xff", 2));
  EXPECT_THAT(DecodeTFRecords(bytes),
              IsOkAndHolds(ElementsAre("first", "", std::string("\0\xff", 2))));
}

TEST(TFRecordTest, EmptyBufferHasNoRecords) {
  EXPECT_THAT(DecodeTFRecords(""), IsOkAndHolds(IsEmpty()));
}

TEST(TFRecordTest, AnyFlippedByteIsDataLoss) {
  const std::string good = EncodeTFRecord("x") + EncodeTFRecord("payload");
  for (size_t i = 0; i < good.size(); ++i) {
    std::string bad = good;
    bad[i] ^= 0x01;
    EXPECT_THAT(DecodeTFRecords(bad, "events.out"),
                StatusIs(absl::StatusCode::kDataLoss, HasSubstr("events.out")))
        << "flipped byte " << i;
  }
}

TEST(TFRecordTest, NamesWhichCrcFailed) {
  std::string bad = EncodeTFRecord("abc");
  bad[0] ^= 0x01;
  EXPECT_THAT(DecodeTFRecords(bad),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("record 0 at byte 0: length CRC")));
  bad = EncodeTFRecord("abc") + EncodeTFRecord("def");
  bad[19 + 12] ^= 0x01;
  EXPECT_THAT(DecodeTFRecords(bad),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("record 1 at byte 19: data CRC")));
}

TEST(TFRecordTest, TruncationIsDataLoss) {
  const std::string good = EncodeTFRecord("payload");
  for (size_t n = 1; n < good.size(); ++n) {
    EXPECT_THAT(DecodeTFRecords(good.substr(0, n)),
                StatusIs(absl::StatusCode::kDataLoss, HasSubstr("truncated")))
        << "kept " << n << " bytes";
  }
}

}  // namespace
}  // namespace loom::logging
